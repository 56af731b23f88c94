"""The skeleton library's core: skeleton files are checked, fills are read from answers, checked
against the task and put in, and every skeleton instance is an ordinary kernel file that compiles."""

from __future__ import annotations

import importlib.util
import re

import pytest

from kernel_agent.skeletons import (
    LIBRARY,
    SkeletonError,
    check_fills,
    fitting,
    instantiate,
    library,
    normalize_fills,
    parse_fills,
    parse_skeleton,
)
from kernel_agent.task import load_task
from sandbox import compile_source, parse_directives
from tests.paths import ROOT

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
SOFTPLUS = ROOT / "tasks" / "naive" / "softplus.yaml"
PORTS = ROOT / "tests" / "data" / "ports"


def write(tmp_path, text: str):
    path = tmp_path / "s.cu"
    path.write_text(text)
    return path


HEADER = ("// @skeleton name: s\n// @skeleton summary: x\n// @skeleton families: elementwise\n"
          "// @skeleton fits: x\n")


@pytest.mark.parametrize("text, words", [
    (HEADER + "// @skeleton slot N [dim]: n\n// @kagent entry: k\n", "slot N is declared but never placed"),
    (HEADER + "// @kagent entry: k\n{{M}}\n", "placeholder {{M}} names no declared slot"),
    (HEADER + "// @skeleton slot v [body]: x\n// @kagent entry: k\n{{v}}\n", "names are UPPER_CASE"),
    (HEADER + "// @skeleton slot V [code]: x\n// @kagent entry: k\n{{V}}\n", "kind must be one of"),
    (HEADER + "// @skeleton slot V [body]: x\n// @kagent entry: k\nint a = {{V}};\n", "must stand alone on its line"),
    (HEADER.replace("// @skeleton fits: x\n", "") + "// @kagent entry: k\n", "no '// @skeleton fits:' line"),
    (HEADER + "// @skeleton slot V [expr]: x\n{{V}}\n", "no '// @kagent entry:'"),
    (HEADER + "// @skeleton indices: i <= N\n// @skeleton slot N [dim]: n\n// @kagent entry: k\n{{N}}\n",
     "'i <= N' is not 'argument < DIM_SLOT'"),
    (HEADER + "// @skeleton indices: i < V\n// @skeleton slot V [expr]: x\n// @kagent entry: k\n{{V}}\n",
     "V is not a dim slot of this skeleton"),
])
def test_a_malformed_skeleton_file_is_refused_with_its_reason(tmp_path, text, words):
    with pytest.raises(SkeletonError, match=re.escape(words)):
        parse_skeleton(write(tmp_path, text))


def test_every_skeleton_of_the_library_parses_and_is_listed_in_the_readme():
    skeletons = library()
    assert skeletons, "the library is empty"
    readme = (LIBRARY / "README.md").read_text()
    for name, skeleton in skeletons.items():
        assert skeleton.path.name == f"{name}.cu"
        assert f"| `{name}` |" in readme, f"{name} missing from the README table"


def test_fills_are_read_from_blocks_and_name_lines():
    skeleton = library()["elementwise"]
    answer = ("Here are the slots.\nN: n\n- `OUT`: `y`\n```cuda VALUE\nreturn x[i] * 2.f;\n```\n"
              "```cuda\n// a helper nobody asked for\n```\n")
    fills = parse_fills(answer, skeleton)
    assert fills.values == {"N": "n", "OUT": "y", "VALUE": "return x[i] * 2.f;"}
    assert fills.ignored == ["cuda"]


def test_fills_are_read_the_ways_a_small_model_writes_them():
    """Answers recorded from Qwen2.5-Coder-1.5B: every slot in one block under its name, blocks named
    by the line before them, a pointer declaration for an expression slot."""
    axis = library()["axis_reduce"]
    one_block = "```OUTER\nB\n\nR\nN\n\nINNER\nD\n\nIN\nconst float* x\n\nIDENTITY\n0.f\n\nCOMBINE\n" \
                "return acc + v;\n\nFINALIZE\ny[o * D + c] = acc / N;\n```"
    assert parse_fills(one_block, axis).values == {
        "OUTER": "B", "R": "N", "INNER": "D", "IN": "x", "IDENTITY": "0.f", "COMBINE": "return acc + v;",
        "FINALIZE": "y[o * D + c] = acc / N;"}
    labelled = "**OUTER**\n```\nB\n```\n\nCOMBINE:\n```cuda\nreturn acc + v;\n```\n### IN\n```\nconst float *__restrict__ x;\n```"
    assert parse_fills(labelled, axis).values == {"OUTER": "B", "COMBINE": "return acc + v;", "IN": "x"}
    rowwise = library()["rowwise"]  # a fill that is itself a slot's name is still a fill
    assert parse_fills("```ROWS\nCOLS\n```", rowwise).values == {"ROWS": "COLS"}


def test_fills_that_do_not_fit_are_explained():
    skeleton, task = library()["elementwise"], load_task(SOFTPLUS)
    problems = check_fills(skeleton, task, {"N": "n / 2", "OUT": "y; z", "LOAD": "x[i]"})
    assert any("no slot LOAD" in p for p in problems)
    assert any("slot N is an expression over the task's dims (n)" in p for p in problems)
    assert any("slot OUT is one C expression, without `;`" in p for p in problems)
    assert any(p.startswith("slot VALUE is missing:") for p in problems)
    assert "not a dim of the task" in check_fills(skeleton, task, {"N": "rows", "OUT": "y", "VALUE": "0"})[0]
    assert "at least 1 at every size" in check_fills(skeleton, task, {"N": "n - 1", "OUT": "y", "VALUE": "0"})[0]


def test_a_lone_expression_or_a_whole_function_is_a_body():
    skeleton, task = library()["elementwise"], load_task(SOFTPLUS)
    one = instantiate(skeleton, task, {"N": "n", "OUT": "y", "VALUE": "x[i] * 2.f"}).source
    assert "return x[i] * 2.f;" in one
    whole = instantiate(skeleton, task, {"N": "n", "OUT": "y", "VALUE": (
        "__device__ float value(const float* x, float* y, int n, long long i) {\n    return x[i] * 3.f;\n}")}).source
    assert "return x[i] * 3.f;" in whole and "float value(" not in whole


def test_an_expression_written_as_a_return_statement_is_the_expression():
    skeleton, task = library()["elementwise"], load_task(SOFTPLUS)
    assert normalize_fills(skeleton, {"N": "n", "OUT": "return y;"})["OUT"] == "y"
    assert not check_fills(skeleton, task, {"N": "n", "OUT": "return y;", "VALUE": "return x[i];"})
    assert check_fills(skeleton, task, {"N": "n", "OUT": "return y; return x;", "VALUE": "return x[i];"})


def test_an_instance_is_a_kernel_file_with_the_tasks_signature_and_knows_where_each_fill_is():
    skeleton, task = library()["elementwise"], load_task(SOFTPLUS)
    fills = parse_fills((PORTS / "softplus.md").read_text(), skeleton).values
    instance = instantiate(skeleton, task, fills, header="ported: skeleton elementwise")
    assert instance.source.startswith("// ported: skeleton elementwise\n")
    directives = parse_directives(instance.source)
    assert directives.entries[0].name == "kagent_elementwise" and directives.entries[0].grid[0].startswith("min(")
    assert "kagent_elementwise(const float* __restrict__ x, float* __restrict__ y, int n)" in instance.source
    lines = instance.source.splitlines()
    (start, end), = instance.spans["VALUE"]
    assert lines[start - 1].strip() == "const float v = x[i];" and "log1pf" in lines[end - 1]
    assert instance.slot_at(start) == "VALUE" and instance.slot_at(1) is None


def test_a_task_parameter_named_like_a_skeleton_macro_is_refused():
    skeleton, task = library()["elementwise"], load_task(SOFTPLUS)
    renamed = task.model_copy(update={"params": ["x", "y", "BLOCK"], "dims": {"BLOCK": 5}})
    with pytest.raises(SkeletonError, match="parameter BLOCK has the name of a macro"):
        instantiate(skeleton, renamed, {"N": "n", "OUT": "y", "VALUE": "0"})


def test_skeletons_fit_by_family():
    task = load_task(SOFTPLUS)
    assert [s.name for s in fitting(task)] == [s.name for s in library().values() if "elementwise" in s.families]
    anyone = fitting(task.model_copy(update={"family": None}))  # every skeleton its shapes do not rule out
    # every skeleton but axis_reduce (the shapes) and row_scan (softplus is no scan)
    assert sorted(s.name for s in anyone) == sorted(set(library()) - {"axis_reduce", "row_scan"})
    assert anyone[0].name == "elementwise"


def test_reductions_fit_only_outputs_they_can_write():
    """A small model sent a third of kl_div_loss's port answers to axis_reduce (seventh round), whose one
    value per kept position cannot be a scalar loss, and argmin_dim's to full_reduce, which writes a
    scalar or maps every input element: the shapes rule those pairs out, and keep the fitting ones."""
    from kernel_agent.skeletons.derive import derive
    from kernel_agent.task import discover

    tasks = {path.stem: load_task(path) for path in discover(ROOT / "tasks")}
    axis, full = library()["axis_reduce"], library()["full_reduce"]
    assert "one value" in derive(axis, tasks["kl_div_loss"]).misfit  # loss: a scalar
    assert "input's shape" in derive(axis, tasks["frobenius_norm"]).misfit  # y: x / norm, every element
    for name in ("argmin_dim", "mean_dim"):  # an output of the input's shape less one axis
        assert "neither one value nor of the input's shape" in derive(full, tasks[name]).misfit
    for name in ("argmin_dim", "mean_dim"):
        assert not derive(axis, tasks[name]).misfit
    for name in ("kl_div_loss", "frobenius_norm", "full_sum"):
        assert not derive(full, tasks[name]).misfit


def test_a_scan_does_not_fit_a_task_whose_output_has_no_inputs_shape():
    """matvec (y of M values from a of M x K) is of the reduction family, like row_scan; a small model
    sent half its port samples there (sixth round) and none could be right: a scan writes a value per
    input value. The shapes rule row_scan out; a task with an output of its input's shape keeps it."""
    from kernel_agent.skeletons.derive import derive
    from kernel_agent.task import discover

    tasks = {path.stem: load_task(path) for path in discover(ROOT / "tasks")}
    scan = library()["row_scan"]
    assert "no output has an input's shape" in derive(scan, tasks["matvec"]).misfit
    assert [s.name for s in fitting(tasks["matvec"])] == ["rowwise"]
    assert [s.name for s in fitting(tasks["row_argmax"])] == ["rowwise"]  # an int64 result a row
    assert derive(scan, tasks["masked_cumsum"]).misfit == ""
    assert fitting(tasks["masked_cumsum"])[0].name == "row_scan"


def test_a_scan_fits_only_a_task_that_scans():
    """log_softmax and group_norm have outputs of their input's shape, as a scan does, and the local
    model sent 13 of their 22 port answers of the eleventh round to row_scan: a running sum each, or a
    call of the slot's own function. row_scan `needs` a scan named in the task; the tasks that scan
    (by name, description or reference: np.cumsum, torch.cumsum) keep it, first."""
    from kernel_agent.skeletons import names_its_operation
    from kernel_agent.task import discover

    tasks = {path.stem: load_task(path) for path in discover(ROOT / "tasks")}
    scan = library()["row_scan"]
    assert scan.needs and "cumsum" in scan.needs
    for name in ("softmax", "log_softmax", "group_norm", "layernorm"):
        assert "row_scan" not in [s.name for s in fitting(tasks[name])], name
        assert "rowwise" in [s.name for s in fitting(tasks[name])], name
    for name in ("masked_cumsum", "prefix_scan"):
        assert fitting(tasks[name])[0].name == "row_scan", name
    renamed = tasks["softmax"].model_copy(update={"name": "softmax_then_cumsum"})
    assert names_its_operation(renamed, scan)  # the name alone is enough
    assert names_its_operation(tasks["softmax"], library()["rowwise"])  # a skeleton that needs nothing


def test_a_skeleton_needs_line_is_read(tmp_path):
    line = "// @skeleton needs: cumsum cumprod cummax cummin cumulative accumulate scan"
    text = library()["row_scan"].path.read_text().replace(line, "// @skeleton needs: Cumsum, scan")
    path = tmp_path / "scan.cu"
    path.write_text(text)
    assert parse_skeleton(path).needs == ("cumsum", "scan")
    path.write_text(text.replace("// @skeleton needs: Cumsum, scan\n", ""))
    assert parse_skeleton(path).needs == ()


def test_a_skeleton_indices_line_bounds_its_arguments_by_dim_slots():
    assert library()["matmul"].indices == (("p", "BATCH"), ("row", "M"), ("col", "N"))
    assert library()["rowwise"].indices == (("row", "ROWS"), ("col", "COLS"))
    assert library()["row_scan"].indices == ()  # its index is flat: no one dim bounds it


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")
@pytest.mark.parametrize("fixture", sorted(PORTS.glob("*.md")), ids=lambda p: p.stem)
def test_every_fixture_fill_compiles_into_its_task(fixture):
    """A hand-written fill for each naive-only task: the library covers it (run on the GPU by
    tests/gpu/test_ports.py)."""
    text = fixture.read_text()
    name = re.match(r"skeleton:\s*(\w+)", text).group(1)
    task_file = next((ROOT / "tasks").glob(f"*/{fixture.stem}.yaml"))
    skeleton, task = library()[name], load_task(task_file)
    instance = instantiate(skeleton, task, parse_fills(text, skeleton).values)
    entries = [e.name for e in parse_directives(instance.source).entries]
    result = compile_source(instance.source, entries, arch="sm_90")
    assert result.ok, result.log


def test_the_skeleton_a_hand_written_fill_uses_is_the_first_one_fitting_offers():
    """Porting asks for the likeliest skeleton first: for every fixture and example, the skeleton its
    author chose ranks first among those of the task's family."""
    from kernel_agent.skeletons import LIBRARY, fitting, named_skeleton
    from kernel_agent.task import discover, load_task

    tasks = {path.stem: path for path in discover(ROOT / "tasks")}
    fills = [*sorted((ROOT / "tests" / "data" / "ports").glob("*.md")), *sorted((LIBRARY / "examples").glob("*.md"))]
    assert len(fills) >= 20
    offered = {fill.stem: [s.name for s in fitting(load_task(tasks[fill.stem]))] for fill in fills}
    wrong = {stem: names for stem, names in offered.items()
             if names[0] != named_skeleton((fills[[f.stem for f in fills].index(stem)]).read_text())}
    assert not wrong
    assert any(len(names) > 1 for names in offered.values())  # a real choice was made somewhere


def test_an_answer_cut_off_while_repeating_itself_keeps_its_complete_fill():
    """Seen from Qwen2.5-Coder-1.5B: the same blocks over and over until max_tokens; the last block,
    cut off, must not replace the complete one before it."""
    skeleton = library()["elementwise"]
    block = "```N\nn\n```\n```OUT\ny\n```\n```VALUE\nconst float v = x[i];\nreturn v * 2.f;\n```\n"
    fills = parse_fills(block * 3 + "```VALUE\nconst float v = x[i];\nreturn v * ", skeleton)
    assert fills.values["VALUE"] == "const float v = x[i];\nreturn v * 2.f;"
    echoed = parse_fills(block + "Then the format again:\n```N\n...\n```\n", skeleton)  # the prompt's own `...`
    assert echoed.values["N"] == "n"

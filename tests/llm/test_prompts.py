"""The prompt templates: every one renders from a real task, strictly, and says what it must."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from kernel_agent.llm.porting import skeleton_view
from kernel_agent.llm.prompts import (
    PROMPTS_DIR,
    PromptError,
    render,
    required_variables,
    source_excerpts,
    task_context,
    template_names,
)
from kernel_agent.skeletons import library
from kernel_agent.task import load_task
from sandbox import BadValue, Mismatch, compile_source, parse_directives
from tests.paths import ROOT

ROWBLOCK = ROOT / "tasks" / "level1" / "layernorm" / "rowblock.cu"
SKELETON = skeleton_view(library()["elementwise"], load_task(ROOT / "tasks" / "naive" / "softplus.yaml"))
SPECIALISTS = ("launch", "memory", "compute", "reduction")
REPAIRS = ("compile_error", "resource_error", "launch_error", "runtime_error", "timeout", "wrong_result",
           "nondeterministic", "unparsed")
HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
needs_nvrtc = pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")

SIGNATURE = "(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols, float eps)"

# rowblock.cu line whose `;` the compile-error tests drop (NVRTC then reports the next statement).
BROKEN_LINE = "    const float mean = row_sum(s, red[0]) / (float)cols;"


@pytest.fixture(scope="module")
def source() -> str:
    return ROWBLOCK.read_text()


@pytest.fixture(scope="module")
def task(layernorm) -> dict:
    return task_context(layernorm)


@pytest.fixture(scope="module")
def search(task, source) -> dict:
    return dict(
        task=task, parent_source=source,
        parent_outcome="ok: 0.3120 ms at rows=16384, cols=4096 (BLOCK=256 VEC=4 ROWS_PER_BLOCK=1), 2.10x the baseline",
        roofline="memory-bound: 1720 GB/s of the 4300 GB/s measured copy bandwidth (40% of the ceiling)",
        best=[dict(rank=1, label="rowblock BLOCK=256 VEC=4 ROWS_PER_BLOCK=1", ms=0.312, speedup=2.1),
              dict(rank=2, label="baseline", ms=0.655, speedup=1.0)],
        rules=[dict(text="do not use BLOCK=1024 with VEC=1 in rowblock: resource_error in 2 of 2 tries", hits=3)],
        failures=['kernel.cu(12): error: identifier "foo" is undefined'],
        roofline_known=True, small=False, earlier=[], example=None,
    )


@pytest.fixture(scope="module")
def contexts(task, source, search) -> dict[str, dict]:
    log = ('kernel.cu(135): error: expected a ";"\n      float q = 0.f;\n      ^\n\n'
           '1 error detected in the compilation of "kernel.cu".')
    failing = dict(task=task, source=source, knobs={"BLOCK": "1024", "VEC": "4"}, small=False, short=False,
                   example=None, explain=False)
    mismatch = Mismatch(size="rows=3, cols=33", phase="check", output="y", max_abs_error=1.5,
                        max_rel_error=0.9, mismatch_fraction=0.03, first_bad_index=[2, 32], expected=0.25,
                        got=float("nan"))
    return {
        "system": dict(arch="sm_90"),
        "system_small": dict(arch="sm_90"),
        "system_port": dict(arch="sm_90"),
        "planner": search,
        **{f"specialist_{area}": dict(search, short=False) for area in SPECIALISTS},
        "repair_compile_error": dict(failing, source=source.replace(BROKEN_LINE, BROKEN_LINE[:-1]), log=log),
        "repair_resource_error": dict(failing, message="layernorm: block of 1024 threads, but with 80 registers "
                                      "per thread at most 768 fit", resources="layernorm: 80 registers, no spills"),
        "repair_launch_error": dict(failing, size="rows=1, cols=1", message="grid dimension 0 is 0",
                                    directives=["line 2: // @kagent grid: rows // ROWS_PER_BLOCK"],
                                    limit="a grid is at least 1 in every dimension"),
        "repair_runtime_error": dict(failing, size="rows=3, cols=33",
                                     message="CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address"),
        "repair_timeout": dict(failing, size="rows=7, cols=12289", message="no reply within 10 s"),
        "repair_wrong_result": dict(failing, message="wrong y at rows=3, cols=33", mismatch=mismatch,
                                    passed=["rows=1, cols=1"]),
        "repair_nondeterministic": dict(failing, size="rows=257, cols=1000",
                                        message="wrong y, different between two identical runs"),
        "repair_blind": dict(task=task, source=source),
        "write_kernel": dict(task=task),
        "repair_unparsed": dict(feedback="SEARCH/REPLACE block 1: its SEARCH text does not appear in the "
                                "parent kernel.", small=False, short=False),
        "port_unparsed": dict(feedback="no new answer: these fills are word for word ones you sent before.",
                              skeleton=SKELETON),
        "port": dict(task=task, naive=source, naive_renamed=False, skeleton=SKELETON,
                     earlier=["llm1 (port:elementwise): compile_error"],
                     example={"task": "gelu", "description": "GELU", "fills": "```N\nn\n```", "renamed": False}),
        "repair_port": dict(task=task, skeleton=SKELETON, fills={"VALUE": "x[i]"},
                            failure={"status": "compile_error", "message": "1 error", "log": log,
                                     "slots_to_fix": ["VALUE"], "launch": None, "mismatch": None,
                                     "undefined": ["q"],
                                     "scope": {"VALUE": {"arguments": ["i"], "params": ["x", "y", "n"]}}}),
    }


def test_the_port_prompts_show_contracts_and_the_fills_to_fix(contexts):
    text = render("port", **contexts["port"])
    assert "Skeleton `elementwise`" in text and "- `VALUE`, C statements" in text and "```N\nn\n```" in text
    assert "Fill every slot (VALUE)" in text and "kagent_elementwise" not in text
    assert "kagent fills these slots from the task's shapes (do not send them): OUT = `y`; N = `n`." in text
    repair = render("repair_port", **contexts["repair_port"])
    assert "The compiler's errors are in slot VALUE." in repair and "```VALUE\nx[i]\n```" in repair
    assert 'No variable named "q" exists there' in repair
    assert "In VALUE, write it with VALUE's arguments (i) and the task's parameters (x, y, n)." in repair
    assert "Send the corrected block for VALUE" in repair and "```VALUE\n...\n```" in repair


def test_the_template_list_is_complete():
    expected = {"system", "system_small", "system_port", "planner", "port", "port_unparsed", "repair_port", "repair_blind",
                "write_kernel", *(f"specialist_{a}" for a in SPECIALISTS),
                *(f"repair_{r}" for r in REPAIRS)}
    assert set(template_names()) == expected
    assert not any(name.startswith("_") for name in template_names())


def test_every_template_renders(contexts):
    assert set(contexts) == set(template_names())
    for name, context in contexts.items():
        text = render(name, **context)
        assert text.strip() and "{{" not in text and "{%" not in text, name
        assert set(context) == required_variables(name), f"{name}: every variable given is used, and needed"
        assert render(f"{name}.j2", **context) == text


def test_a_missing_variable_is_named(search):
    context = {k: v for k, v in search.items() if k != "roofline"}
    with pytest.raises(PromptError, match=r"planner\.j2.*roofline"):
        render("planner", **context)
    with pytest.raises(PromptError, match=r"system\.j2.*arch"):
        render("system")


def test_a_missing_field_of_a_variable_is_named(search):
    context = dict(search, rules=[{"text": "do not use BLOCK=2048"}], short=False)
    with pytest.raises(PromptError, match=r"specialist_memory\.j2.*hits"):
        render("specialist_memory", **context)


def test_an_unknown_template_or_a_shared_part_is_refused():
    with pytest.raises(PromptError, match="no prompt template"):
        render("nonsense")
    with pytest.raises(PromptError, match="shared part"):
        render("_context")


def test_system_prompt_states_the_rules_and_formats():
    text = render("system", arch="sm_90")
    for needle in ("NVRTC", "sm_90", "no `main`", "cuda_fp16.h", "cuda_bf16.h", "mma.h", "every size",
                   "not multiples of 32", "order", "outside the given buffers", "-D NAME=value"):
        assert needle in text, needle
    for macro in ("INFINITY", "NAN", "FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "INT_MAX", "INT_MIN", "M_PI"):
        assert macro in text
    for directive in ("// @kagent entry:", "// @kagent grid:", "// @kagent block:", "// @kagent smem:",
                      "// @kagent params:", "// @kagent knob NAME [launch|memory|compute|reduction]: v1 v2",
                      "// @kagent scratch", "// @kagent flags:"):
        assert directive in text, directive
    assert "```cuda" in text
    assert "<<<<<<< SEARCH\nexact lines from the parent\n=======\nreplacement lines\n>>>>>>> REPLACE" in text


def test_system_prompt_example_is_a_valid_kernel():
    text = render("system", arch="sm_90")
    example = re.search(r"```cuda\n(.*?)```", text, re.DOTALL).group(1)
    directives = parse_directives(example)
    assert [e.name for e in directives.entries] == ["scale"] and set(directives.knobs) == {"BLOCK", "ITEMS"}
    if HAS_NVRTC:
        result = compile_source(example, ["scale"], arch="sm_90")
        assert result.ok, result.log


def test_search_prompts_show_the_state(contexts, source):
    for name in ("planner", *(f"specialist_{a}" for a in SPECIALISTS)):
        text = render(name, **contexts[name])
        assert source.strip() in text
        assert f"`{SIGNATURE}`" in text
        assert "| 1 | rowblock BLOCK=256 VEC=4 ROWS_PER_BLOCK=1 | 0.3120 | 2.10x |" in text
        assert "do not use BLOCK=1024 with VEC=1 in rowblock" in text and "hit 3 times" in text
        assert 'identifier "foo" is undefined' in text
        assert "memory-bound" in text and "2.10x the baseline" in text
        assert "rows=3, cols=33" in text  # the check sizes
    assert "new kernel structure" in render("planner", **contexts["planner"])


def test_a_best_attempt_without_a_speedup_shows_a_dash(search):
    """A timing measured without the baseline beside it has no speedup: the table must still render."""
    text = render("planner", **dict(search, best=[dict(rank=1, label="baseline", ms=0.655, speedup=None)]))
    assert "| 1 | baseline | 0.6550 | - |" in text


FOCUS = {
    "launch": ("block and grid shape", "work per thread", "__launch_bounds__", "occupancy"),
    "memory": ("vector loads", "coalescing", "shared-memory tiling", "read-only loads", "bank conflicts"),
    "compute": ("#pragma unroll", "fast intrinsics", "fmaf", "instructions", "avoid divisions"),
    "reduction": ("shuffles", "tree", "atomics", "one pass and two passes"),
}


@pytest.mark.parametrize("area", SPECIALISTS)
def test_each_specialist_has_its_focus(area, search):
    text = render(f"specialist_{area}", **search, short=False)
    assert f"You are the {area} specialist" in text
    assert f"knobs tagged [{area}]" in text
    focus = re.search(r"^Your focus: (.*)$", text, re.MULTILINE).group(1)
    for needle in FOCUS[area]:
        assert needle in focus, needle
    others = [n for a, needles in FOCUS.items() if a != area for n in needles]
    assert not any(n in focus for n in others), "another specialist's focus leaked in"


def test_empty_search_state_renders(search):
    text = render("planner", **dict(search, best=[], rules=[], failures=[]))
    assert text.count("None yet.") == 2 and "None measured yet." in text


def test_repair_compile_error_shows_numbered_lines_around_the_error(contexts):
    context = contexts["repair_compile_error"]
    lines = context["source"].split("\n")
    text = render("repair_compile_error", **context)
    assert f">> 135 | {lines[134]}" in text
    for number in (132, 133, 134, 136, 137, 138):
        assert f"   {number} | {lines[number - 1]}" in text
    assert "131 |" not in text and "139 |" not in text
    assert "do not leave out a `;`" in text  # the distilled rule
    assert "BLOCK=1024, VEC=4" in text


@needs_nvrtc
def test_repair_compile_error_with_a_real_log(task, source):
    broken = source.replace(BROKEN_LINE, BROKEN_LINE[:-1])
    result = compile_source(broken, ["layernorm"], arch="sm_90")
    assert not result.ok
    text = render("repair_compile_error", task=task, source=broken, knobs={}, log=result.log, small=False,
                  short=False, example=None, explain=False)
    number = broken.split("\n").index("    float q = 0.f;") + 1  # NVRTC reports the line after the gap
    assert f">> {number} |     float q = 0.f;" in text
    assert f"   {number - 3} | {BROKEN_LINE[:-1]}" in text
    assert "default knob values" in text


def test_source_excerpts_merge_and_skip_header_lines():
    source = "\n".join(f"line{n}" for n in range(1, 21))
    log = ("kernel.cu(5): error: a\nkernel.cu(7): error: b\n__nv_nvrtc_builtin_header.h(4794): error: c\n"
           "kernel.cu(19): catastrophic error: d\nkernel.cu(99): error: out of range")
    first, second = source_excerpts(source, log, context=2)
    assert first.splitlines()[0] == "    3 | line3" and ">>  5 | line5" in first and ">>  7 | line7" in first
    assert first.splitlines()[-1] == "    9 | line9" and "^ error: b" in first
    assert ">> 19 | line19" in second and "20 | line20" in second and "line99" not in second
    assert source_excerpts(source, "no errors here") == []


@pytest.mark.parametrize("phase, words", [
    ("guard", "out-of-bounds write"), ("inputs", "input modified"), ("fresh", "fresh inputs"),
    ("check", "wrong values on the first check"),
])
def test_wrong_result_explains_the_phase(contexts, phase, words):
    context = contexts["repair_wrong_result"]
    mismatch = context["mismatch"].model_copy(update={"phase": phase})
    text = render("repair_wrong_result", **dict(context, mismatch=mismatch))
    assert f"- phase: {words}" in text
    assert "- size: rows=3, cols=33" in text and "max abs error: 1.5, max rel error: 0.9" in text
    assert "first wrong index: [2, 32]: expected 0.25, got nan" in text


def test_wrong_result_lists_the_first_wrong_elements_and_the_sizes_that_passed(contexts):
    context = contexts["repair_wrong_result"]
    mismatch = context["mismatch"].model_copy(update={"first_bad": [
        BadValue(index=[2, 32], expected=0.25, got=float("nan")), BadValue(index=[2, 33], expected=-1.5, got=0.0)]})
    text = render("repair_wrong_result", **dict(context, mismatch=mismatch))
    assert "- the first wrong elements (index: expected, got): [2, 32]: 0.25, nan; [2, 33]: -1.5, 0" in text
    assert "first wrong index" not in text and "- sizes that passed: rows=1, cols=1" in text


def test_a_port_repair_shows_a_wrong_result_as_the_kernel_repair_does(contexts):
    mismatch = contexts["repair_wrong_result"]["mismatch"].model_copy(update={"first_bad": [
        BadValue(index=[2, 32], expected=0.25, got=float("nan")), BadValue(index=[2, 33], expected=-1.5, got=0.0)]})
    failure = dict(contexts["repair_port"]["failure"], status="wrong_result", message="wrong y at rows=3, cols=33",
                   log="", slots_to_fix=[], undefined=[], scope={}, mismatch=mismatch.model_dump(),
                   passed=["rows=1, cols=1"])
    text = render("repair_port", **dict(contexts["repair_port"], failure=failure))
    assert "- the first wrong elements (index: expected, got): [2, 32]: 0.25, nan; [2, 33]: -1.5, 0" in text
    assert "- sizes that passed: rows=1, cols=1" in text and "- output: y" in text
    assert "Compare each slot with the NumPy reference" in text and "a corrected block for each slot" in text


def test_a_repair_prompt_in_explain_mode_asks_for_the_cause_in_words_only(contexts):
    for kind in REPAIRS[:-1]:
        text = render(f"repair_{kind}", **dict(contexts[f"repair_{kind}"], explain=True))
        assert "Explain why." in text and "Do not send code." in text and "<<<<<<< SEARCH" not in text, kind
        assert "Fix it" not in text and f"({kind})" in text, kind


def test_the_blind_repair_prompt_holds_the_kernel_and_no_evidence(contexts):
    text = render("repair_blind", **contexts["repair_blind"])
    assert contexts["repair_blind"]["source"].strip() in text and "whole corrected kernel file" in text
    assert "What went wrong" not in text and "Likely causes" not in text


def test_wrong_result_without_numbers(contexts):
    mismatch = Mismatch(size="rows=1, cols=1", phase="guard", output="y", detail="256 bytes after y changed")
    text = render("repair_wrong_result", **dict(contexts["repair_wrong_result"], mismatch=mismatch))
    assert "max abs error" not in text and "first wrong index" not in text
    assert "256 bytes after y changed" in text and "bound every store" in text


def test_repair_prompts_carry_the_failure(contexts):
    for kind in REPAIRS[:-1]:
        name = f"repair_{kind}"
        context = contexts[name]
        text = render(name, **context)
        assert context["source"].strip() in text, name
        assert "<<<<<<< SEARCH" in text and ">>>>>>> REPLACE" in text, name
        assert f"({kind})" in text and context.get("message", context.get("log"))[:20] in text, name
    assert "at size rows=7, cols=12289" in render("repair_timeout", **contexts["repair_timeout"])
    assert "80 registers, no spills" in render("repair_resource_error", **contexts["repair_resource_error"])


def test_repair_unparsed_passes_the_feedback_on(contexts):
    text = render("repair_unparsed", **contexts["repair_unparsed"])
    assert "its SEARCH text does not appear in the parent kernel." in text
    assert "<<<<<<< SEARCH" in text and "```cuda" in text and "cut off" in text
    assert len(text) < 1500  # the parent is already in the conversation


def test_a_port_answer_not_used_is_asked_again_for_slot_blocks_not_a_kernel(contexts):
    """The local model's port re-asks ended "Send one whole kernel file in one ```cuda block" (the small
    model's kernel re-ask) while its system prompt said never to write a kernel (thirteenth round)."""
    text = render("port_unparsed", **contexts["port_unparsed"])
    assert "word for word ones you sent before" in text
    assert "```VALUE" in text and "one fenced block per slot" in text
    assert "```cuda" not in text and "kernel file" not in text


def test_rules_may_be_plain_strings(search):
    text = render("planner", **dict(search, rules=["do not use VEC=4 in rowblock (hit 2 times)"]))
    assert "- do not use VEC=4 in rowblock (hit 2 times)\n" in text


def test_task_context(layernorm):
    context = task_context(layernorm)
    assert context["signature"] == SIGNATURE
    assert context["params"] == ["x", "gamma", "beta", "y", "rows", "cols", "eps"]
    assert context["dims"] == {"rows": 16384, "cols": 4096}
    assert "y: float32[rows, cols] output (atol 0.0001, rtol 0.0001)" in context["dtypes"]


def test_readme_lists_every_template_and_its_variables():
    readme = (PROMPTS_DIR / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)\.j2` \| (.*) \|$", readme, re.MULTILINE))
    for name in template_names():
        assert name in rows, f"{name} missing from prompts/README.md"
        row = rows[name]
        if same := re.match(r"same as `(\w+)\.j2`", row):
            assert required_variables(name) == required_variables(same.group(1)), name
            row = rows[same.group(1)]
        for variable in required_variables(name):
            assert f"`{variable}`" in row, f"{name}: {variable} not listed in prompts/README.md"
    assert Path(PROMPTS_DIR).is_dir()


def test_a_small_model_fixing_a_long_kernel_is_asked_for_the_functions_it_changes(contexts):
    text = render("repair_wrong_result", **dict(contexts["repair_wrong_result"], small=True, short=False))
    assert "Send only the functions you change, each one whole, in one ```cuda block" in text
    assert "<<<<<<< SEARCH" not in text
    again = render("repair_unparsed", **dict(contexts["repair_unparsed"], small=True, short=False))
    assert "Send only the functions you change" in again and "<<<<<<< SEARCH" not in again

"""The `rowwise` skeleton: its fills (the suite's expert variants re-expressed, and the fixtures of the
naive-only rowwise tasks) go into their tasks, launch at every size, and compile at a sample of knob
combinations that holds every value of every knob; its row partition (head, vectors, tail) and the
reduction's rule for threads without values are emulated here at every check size and misalignment."""

from __future__ import annotations

import importlib.util
import itertools
import re

import pytest

from kernel_agent.skeletons import instantiate, library, normalize_fills, parse_fills
from kernel_agent.task import load_task
from sandbox import compile_many, evaluate, parse_directives
from tests.paths import ROOT

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
EXAMPLES = ["softmax", "layernorm", "rmsnorm", "cross_entropy"]
FIXTURES = ["log_softmax", "matvec", "group_norm"]
# Alternatives of the examples, swept beside them on the GPU: softmax_online is the expert's ONLINE=1
# (one reduction of a running (max, sum) pair) where examples/softmax.md is its ONLINE=0.
ALTERNATIVES = {"softmax_online": "softmax"}


def fill_path(stem: str):
    if stem in ALTERNATIVES:
        return ROOT / "tests" / "skeletons" / "data" / f"{stem}.md"
    folder = ROOT / "kernel_agent" / "skeletons" / "examples" if stem in EXAMPLES else ROOT / "tests" / "data" / "ports"
    return folder / f"{stem}.md"


def build(stem: str):
    text = fill_path(stem).read_text()
    assert re.match(r"skeleton:\s*rowwise\b", text)
    skeleton = library()["rowwise"]
    task = load_task(next((ROOT / "tasks").glob(f"*/{ALTERNATIVES.get(stem, stem)}.yaml")))
    return task, instantiate(skeleton, task, parse_fills(text, skeleton).values)


def knob_sample(knobs) -> list[dict[str, str]]:
    """The defaults, then combinations that hold every value of every knob (value i of each knob, the
    shorter lists wrapping around), then the extremes of the launch shape."""
    values = {name: knob.values for name, knob in knobs.items()}
    names = list(values)
    width = max(len(v) for v in values.values())
    sample = [{n: values[n][i % len(values[n])] for n in names} for i in range(width)]
    sample.append({**sample[0], "BLOCK": "1024", "ROWS_PER_BLOCK": "4", "VEC": "2"})
    sample.append({**sample[0], "BLOCK": "128", "ROWS_PER_BLOCK": "4", "VEC": "4", "CACHE_COLS": "16384"})
    sample.append({**sample[0], "BLOCK": "1024", "ROWS_PER_BLOCK": "1", "VEC": "4", "CACHE_COLS": "16384"})
    return sample


def test_the_skeleton_has_its_slots():
    skeleton = library()["rowwise"]
    assert [s.name for s in skeleton.slots] == ["ROWS", "COLS", "IN_ROW", "PRE", "STATE", "ADD", "MERGE", "FINAL",
                                               "OUT_ROW", "MAP", "FINISH"]
    assert skeleton.required == ["ROWS", "COLS", "IN_ROW", "STATE", "ADD", "MERGE"]
    for slot in skeleton.slots:
        assert "e.g." in slot.contract, slot.name


@pytest.mark.parametrize("stem", EXAMPLES + FIXTURES + list(ALTERNATIVES))
def test_every_fill_launches_at_every_size(stem):
    task, instance = build(stem)
    directives = parse_directives(instance.source)
    assert [e.name for e in directives.entries] == ["kagent_rowwise"]
    knob_names = {name: knob.values for name, knob in directives.knobs.items()}
    assert set(knob_names) == {"BLOCK", "ROWS_PER_BLOCK", "VEC", "CACHE_COLS"}
    for dims in task.sizes:
        for rpb in knob_names["ROWS_PER_BLOCK"]:
            grid = evaluate(directives.entries[0].grid[0], {**dims, "ROWS_PER_BLOCK": int(rpb)})
            assert grid >= 1


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-python)")
def test_every_fill_compiles_at_a_sample_of_its_knobs():
    jobs, names = [], []
    for stem in EXAMPLES + FIXTURES + list(ALTERNATIVES):
        _, instance = build(stem)
        directives = parse_directives(instance.source)
        for knobs in knob_sample(directives.knobs):
            jobs.append({"source": instance.source, "entries": ["kagent_rowwise"], "knobs": knobs, "arch": "sm_90"})
            names.append((stem, knobs))
    results = compile_many(jobs)
    failed = [f"{stem} {knobs}: {r.log[:2000]}" for (stem, knobs), r in zip(names, results) if not r.ok]
    assert not failed, "\n".join(failed)
    spilled = [f"{stem} {knobs}: {res.spill_stores} B spilled" for (stem, knobs), r in zip(names, results)
               for res in r.resources if res.spill_stores]
    assert not spilled, "\n".join(spilled)


def partition(cols: int, misaligned: int, vec: int, tpr: int):
    """The skeleton's split of a row (its first value `misaligned` floats past a VEC-aligned address):
    the columns each thread of the row holds, as kagent_row computes them."""
    mis = misaligned % vec if vec > 1 else 0
    head = min(vec - mis, cols) if mis else 0
    nvec = (cols - head) // vec
    tail = cols - head - nvec * vec
    held: list[list[int]] = [[] for _ in range(tpr)]
    for t in range(tpr):
        if t < head:
            held[t].append(t)
        held[t] += [head + k * vec + j for k in range(t, nvec, tpr) for j in range(vec)]
        if t < tail:
            held[t].append(head + nvec * vec + t)
    return held, max(nvec, head, tail)


def butterfly(holds: list[bool], count: int) -> list[set[int]]:
    """kagent_row_reduce's first level on one warp (holds: which lanes hold values): the lanes each
    lane has merged, using the skeleton's rule that a group holds values when its first lane does."""
    got = [{lane} if holds[lane] else set() for lane in range(32)]
    o = 1
    while o < 32:
        new = []
        for lane in range(32):
            mine = (lane & ~(o - 1)) < count
            theirs = ((lane ^ o) & ~(o - 1)) < count
            assert mine == bool(got[lane]) and theirs == bool(got[lane ^ o])
            new.append(got[lane] | got[lane ^ o] if theirs else got[lane])
        got, o = new, o * 2
    return got


@pytest.mark.parametrize("vec", [1, 2, 4])
def test_the_row_partition_covers_each_column_once_and_valued_threads_come_first(vec):
    sizes = {1, 2, 3, 5, 33, 1000, 4097, 12289, 70001}
    for cols, misaligned, tpr in itertools.product(sizes, range(4), (32, 64, 256)):
        held, count = partition(cols, misaligned, vec, tpr)
        flat = sorted(c for cols_of in held for c in cols_of)
        assert flat == list(range(cols)), (cols, misaligned, vec, tpr)
        assert [bool(h) for h in held] == [t < count for t in range(tpr)]
        if tpr == 32:
            merged = butterfly([bool(h) for h in held], count)
            assert all(m == set(range(min(count, 32))) for m in merged)


def test_a_state_member_declared_through_the_object_is_declared_by_its_name():
    state = normalize_fills(library()["rowwise"], {"STATE": "float s.sum = 0.f;\nfloat s.m = -INFINITY; int n = 0;"})
    assert state["STATE"] == "float sum = 0.f;\nfloat m = -INFINITY; int n = 0;"


@pytest.mark.parametrize("fill", ["struct State {\n    float max;\n    float sum;\n};",
                                  "typedef struct { float max; float sum; } State;",
                                  "struct { float max; float sum; }"])
def test_state_members_given_as_a_whole_struct_are_taken_out_of_it(fill):
    """The local model's log_softmax and matvec answers declared the struct the skeleton declares; nested, its
    members left kg_state empty (a compile error: 'STATE: use 4-byte members')."""
    state = normalize_fills(library()["rowwise"], {"STATE": fill})["STATE"]
    assert "struct" not in state and "float max;" in state and "float sum;" in state


@pytest.mark.skipif(not HAS_NVRTC, reason="NVRTC (cuda-bindings) not installed")
def test_a_fill_may_name_the_state_type_and_call_std_math():
    """The contracts call the statistics struct `State` (`void merge(State& s, const State& o)`): the local
    model's group_norm port declared `State t = s;` ("identifier State is undefined"), and its log_softmax
    port called `std::fmax` (NVRTC has no <cmath>). Both compile now: `State` names the skeleton's struct
    and std:: float math is read as CUDA's."""
    task, instance = build("softmax")
    skeleton = library()["rowwise"]
    fills = parse_fills(fill_path("softmax").read_text(), skeleton).values
    fills["MERGE"] = "State t = s;\nt.sum = std::fmax(s.sum, o.sum);\n" + fills["MERGE"]
    assert "fmaxf(s.sum, o.sum)" in normalize_fills(skeleton, fills)["MERGE"]
    source = instantiate(skeleton, task, fills).source
    (result,) = compile_many([{"source": source, "entries": ["kagent_rowwise"], "knobs": {}, "arch": "sm_90"}])
    assert result.ok, result.log[:2000]
    assert instance.source != source


@pytest.mark.skipif(not HAS_NVRTC, reason="NVRTC (cuda-bindings) not installed")
def test_an_expression_led_by_its_type_and_members_without_semicolons_compile():
    """The local model's tenth round: IDENTITY filled `float: 1.f` or `float 1.f` (the type its contract opens
    with; 5 compile errors, "expected a )"), and group_norm's STATE `float mean, float rstd` without `;`."""
    group_norm = load_task(ROOT / "tasks" / "naive" / "group_norm.yaml")
    rowwise = library()["rowwise"]
    fills = parse_fills(fill_path("group_norm").read_text(), rowwise).values
    fills["STATE"] = "float sum, float sq"
    assert normalize_fills(rowwise, fills)["STATE"] == "float sum; float sq;"
    assert normalize_fills(rowwise, {"STATE": "float m, float s; // stats\nint n"})["STATE"] == \
        "float m; float s; // stats\nint n;"
    cumsum = load_task(ROOT / "tasks" / "naive" / "masked_cumsum.yaml")
    row_scan = library()["row_scan"]
    scan = parse_fills((ROOT / "tests" / "data" / "ports" / "masked_cumsum.md").read_text(), row_scan).values
    assert [normalize_fills(row_scan, {**scan, "IDENTITY": typed})["IDENTITY"]
            for typed in ("float: 0.f", "float 0.f", "(float)0")] == ["0.f", "0.f", "(float)0"]
    sources = [instantiate(rowwise, group_norm, fills).source,
               instantiate(row_scan, cumsum, {**scan, "IDENTITY": "float: 0.f"}).source]
    results = compile_many([{"source": s, "entries": [entry], "knobs": {}, "arch": "sm_90"}
                            for s, entry in zip(sources, ["kagent_rowwise", "kagent_row_scan"])])
    assert all(r.ok for r in results), [r.log[:1000] for r in results]

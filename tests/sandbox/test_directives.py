import pytest

from sandbox import DirectiveError, parse_directives, plan
from sandbox.launch import LaunchPlanError

TWO_PASS = """
// @kagent entry: partial
// @kagent grid: ceil_div(n, BLOCK), 2
// @kagent block: BLOCK
// @kagent smem: BLOCK * 4
// @kagent params: x, partials, n
// @kagent entry: finish
// @kagent grid: 1
// @kagent block: 32
// @kagent params: partials, y, n, scale
// @kagent knob BLOCK [launch]: 256 128 1024
// @kagent knob VEC [memory]: 4 1
// @kagent scratch partials: ceil_div(n, BLOCK) float32 zeroed
extern "C" __global__ void partial(const float* x, float* partials, int n) {}
extern "C" __global__ void finish(const float* partials, float* y, int n, float scale) {}
"""


def test_entries_knobs_scratch():
    d = parse_directives(TWO_PASS)
    assert [e.name for e in d.entries] == ["partial", "finish"]
    assert d.entries[0].grid == ["ceil_div(n, BLOCK)", "2"] and d.entries[0].smem == "BLOCK * 4"
    assert d.knobs["BLOCK"].specialist == "launch" and d.knobs["BLOCK"].default == "256"
    assert d.scratch["partials"].count == "ceil_div(n, BLOCK)" and d.scratch["partials"].zeroed
    assert d.resolve_knobs({"VEC": "1"}) == {"BLOCK": "256", "VEC": "1"}


def test_plan_resolves_each_entry():
    d = parse_directives(TWO_PASS)
    launches, scratch = plan(d, {"BLOCK": "128", "VEC": "4"}, {"n": 1000}, ["x", "y", "n"],
                             {"scale": ("float32", 0.5)}, {"x", "y"})
    assert launches[0].grid == (8, 2, 1) and launches[0].block == (128, 1, 1) and launches[0].smem == 512
    assert [a.buffer for a in launches[0].args[:2]] == ["x", "partials"]
    assert launches[0].args[2].value == 1000 and launches[0].args[2].dtype == "int32"
    assert launches[1].args[3].dtype == "float32" and launches[1].args[3].value == 0.5
    assert scratch[0].shape == [8] and scratch[0].zeroed


@pytest.mark.parametrize("knobs, message", [
    ({"BLOCK": "512"}, "not one of its values: 256 128 1024"),
    ({"WARPS": "2"}, "unknown knob 'WARPS'"),
])
def test_knob_outside_its_list(knobs, message):
    with pytest.raises(DirectiveError, match=message):
        parse_directives(TWO_PASS).resolve_knobs(knobs)


@pytest.mark.parametrize("source, message", [
    ("extern \"C\" __global__ void k() {}", "no '// @kagent entry: NAME'"),
    ("// @kagent entry: k\n// @kagent block: 32\n__global__ void k(){}", "has no grid"),
    ("// @kagent entry: k\n// @kagent grid: 1\n// @kagent block: 32\n__global__ void other(){}",
     "names no __global__ function"),
    ("// @kagent grid: 1\n", "line 1: 'grid:' comes before any 'entry:'"),
    ("// @kagent entry: k\n// @kagent grid: __import__('os')\n", "line 2: unknown function"),
    ("// @kagent entry: k\n// @kagent grid: x.y\n", "line 2: Attribute is not allowed"),
    ("// @kagent entry: k\n// @kagent knob B [tiling]: 1 2\n", "specialist 'tiling'"),
    ("// @kagent entry: k\n// @kagent blok: 32\n", "unknown directive"),
    ("// @kagent entry: k\n// @kagent grid: 1, 2, 3, 4\n", "1 to 3 expressions"),
    ("// @kagent entry: k\n// @kagent scratch s: 4 float17\n", "unknown dtype"),
])
def test_malformed_directives_name_the_line(source, message):
    with pytest.raises(DirectiveError, match=message):
        parse_directives(source)


def test_launch_limits():
    d = parse_directives("// @kagent entry: k\n// @kagent grid: n - 5\n// @kagent block: 2048\n"
                         "__global__ void k(int n){}")
    with pytest.raises(LaunchPlanError, match="grid dimension 0 is 0"):
        plan(d, {}, {"n": 5}, ["n"], {}, set())
    d = parse_directives("// @kagent entry: k\n// @kagent grid: 1\n// @kagent block: 2048\n"
                         "__global__ void k(int n){}")
    with pytest.raises(LaunchPlanError, match="block dimension 0 is 2048"):
        plan(d, {}, {"n": 5}, ["n"], {}, set())
    d = parse_directives("// @kagent entry: k\n// @kagent grid: 1\n// @kagent block: 32\n"
                         "__global__ void k(int n){}")
    with pytest.raises(LaunchPlanError, match="parameter 'm' is no buffer"):
        plan(d, {}, {"n": 5}, ["m"], {}, set())


def test_a_comment_after_a_directive_is_not_part_of_it():
    d = parse_directives("// @kagent entry: k  // the kernel\n"
                         "// @kagent grid: ceil_div(n, 256)  // one thread an element\n"
                         "// @kagent block: 256, 1 // 256 threads\n"
                         "// @kagent smem: 1024 * 8 // 1MB\n"
                         "// @kagent knob B [launch]: 1 2 // the sizes\n"
                         "__global__ void k(int n){}")
    entry = d.entries[0]
    assert (entry.name, entry.grid, entry.block, entry.smem) == ("k", ["ceil_div(n, 256)"], ["256", "1"], "1024 * 8")
    assert d.knobs["B"].values == ["1", "2"]
    # `//` is also floor division: an expression that reads whole is kept whole
    d = parse_directives("// @kagent entry: k\n// @kagent grid: n // 256\n// @kagent block: 256\n__global__ void k(){}")
    assert d.entries[0].grid == ["n // 256"]


def test_a_block_over_1024_threads_says_how_many_and_the_limit():
    d = parse_directives("// @kagent entry: k\n// @kagent grid: 1\n// @kagent block: 256, 8\n__global__ void k(){}")
    with pytest.raises(LaunchPlanError, match=r"block \(256, 8, 1\) is 2048 threads, more than the 1024"):
        plan(d, {}, {"n": 5}, [], {}, set())

"""Parsing model answers (whole files, SEARCH/REPLACE edits, broken answers) and distilling NVRTC errors."""

from __future__ import annotations

import importlib.util

import pytest

from kernel_agent.llm.answers import parse_answer
from kernel_agent.optimize.compile_rules import ErrorRule, rules_from_compile_log
from sandbox import compile_source, parse_directives
from tests.paths import ROOT

PARENT = (ROOT / "tasks" / "level1" / "layernorm" / "rowblock.cu").read_text()
PARENT_LINES = PARENT.split("\n")
DIRECTIVES = [line for line in PARENT_LINES if line.startswith("// @kagent")]

SMALL = """// @kagent entry: scale
// @kagent grid: ceil_div(n, BLOCK)
// @kagent block: BLOCK
// @kagent knob BLOCK [launch]: 256 128
#ifndef BLOCK
#define BLOCK 256
#endif
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}
"""


def edit(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def line_number(text: str) -> int:
    return PARENT_LINES.index(text) + 1


# ---- whole files -------------------------------------------------------------------------------


def test_full_file_in_a_cuda_block():
    answer = f"Here is a faster kernel.\n\n```cuda\n{SMALL}```\n\nIt uses one thread per element."
    parsed = parse_answer(answer, PARENT)
    assert (parsed.kind, parsed.feedback, parsed.edits_applied) == ("file", "", 0)
    assert parsed.source == SMALL and not parsed.directives_reattached


def test_the_largest_block_with_a_kernel_wins():
    snippet = "```cuda\n__global__ void scale(float* y);\n```\n"
    other = "```python\nprint('__global__')\n" + "x = 1\n" * 50 + "```\n"
    answer = f"{snippet}First the declaration, then the file:\n```cu\n{SMALL}```\n{other}"
    parsed = parse_answer(answer, PARENT)
    assert parsed.kind == "file" and parsed.source == SMALL


@pytest.mark.parametrize("tag", ["", "c++", "cpp", "CUDA", "c"])
def test_other_tags_and_untagged_blocks(tag):
    parsed = parse_answer(f"```{tag}\n{SMALL}```", PARENT)
    assert parsed.source == SMALL, tag


def test_no_code():
    parsed = parse_answer("I think the kernel should use float4 loads.", PARENT)
    assert parsed.source is None and parsed.kind == "none"
    assert parsed.feedback.startswith("no code found: send the whole kernel file in one ```cuda block or "
                                      "SEARCH/REPLACE edits")


def test_a_block_without_a_kernel():
    parsed = parse_answer("```cuda\n#define BLOCK 512\n```", PARENT)
    assert parsed.source is None and "no __global__ function" in parsed.feedback


def test_truncated_fence():
    cut = SMALL[: SMALL.index("if (i < n)")]
    parsed = parse_answer(f"Here it is:\n```cuda\n{cut}", PARENT, finished=False)
    assert parsed.source is None
    assert "cut off" in parsed.feedback and "shorter answer" in parsed.feedback
    # how to answer shorter (edits, or only the changed functions) is the follow-up prompt's, by the model's mode
    assert "only what changes" in parsed.feedback and "SEARCH/REPLACE" not in parsed.feedback
    # the same answer from a model that stopped by itself: not "too long", but incomplete
    parsed = parse_answer(f"Here it is:\n```cuda\n{cut}", PARENT, finished=True)
    assert parsed.source is None and "cut off" not in parsed.feedback and "never closed" in parsed.feedback


def test_an_unclosed_fence_around_a_whole_kernel_is_read_when_the_model_stopped_by_itself():
    parsed = parse_answer(f"Here it is:\n```cuda\n{SMALL}", PARENT, finished=True)
    assert parsed.source == SMALL and parsed.feedback == ""
    assert parse_answer(f"Here it is:\n```cuda\n{SMALL}", PARENT, finished=False).source is None


def test_truncated_edit_block():
    answer = edit("    float q = 0.f;", "    float q = 0.0f;") + "<<<<<<< SEARCH\n    float s = 0.f;\n===="
    parsed = parse_answer(answer, PARENT, finished=False)
    assert parsed.source is None and parsed.kind == "edits"
    assert "cut off inside SEARCH/REPLACE block 2" in parsed.feedback
    # not cut off (the model stopped by itself): the block is said to be malformed, not too long
    parsed = parse_answer(answer, PARENT, finished=True)
    assert parsed.source is None and "cut off" not in parsed.feedback
    assert "block 2 has no '=======' line" in parsed.feedback


def test_dropped_directives_are_reattached():
    body = "\n".join(line for line in SMALL.split("\n") if not line.startswith("// @kagent"))
    new_parent = SMALL.replace("2.f", "3.f")
    parsed = parse_answer(f"```cuda\n{body}```", new_parent)
    assert parsed.kind == "file" and parsed.feedback == "" and parsed.directives_reattached
    assert parsed.source.split("\n")[:4] == SMALL.split("\n")[:4]
    assert parse_directives(parsed.source).entries[0].name == "scale"


def test_no_directives_anywhere():
    body = "\n".join(line for line in SMALL.split("\n") if not line.startswith("// @kagent"))
    parsed = parse_answer(f"```cuda\n{body}```", body)
    assert parsed.source is None and "// @kagent entry: NAME" in parsed.feedback


def test_renamed_entry_is_reported():
    renamed = SMALL.replace("void scale(", "void scale2(")
    parsed = parse_answer(f"```cuda\n{renamed}```", PARENT)
    assert parsed.source is None and "'scale' names no __global__ function" in parsed.feedback


def test_crlf_full_file():
    parsed = parse_answer(f"Fixed:\r\n```cuda\r\n{SMALL.replace(chr(10), chr(13) + chr(10))}```\r\n", PARENT)
    assert parsed.source == SMALL and "\r" not in parsed.source


# ---- edits -------------------------------------------------------------------------------------


def test_exact_edit_is_applied():
    old = "    const float rstd = rsqrtf(row_sum(q, red[1]) / (float)cols + eps);"
    new = "    const float rstd = rsqrtf(row_sum(q, red[1]) * (1.f / (float)cols) + eps);"
    parsed = parse_answer("Multiply by the reciprocal.\n" + edit(old, new), PARENT)
    assert (parsed.kind, parsed.feedback, parsed.edits_applied) == ("edits", "", 1)
    assert parsed.source == PARENT.replace(old, new)


def test_several_edits_apply_in_order_inside_a_fence():
    first = edit("// @kagent knob VEC [memory]: 4 1 2", "// @kagent knob VEC [memory]: 4 1 2\n"
                 "// @kagent knob UNROLL [compute]: 4 8")
    second = edit("// @kagent knob UNROLL [compute]: 4 8", "// @kagent knob UNROLL [compute]: 4 8 16")
    parsed = parse_answer(f"```cuda\n{first}{second}```", PARENT)
    assert parsed.feedback == "" and parsed.edits_applied == 2
    assert "// @kagent knob UNROLL [compute]: 4 8 16" in parsed.source
    assert set(parse_directives(parsed.source).knobs) == {"BLOCK", "VEC", "ROWS_PER_BLOCK", "UNROLL"}


def test_whitespace_tolerant_edit_keeps_the_parents_indentation():
    search = "float q = 0.f;   \n#pragma unroll\nfor (int i = 0; i < N;  ++i)"  # no indentation, extra spaces
    replace = "float q = 0.0f;\n#pragma unroll 2\nfor (int i = 0; i < N; ++i)"
    parsed = parse_answer(edit(search, replace), PARENT)
    assert parsed.feedback == "" and parsed.edits_applied == 1
    number = line_number("    float q = 0.f;")
    lines = parsed.source.split("\n")
    expected = ["    float q = 0.0f;", "#pragma unroll 2", "    for (int i = 0; i < N; ++i)"]
    assert lines[number - 1: number + 2] == expected
    assert len(lines) == len(PARENT_LINES)


def test_blank_lines_around_the_search_are_ignored():
    parsed = parse_answer(edit("\n    float q = 0.f;\n", "    float q = 0.0f;"), PARENT)
    assert parsed.feedback == "" and "    float q = 0.0f;" in parsed.source


def test_search_that_does_not_match_shows_the_closest_lines():
    search = "    const float mean = row_sum(s, red[0]) / cols;\n\n    // Pass 2: squared deviations."
    parsed = parse_answer("ok\n" + edit("    float q = 0.f;", "    float q = 0.0f;") + edit(search, "x"), PARENT)
    assert parsed.source is None and parsed.kind == "edits" and parsed.edits_applied == 1
    feedback = parsed.feedback
    assert "block 2" in feedback and "block 1" not in feedback
    assert "const float mean = row_sum(s, red[0]) / cols;" in feedback  # the first SEARCH line
    number = line_number("    const float mean = row_sum(s, red[0]) / (float)cols;")
    assert f"{number} |     const float mean = row_sum(s, red[0]) / (float)cols;" in feedback
    assert f"{number + 2} |     // Pass 2: squared deviations from the exact mean." in feedback
    assert "exactly as it appears" in feedback


def test_ambiguous_search_asks_for_more_context():
    parsed = parse_answer(edit("#endif", "#endif  // done"), PARENT)
    assert parsed.source is None
    count = PARENT_LINES.count("#endif")
    assert f"matches {count} places" in parsed.feedback and "more context" in parsed.feedback
    assert str(line_number("#endif")) in parsed.feedback


def test_crlf_edits_against_a_crlf_parent():
    crlf_parent = PARENT.replace("\n", "\r\n")
    answer = edit("    float q = 0.f;", "    float q = 0.0f;").replace("\n", "\r\n")
    parsed = parse_answer(answer, crlf_parent)
    assert parsed.feedback == "" and parsed.source == PARENT.replace("    float q = 0.f;", "    float q = 0.0f;")


def test_empty_search_is_refused():
    parsed = parse_answer(edit("", "// new line"), PARENT)
    assert parsed.source is None and "empty SEARCH" in parsed.feedback


# ---- error rules from real NVRTC logs ----------------------------------------------------------

BROKEN = {
    "shared-array-runtime-size": "__global__ void k(float* x, int n) { __shared__ float s[n]; s[0] = 1; x[0] = s[0]; }",
    "undefined-identifier:foo": "__global__ void k(float* x) { x[0] = foo; }",
    "host-header-include:stdio.h": "#include <stdio.h>\n__global__ void k(float* x) { x[0] = 1; }",
    "host-function": "__host__ float h(float a) { return a; }\n__global__ void k(float* x) { x[0] = h(1.f); }",
    "global-void-return": "__global__ float k(float* x) { return 1.f; }",
    "overload-no-match:__shfl_xor_sync": ("__global__ void k(float* x) { float4 a = make_float4(0, 0, 0, 0); "
                                          "x[0] = __shfl_xor_sync(0xffffffff, a, 1).x; }"),
    "overload-ambiguous:sqrt": "__global__ void k(float* x, int n) { x[0] = sqrt(n); }",
    "missing-semicolon": "__global__ void k(float* x) { x[0] = 1 }",
    "not-a-template:V": "typedef float V;\n__global__ void k(float* x) { V<4> a; x[0] = 1; }",
    "shared-memory-too-large": ("__global__ void k(float* x) { __shared__ float s[65536]; s[threadIdx.x] = 1; "
                                "__syncthreads(); x[threadIdx.x] = s[threadIdx.x + 1]; }"),
    "static-assert": ('#define BLOCK 100\nstatic_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32");\n'
                      "__global__ void k(float* x) { x[0] = 1; }"),
    "std-library:max": "__global__ void k(float* x) { x[0] = std::max(1.f, 2.f); }",
    "const-write": "__global__ void k(const float* x) { x[0] = 1.f; }",
    "shared-initializer": "__global__ void k(float* x) { __shared__ float s[2] = {0, 0}; x[0] = s[0]; }",
    "register-spill": ("__global__ void k(float* x) { float r[128];\n#pragma unroll\n"
                       "for (int i = 0; i < 128; i++) r[i] = x[i * threadIdx.x]; float s = 0;\n#pragma unroll\n"
                       "for (int i = 0; i < 128; i++) s += r[i] * r[(i * 7) % 128]; x[threadIdx.x] = s; }"),
}
FLAGS = {"register-spill": ["-maxrregcount=32"]}


@pytest.fixture(scope="module")
def nvrtc_logs() -> dict[str, str]:
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
        pytest.skip("needs NVRTC (cuda-bindings)")
    return {key: compile_source(src, ["k"], flags=FLAGS.get(key, ()), arch="sm_90").log for key, src in BROKEN.items()}


@pytest.mark.parametrize("key", sorted(BROKEN))
def test_error_rule_from_a_real_nvrtc_log(nvrtc_logs, key):
    rules = rules_from_compile_log(nvrtc_logs[key])
    assert key in [r.key for r in rules], nvrtc_logs[key]
    rule = next(r for r in rules if r.key == key)
    assert rule.text.startswith("do not ") and len(rule.text) < 400


def test_error_rule_texts_say_what_to_do_instead(nvrtc_logs):
    def text(key: str) -> str:
        return next(r.text for r in rules_from_compile_log(nvrtc_logs[key]) if r.key == key)

    assert "knob" in text("shared-array-runtime-size") and "extern __shared__" in text("shared-array-runtime-size")
    assert "cuda_fp16.h" in text("host-header-include:stdio.h") and "INFINITY" in text("host-header-include:stdio.h")
    assert "(unsigned int, float4, int)" in text("overload-no-match:__shfl_xor_sync")
    assert "(int)" in text("overload-ambiguous:sqrt") and "sqrtf" in text("overload-ambiguous:sqrt")
    assert "262144 bytes" in text("shared-memory-too-large") and "49152" in text("shared-memory-too-large")
    assert "BLOCK must be a multiple of 32" in text("static-assert")


def test_a_clean_log_gives_no_rules(nvrtc_logs):
    clean = compile_source(SMALL, ["scale"], arch="sm_90")
    assert clean.ok and rules_from_compile_log(clean.log) == []


def test_rules_are_deduplicated_in_log_order():
    log = ('kernel.cu(3): error: identifier "TILE" is undefined\n'
           'kernel.cu(9): error: expected a ";"\n'
           'kernel.cu(12): error: identifier "TILE" is undefined\n'
           'kernel.cu(14): error: identifier "acc" is undefined\n')
    rules = rules_from_compile_log(log)
    assert [r.key for r in rules] == ["undefined-identifier:TILE", "missing-semicolon", "undefined-identifier:acc"]
    assert "knob" in rules[0].text and "knob" not in rules[2].text
    assert rules[0] == ErrorRule(rules[0].key, rules[0].text)


def test_rules_for_messages_nvrtc_does_not_produce_here():
    log = ('kernel.cu(4): error: calling a __host__ function("h") from a __global__ function("k") is not allowed\n'
           "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch\n"
           'kernel.cu(2): error: "Tile" is not a template\n'
           "ptxas warning : Registers are spilled to local memory in function 'k', 8 bytes spill stores\r\n"
           'kernel.cu(5): error: identifier "__shfl_down" is undefined\n'
           'kernel.cu(6): error: identifier "uint64_t" is undefined\n')
    keys = [r.key for r in rules_from_compile_log(log)]
    assert keys == ["host-function", "too-many-resources", "not-a-template:Tile", "register-spill",
                    "undefined-identifier:__shfl_down", "undefined-identifier:uint64_t"]
    texts = {r.key: r.text for r in rules_from_compile_log(log)}
    assert "__shfl_down_sync" in texts["undefined-identifier:__shfl_down"]
    assert "unsigned long long" in texts["undefined-identifier:uint64_t"]
    assert "__launch_bounds__" in texts["too-many-resources"]


# ---- a forgiving reader for small models -------------------------------------------------------


def test_a_missing_grid_and_block_are_taken_from_the_parent():
    answer = "```cuda\n// @kagent entry: scale2\n__global__ void scale2(const float* x, float* y, int n) {}\n```"
    parsed = parse_answer(answer, SMALL)
    assert parsed.feedback == "" and parsed.source is not None
    entry = parse_directives(parsed.source).entries[0]
    assert (entry.name, entry.grid, entry.block) == ("scale2", ["ceil_div(n, BLOCK)"], ["BLOCK"])


def test_edits_against_the_models_own_last_answer_are_applied_to_it():
    own = SMALL.replace("2.f * x[i]", "3.f * x[i]")
    answer = edit("    if (i < n) y[i] = 3.f * x[i];", "    if (i < n) y[i] = 4.f * x[i];")
    assert parse_answer(answer, SMALL).source is None  # not a line of the parent
    parsed = parse_answer(answer, SMALL, earlier=(own,))
    assert parsed.source == SMALL.replace("2.f * x[i]", "4.f * x[i]")


def test_a_compiler_log_pasted_into_search_is_recognised():
    answer = edit('kernel.cu(9): error: identifier "j" is undefined\n      int i = j;\n              ^',
                  "    int i = blockIdx.x * BLOCK + threadIdx.x;")
    parsed = parse_answer(answer, SMALL)
    assert parsed.source is None and "holds the compiler's messages, not lines of the kernel" in parsed.feedback


def test_a_last_block_without_its_replace_line_ends_with_the_answer_when_not_cut_off():
    answer = "<<<<<<< SEARCH\n    if (i < n) y[i] = 2.f * x[i];\n=======\n    if (i < n) y[i] = 5.f * x[i];\n```\n"
    parsed = parse_answer(answer, SMALL, finished=True)
    assert parsed.source == SMALL.replace("2.f * x[i]", "5.f * x[i]")
    cut = parse_answer(answer, SMALL, finished=False)
    assert cut.source is None and "cut off" in cut.feedback


def test_a_kernel_sent_without_a_code_block_is_read_without_the_prose_around_it():
    parsed = parse_answer(f"Here is the kernel.\n{SMALL}\nIt doubles x.", SMALL.replace("2.f", "3.f"))
    assert parsed.source == SMALL and parsed.kind == "file"


def test_a_kernel_followed_by_a_closing_fence_only_is_read():
    """Qwen2.5-Coder-1.5B's habit: the code first, then a lone ``` and prose."""
    parsed = parse_answer(f"{SMALL}```\n\nThis kernel is faster.", SMALL.replace("2.f", "3.f"))
    assert parsed.source == SMALL and parsed.kind == "file"

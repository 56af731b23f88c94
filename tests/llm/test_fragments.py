"""An answer holding only the functions the model changed is merged into the parent, not taken as a
file that lost the parent's helpers."""

from __future__ import annotations

from kernel_agent.llm.answers import parse_answer
from kernel_agent.llm.fragments import definitions, merge
from tests.paths import ROOT

ADD = (ROOT / "tasks" / "level1" / "add" / "vec.cu").read_text()


def entry_function(source: str) -> str:
    (d,) = [d for d in definitions(source) if d.name == "add"]
    return source[d.start:d.end]


def test_definitions_are_found_with_templates_attributes_and_overloads():
    found = [(d.name, ADD[d.start:d.end].split("\n")[0]) for d in definitions(ADD)]
    names = [name for name, _ in found]
    assert names.count("vadd") == 3 and names[-2:] == ["add_vectors", "add"]
    assert found[-2][1] == "template <int V>" and found[-1][1].startswith('extern "C" __global__ void __launch_bounds__')


def test_a_changed_entry_function_alone_is_merged_into_the_parent():
    changed = entry_function(ADD).replace("out[i] = a[i] + b[i];", "out[i] = b[i] + a[i];")
    answer = f"Swapped the operands:\n```cuda\n{changed}\n```\n"
    parsed = parse_answer(answer, ADD)
    assert parsed.kind == "fragment" and parsed.feedback == ""
    assert parsed.source == ADD.replace("out[i] = a[i] + b[i];", "out[i] = b[i] + a[i];")
    assert "void add_vectors" in parsed.source and parsed.source.startswith("// @kagent entry: add")


def test_a_fragment_with_launch_lines_brings_them_and_keeps_the_helpers():
    lines = [line for line in ADD.split("\n") if line.startswith("// @kagent")]
    changed = "\n".join(line.replace("block: BLOCK", "block: 128") for line in lines) + "\n" + entry_function(ADD)
    merged = merge(changed, ADD)
    assert merged is not None and "// @kagent block: 128" in merged and "// @kagent block: BLOCK" not in merged
    assert merged.count("void add_vectors") == 1 and merged.count("// @kagent entry: add") == 1


def test_a_whole_file_or_a_new_structure_is_no_fragment():
    assert merge(ADD, ADD) is None  # it defines everything it calls
    new = "// @kagent entry: add\n// @kagent grid: 1\n// @kagent block: 1\n__global__ void add(const float* a, " \
          "const float* b, float* out, int n) { for (int i = 0; i < n; ++i) out[i] = a[i] + b[i]; }\n"
    assert merge(new, ADD) is None and parse_answer(f"```cuda\n{new}```", ADD).kind == "file"


def test_a_fragment_that_uses_the_parents_struct_and_knob_defines_is_merged():
    # every function of the parent resent, but not the VecT struct or the #define lines they use
    functions = "\n\n".join(ADD[d.start:d.end] for d in definitions(ADD))
    changed = functions.replace("base < nv; base += stride", "base < nv; base += stride + 0")
    parsed = parse_answer(f"```cuda\n{changed}\n```", ADD)
    assert parsed.kind == "fragment" and "struct VecT" in parsed.source and "#define UNROLL" in parsed.source
    assert "base += stride + 0" in parsed.source


def test_a_changed_helper_alone_without_the_entry_is_merged():
    (helper,) = [d for d in definitions(ADD) if d.name == "add_vectors"]
    changed = ADD[helper.start:helper.end].replace("base < nv; base += stride", "base < nv; base += stride + 0")
    parsed = parse_answer(f"The loop step:\n```cuda\n{changed}\n```\n", ADD)
    assert parsed.kind == "fragment" and "base += stride + 0" in parsed.source and "__global__" in parsed.source

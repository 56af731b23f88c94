"""What counts as no new answer: the same code renamed, re-commented, re-spaced or relaunched."""

from __future__ import annotations

import re

from kernel_agent.llm.sameness import structure, text
from tests.paths import ROOT

NAIVE = (ROOT / "tasks" / "level1" / "softmax" / "naive.cu").read_text()
ROWBLOCK = (ROOT / "tasks" / "level1" / "softmax" / "rowblock.cu").read_text()


def rename(source: str, old: str, new: str) -> str:
    return re.sub(rf"(?<![.\w]){old}\b", new, source)


def test_a_renamed_recommented_respaced_relaunched_copy_has_the_same_structure():
    copy = rename(rename(rename(NAIVE, "x", "inp"), "sum", "total"), "softmax", "my_softmax")
    copy = copy.replace("block: 256", "block: 128").replace("// Naive", "// Fast").replace("    ", "\t")
    assert copy != NAIVE and structure(copy) == structure(NAIVE)


def test_a_different_algorithm_or_operation_is_a_new_structure():
    assert structure(ROWBLOCK) != structure(NAIVE)
    assert structure(NAIVE.replace("expf", "__expf")) != structure(NAIVE)  # a library function is no own name
    assert structure(NAIVE.replace("c < cols", "c <= cols")) != structure(NAIVE)


def test_field_names_are_not_renamed_with_the_variables_of_the_same_name():
    # `threadIdx.x` keeps its `x` although the kernel's parameter `x` becomes v1
    assert "threadIdx . x" in structure(NAIVE) and "blockIdx . x" in structure(NAIVE)


def test_a_repair_may_change_only_a_launch_number_but_not_nothing():
    relaunched = NAIVE.replace("block: 256", "block: 128")
    assert text(relaunched) != text(NAIVE)
    recommented = NAIVE.replace("// Naive baseline", "// the same kernel").replace("    ", "  ")
    assert text(recommented) == text(NAIVE)

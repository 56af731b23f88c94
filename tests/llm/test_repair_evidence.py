"""A repair prompt carries the evidence that matters: for a launch error the size, the directive line
that set it and the limit it broke; an expert kernel of the family as an example; and, for a small
model and a short kernel, a request for the whole file."""

from __future__ import annotations

import random

from kernel_agent.llm.context import Extras, launch_evidence, repair_context
from kernel_agent.llm.examples import family_example
from kernel_agent.llm.prompts import render
from kernel_agent.optimize.knowledge import KnowledgeBase
from kernel_agent.optimize.space import Space
from kernel_agent.seams import Attempt, SearchState
from kernel_agent.task import load_task
from sandbox import Evaluator, Status
from tests.paths import ROOT

SOFTMAX = ROOT / "tasks" / "level1" / "softmax.yaml"


def test_a_launch_error_names_the_size_the_directive_and_the_limit(tmp_path):
    task = load_task(SOFTMAX)
    space = Space.of_task(task, generic=False)
    kernel = tmp_path / "wide.cu"
    kernel.write_text((ROOT / "tasks" / "level1" / "softmax" / "naive.cu").read_text()
                      .replace("// @kagent block: 256", "// @kagent block: 256, 8  // 8 rows a block"))
    space.add_kernel("llm1", kernel, False)
    (outcome,) = Evaluator(task.problem(), None, "sm_90").evaluate([space.build(space.default("llm1"))])
    assert outcome.status is Status.launch_error
    failed = Attempt(2, space.default("llm1"), outcome, 0.0)
    state = SearchState(space, random.Random(0), KnowledgeBase(), [failed])
    example = family_example(task, 120)
    context = repair_context(task, space, state, failed, Extras(small=True, example=example))
    assert context["size"] == "rows=16384 cols=4096"
    assert context["directives"] == ["line 3: // @kagent block: 256, 8  // 8 rows a block"]
    assert "at most 1024 threads" in context["limit"]
    text = render("repair_launch_error", **context)
    assert "line 3: // @kagent block: 256, 8" in text and "The limit it broke: a block has at most 1024" in text
    assert "size unknown" not in text and "(256, 8, 1) is 2048 threads" in text
    assert example is not None and example.task != "softmax" and f"another task ({example.task}" in text
    assert "Send the whole new kernel file in one ```cuda block" in text  # small model, short kernel


def test_launch_evidence_of_a_message_it_cannot_read_is_empty_not_wrong():
    assert launch_evidence("// @kagent entry: k\n", "something else went wrong") == ("unknown", [], "")
    size, lines, limit = launch_evidence(
        "// @kagent entry: a\n// @kagent grid: 0\n// @kagent entry: b\n// @kagent grid: n\n",
        "at n=5: b: grid dimension 0 is 0, outside 1..2147483647")
    assert (size, lines) == ("n=5", ["line 4: // @kagent grid: n"]) and "at least 1" in limit


def test_a_family_without_an_expert_kernel_gets_no_example(tmp_path):
    task = load_task(SOFTMAX).model_copy(update={"family": "nothing_like_it"})
    assert family_example(task, 500) is None
    assert family_example(load_task(SOFTMAX), 10) is None  # every expert kernel is longer


def test_a_small_model_gets_the_familys_short_teaching_example():
    from kernel_agent.llm.examples import teaching_example

    task = load_task(ROOT / "tasks" / "naive" / "log_softmax.yaml")
    example = teaching_example(task)
    assert example is not None and example.task == "row_sum" and len(example.source.splitlines()) < 25
    assert "__shfl_xor_sync" in example.source and "task:" not in example.source
    assert teaching_example(load_task(ROOT / "tasks" / "level1" / "row_sum.yaml")) is None  # its own task

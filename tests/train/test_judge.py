"""The GRPO reward: answers read as kagent reads them, checked (replayed GPU verdicts, else a real
compile here), ranked within each prompt's group: correct-fast > correct-slow > wrong > compile error >
no kernel."""

from __future__ import annotations

from kernel_agent.llm.answers import parse_answer
from kernel_agent.repair.checks import RecordedChecks, check_key
from kernel_agent.task import load_task
from kernel_agent.train.judge import Judge, KernelReward
from sandbox import Outcome, Status, Timing
from tests.paths import ROOT

TASK_FILE = str(ROOT / "tasks/level1/add.yaml")
BROKEN = (ROOT / "tests/data/repair/add__off_by_one_bound.cu").read_text()
LINE = "    if (i <= n) out[i] = a[i] + b[i];"


def edit(new: str) -> str:
    return f"<<<<<<< SEARCH\n{LINE}\n=======\n{new}\n>>>>>>> REPLACE"


FAST, SLOW = edit("    if (i < n) out[i] = a[i] + b[i];"), edit("    if (i < n) { out[i] = b[i] + a[i]; }")
WRONG, BROKEN_SYNTAX = edit("    if (i < n) out[i] = a[i] - b[i];"), edit("    if (i < n) out[i] = a[i] + b[i]")


def timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, min_ms=ms, max_ms=ms, repetitions=10)


def replay(tmp_path) -> RecordedChecks:
    task = load_task(TASK_FILE)
    checks = RecordedChecks(tmp_path / "checks.jsonl")
    for text, outcome in [(FAST, Outcome(status=Status.ok, timing=timing(0.01))),
                          (SLOW, Outcome(status=Status.ok, timing=timing(0.03))),
                          (WRONG, Outcome(status=Status.wrong_result))]:
        checks.add(check_key(task, parse_answer(text, BROKEN).source or "", {}, None), outcome)
    return checks


def call(reward, prompts, answers, **columns):
    n = len(answers)
    return reward(prompts, [[{"role": "assistant", "content": a}] for a in answers],
                  task_file=columns.get("task_file", [TASK_FILE] * n), role=columns.get("role", ["repair"] * n),
                  parent=[BROKEN] * n, base_fills=["{}"] * n)


def test_rewards_order_correct_fast_slow_wrong_compile_error_none(tmp_path):
    reward = KernelReward(Judge(tmp_path / "work", replay(tmp_path)))
    answers = [WRONG, "I cannot fix this.", SLOW, BROKEN_SYNTAX, FAST]
    rewards = call(reward, [["fix add"]] * 5, answers)
    assert [s for s, _ in reward.verdicts] == ["wrong_result", "no_kernel", "ok", "compile_error", "ok"]
    order = sorted(range(5), key=lambda i: -rewards[i])
    assert [answers[i] for i in order] == [FAST, SLOW, WRONG, BROKEN_SYNTAX, "I cannot fix this."]
    assert rewards[4] == 1.0 and rewards[1] == -1.0


def test_correct_answers_are_ranked_within_their_own_prompt(tmp_path):
    reward = KernelReward(Judge(tmp_path / "work", replay(tmp_path)))
    rewards = call(reward, [["a"], ["a"], ["b"], ["b"]], [SLOW, FAST, SLOW, WRONG])
    assert rewards[0] < rewards[1] == 1.0  # the slow one loses to the fast one beside it
    assert rewards[2] == 1.0 > rewards[3]  # and is the best of the other group


def test_a_prompt_that_cannot_be_judged_gets_the_lowest_reward_and_says_why(tmp_path):
    reward = KernelReward(Judge(tmp_path / "work", replay(tmp_path), task_roots=[tmp_path]))
    rewards = call(reward, [["a"], ["b"]], [FAST, FAST], task_file=["/elsewhere/nonesuch.yaml", TASK_FILE],
                   role=["repair", "port:no_such_skeleton"])
    assert rewards == [-1.0, -1.0]
    assert "nonesuch.yaml" in reward.problems[0] and "no_such_skeleton" in reward.problems[1]


def test_a_task_file_recorded_elsewhere_is_found_by_name(tmp_path):
    judge = Judge(tmp_path / "work", replay(tmp_path), task_roots=[ROOT / "tasks"])
    assert judge.verdict("/root/other-machine/tasks/level1/add.yaml", "repair", BROKEN, {}, FAST) == ("ok", 0.01)

"""`kagent export`: runs' trajectories and repair sessions' transcripts become TRL datasets split by
task; the training reward orders answers correct-fast > correct-slow > wrong > compile error > none."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.train.export import export, split_tasks
from kernel_agent.train.rewards import group_rewards
from kernel_agent.train.samples import read_samples

SYSTEM = {"role": "system", "content": "You write CUDA kernels."}


def ask(task, text):
    return [SYSTEM, {"role": "user", "content": f"Write {task} faster. {text}"}]


def run_folder(root, task, calls):
    """An optimize run's folder: run.json and a trajectory with call and result rows (the last result wins)."""
    folder = root / task / "run1"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"task": task}))
    rows = []
    for number, (prompt, answer, verdicts) in enumerate(calls, start=1):
        rows.append({"type": "call", "call": number, "role": "planner", "round": 0, "messages": prompt, "text": answer,
                     "kernel": f"llm{number}" if verdicts else None, "feedback": "" if verdicts else "no code found"})
        rows += [{"type": "result", "call": number, "kernel": f"llm{number}", "status": status, "median_ms": ms,
                  "speedup": speedup} for status, ms, speedup in verdicts]
    (folder / "trajectory.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_answers_become_sft_preference_and_prompt_rows_split_by_task(tmp_path):
    p = ask("softmax", "")
    run_folder(tmp_path / "runs", "softmax", [
        (p, "fast", [("not_run", None, None), ("ok", 0.1, 8.0)]),  # measured later: the GPU's verdict wins
        (p, "slow", [("ok", 0.4, 2.0)]),
        (p, "wrong", [("wrong_result", None, None)]),
        (p, "fast", [("ok", 0.1, 8.0)]),  # the same answer again: one SFT row
        (p, "unusable", []),
        ([*p, {"role": "assistant", "content": "unusable"}, {"role": "user", "content": "again"}], "x", []),
    ])
    run_folder(tmp_path / "runs", "layernorm", [(ask("layernorm", ""), "ok answer", [("ok", 1.0, 1.5)])])
    samples, skipped = read_samples([tmp_path / "runs"])
    assert len(samples) == 7 and not skipped
    assert [s.status for s in samples if s.task == "softmax"][3:] == ["ok", None, None]
    manifest = export(samples, tmp_path / "out", test_tasks={"layernorm"})
    read = lambda name: [json.loads(line) for line in (tmp_path / "out" / name).read_text().splitlines()]  # noqa: E731
    sft = read("sft.train.jsonl")
    assert [r["completion"][0]["content"] for r in sft] == ["fast", "slow"]
    assert sft[0]["prompt"] == p and sft[0]["completion"][0]["role"] == "assistant"
    pairs = {(r["chosen"][0]["content"], r["rejected"][0]["content"]) for r in read("preference.train.jsonl")}
    assert pairs == {("fast", "slow"), ("fast", "wrong"), ("fast", "unusable"), ("slow", "wrong"),
                     ("slow", "unusable"), ("wrong", "unusable")}
    assert [r["prompt"] for r in read("prompts.train.jsonl")] == [p]  # the re-ask is no task prompt
    assert [r["completion"][0]["content"] for r in read("sft.test.jsonl")] == ["ok answer"]
    assert all(r["task"] == "softmax" for name in ("sft", "preference", "prompts")
               for r in read(f"{name}.train.jsonl"))
    assert manifest["test_tasks"] == ["layernorm"] and manifest["rows"]["sft"] == {"train": 2, "test": 1}


def test_a_repair_session_is_read_with_its_task(tmp_path):
    folder = tmp_path / "session"
    folder.mkdir()
    rows = [{"type": "start", "task": "/x/tasks/level1/add.yaml", "task_name": "add"},
            {"type": "call", "call": 1, "role": "repair", "round": 1, "messages": ask("add", "fix"), "text": "fixed",
             "feedback": ""},
            {"type": "call", "call": 2, "role": "explain", "round": 0, "messages": ask("add", "why"), "text": "words"},
            {"type": "call", "call": 3, "role": "repair", "round": 1, "messages": ask("add", "fix"), "text": "rejected",
             "feedback": ""},
            {"type": "result", "call": 1, "kernel": "v002", "status": "ok", "median_ms": 0.2, "speedup": 1.0}]
    (folder / "transcript.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (sample, rejected), _ = read_samples([tmp_path])  # an explanation is no kernel answer
    assert (sample.task, sample.role, sample.status, sample.completion) == ("add", "repair", "ok", "fixed")
    assert rejected.status == "not_run"  # a fix the person rejected was never checked


def test_the_split_is_stable_and_never_holds_out_every_task():
    tasks = {f"task{i}" for i in range(40)}
    test = split_tasks(tasks, None, 0.25)
    assert test == split_tasks(set(sorted(tasks)), None, 0.25) and 4 <= len(test) <= 18
    assert split_tasks({"a", "b"}, None, 1.0) != {"a", "b"}


def test_the_training_reward_orders_fast_slow_wrong_compile_error_and_no_kernel():
    rewards = group_rewards([("compile_error", None), ("ok", 0.5), ("wrong_result", None), ("no_kernel", None),
                             ("ok", 0.1), ("not_run", None)])
    compile_error, slow, wrong, none, fast, not_run = rewards
    assert fast == 1.0 and slow == 0.5 and fast > slow > not_run > wrong > compile_error > none
    assert group_rewards([("ok", 0.3)]) == [1.0]


def test_the_command_says_when_there_is_nothing_to_export(tmp_path):
    result = CliRunner().invoke(app, ["export", str(tmp_path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no model answers" in result.output
    result = CliRunner().invoke(app, ["export", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "no such file or folder" in result.output

"""Issue 12: what a run reads and writes is untrusted too — the store, the journal, run.json, the
policies folder, concurrent runs, and the values given on the command line."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import threading

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.files import new_folder
from kernel_agent.optimize.policy import PolicyBook
from kernel_agent.optimize.store import Journal, JournalError, Store
from kernel_agent.recording import RECORDINGS
from tests.paths import LAYERNORM, ROOT

RECORDING = RECORDINGS / "layernorm.json"


def kagent(*args, **env):
    return CliRunner().invoke(app, [str(a) for a in args], env=env or None)


def replay(out, *extra):
    return kagent("optimize", LAYERNORM, "--executor", "replay", "--out", out, "--budget", 6, *extra)


def only_run(out):
    (run_dir,) = (out / "layernorm").iterdir()
    return run_dir


@contextlib.contextmanager
def read_only(*paths):
    """The paths cannot be written, by root too (who ignores modes): `chattr +i` then, where the file
    system has it; the test is skipped only where neither way exists."""
    if os.geteuid() != 0:
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path in paths:
                path.chmod(0o755 if path.is_dir() else 0o644)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", *map(str, paths)]).returncode != 0:
        pytest.skip("running as root where chattr +i does not work: nothing is read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


def no_traceback(result):
    assert ("Traceback" not in result.output and not isinstance(result.exception, Exception)) \
        or isinstance(result.exception, SystemExit), result.output


@pytest.mark.parametrize("damage", ["garbage", "wrong schema", "read-only"])
def test_an_unusable_store_is_named_and_the_run_goes_on_without_it(tmp_path, damage):
    store = tmp_path / "kagent.sqlite"
    if damage == "garbage":
        store.write_bytes(b"this is not a database" * 100)
    elif damage == "wrong schema":
        with sqlite3.connect(store) as db:
            db.execute("CREATE TABLE attempts (run_id TEXT, something TEXT)")
    else:
        assert replay(tmp_path).exit_code == 0
    # read-only: the store and its folder (no journal file can be made beside it); the run folders are not
    with read_only(tmp_path, store) if damage == "read-only" else contextlib.nullcontext():
        result = replay(tmp_path, "--seed", 1)
    assert result.exit_code == 0, result.output
    assert f"attempt store {store} is unusable" in " ".join(result.output.split())
    newest = max((tmp_path / "layernorm").iterdir(), key=lambda p: p.stat().st_mtime)
    assert len((newest / "attempts.jsonl").read_text().splitlines()) == 6


def test_a_store_that_turns_bad_mid_run_is_dropped_once(tmp_path):
    told = []
    store = Store(tmp_path / "s.sqlite", notice=told.append)
    store.db.execute("DROP TABLE attempts")
    assert store.earlier_verdicts("t", "sm_90", "replay", "x") == []
    assert store.db is None and len(told) == 1 and "no such table" in told[0]
    store.finish_run("x", best_ms=1.0)  # nothing happens, nothing is said again
    assert len(told) == 1


def _journal_with(tmp_path, lines):
    assert replay(tmp_path).exit_code == 0
    run_dir = only_run(tmp_path)
    rows = (run_dir / "attempts.jsonl").read_text().splitlines()
    (run_dir / "attempts.jsonl").write_text("\n".join(lines(rows)) + "\n")
    return run_dir


def test_a_damaged_line_inside_the_journal_stops_resume_and_names_the_line(tmp_path):
    run_dir = _journal_with(tmp_path, lambda rows: [*rows[:2], "{not json", *rows[2:]])
    with pytest.raises(JournalError, match="line 3 is not JSON, and it is not the last line"):
        Journal(run_dir / "attempts.jsonl").read()
    result = kagent("optimize", "--resume", run_dir, "--out", tmp_path, "--budget", 8)
    assert result.exit_code == 2 and "line 3 is not JSON" in " ".join(result.output.split())
    assert len((run_dir / "attempts.jsonl").read_text().splitlines()) == 7  # nothing dropped or rewritten


def test_a_json_line_that_is_no_attempt_is_damage_too(tmp_path):
    run_dir = _journal_with(tmp_path, lambda rows: [*rows[:3], json.dumps({"number": 4}), *rows[4:]])
    result = kagent("optimize", "--resume", run_dir, "--out", tmp_path)
    assert result.exit_code == 2 and "line 4 is not an attempt record (KeyError" in " ".join(result.output.split())


def test_only_a_torn_last_line_is_dropped(tmp_path):
    run_dir = _journal_with(tmp_path, lambda rows: [*rows[:4], rows[4][:25]])
    assert [a.number for a in Journal(run_dir / "attempts.jsonl").read()] == [1, 2, 3, 4]
    result = kagent("optimize", "--resume", run_dir, "--out", tmp_path, "--budget", 6)
    assert result.exit_code == 0, result.output
    assert len((run_dir / "attempts.jsonl").read_text().splitlines()) == 6


def test_a_damaged_run_json_is_named(tmp_path):
    assert replay(tmp_path).exit_code == 0
    run_dir = only_run(tmp_path)
    for damage in ("{broken", json.dumps({"run_id": "x", "surprise": 1})):
        (run_dir / "run.json").write_text(damage)
        result = kagent("optimize", "--resume", run_dir, "--out", tmp_path)
        assert result.exit_code == 2 and "run.json: not a run's settings" in " ".join(result.output.split())
        no_traceback(result)


def test_a_read_only_policies_folder_keeps_the_results_and_warns(tmp_path):
    folder = tmp_path / "policies" / "sm_90"
    folder.mkdir(parents=True)
    with read_only(folder):
        result = replay(tmp_path)
    assert result.exit_code == 0, result.output
    assert "learned policies were not saved" in " ".join(result.output.split())
    run_dir = only_run(tmp_path)
    assert (run_dir / "best.cu").is_file() and (run_dir / "report.md").is_file()


def test_a_damaged_policy_file_is_named_and_replaced(tmp_path):
    path = tmp_path / "policies" / "sm_90" / "rowwise.json"
    path.parent.mkdir(parents=True)
    path.write_text("{nope")
    result = replay(tmp_path)
    assert result.exit_code == 0 and "not a policy file kagent can read" in " ".join(result.output.split())
    assert PolicyBook.load(path).runs == 1


def test_two_runs_that_share_a_policy_file_both_keep_their_updates(tmp_path):
    path = tmp_path / "rowwise.json"
    start = PolicyBook()
    first, second = PolicyBook(), PolicyBook()
    first["launch"].update("BLOCK", "256", 1.0)
    first.runs = 1
    second["memory"].update("VEC", "4", 2.0)
    second["launch"].update("BLOCK", "256", 0.5)
    second.runs = 1
    first.merge_into(path, start)
    second.merge_into(path, start)  # started from the same snapshot, saved later: it used to overwrite
    merged = PolicyBook.load(path)
    assert merged.runs == 2
    assert merged["launch"].logits["BLOCK"]["256"] == pytest.approx(0.75)  # 0.5 + 0.25 (rate 0.5 each)
    assert merged["memory"].logits["VEC"]["4"] == pytest.approx(1.0)


def test_concurrent_runs_get_distinct_folders(tmp_path):
    made, failures = [], []

    def make():
        try:
            made.append(new_folder(tmp_path, "agent-s0-20261130"))
        except OSError as exc:  # pragma: no cover - the bug this guards against
            failures.append(exc)

    threads = [threading.Thread(target=make) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures and len(set(made)) == 12


def test_a_failure_before_the_first_evaluation_leaves_no_run_folder(tmp_path):
    task = tmp_path / "task"
    shutil.copytree(ROOT / "tasks" / "level1" / "layernorm", task / "layernorm")
    (task / "layernorm.yaml").write_text(LAYERNORM.read_text().replace("atol: 1.0e-4", "atol: 2.0e-4"))
    result = kagent("optimize", task / "layernorm.yaml", "--executor", "replay", "--recording", RECORDING,
                    "--out", tmp_path / "out")
    assert result.exit_code == 3, result.output
    text = " ".join(result.output.split())
    assert "recorded for another version of task layernorm" in text and "--resume" not in text
    assert not list((tmp_path / "out" / "layernorm").iterdir())


@pytest.mark.parametrize("args, message", [
    (["--seed", str(2**70)], "Invalid value for '--seed'"),
    (["--budget", str(2**64)], "Invalid value for '--budget'"),
    (["--batch", "0"], "Invalid value for '--batch'"),
    (["--time-limit", "-5"], "--time-limit must be a finite number above 0, got -5.0"),
    (["--time-limit", "nan"], "--time-limit must be a finite number above 0, got nan"),
    (["--budget-ms", "inf"], "--budget-ms must be a finite number above 0, got inf"),
    (["--llm-every", "0"], "Invalid value for '--llm-every'"),
])
def test_values_out_of_range_are_exit_2_without_a_traceback(tmp_path, args, message):
    result = replay(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    no_traceback(result)


def test_markup_in_user_text_is_shown_as_text(tmp_path):
    folder = tmp_path / "[/x]" / "[rows] :x:"
    folder.mkdir(parents=True)
    task = folder / "missing.yaml"
    result = kagent("check", task, "--compile-only")
    assert result.exit_code == 2, result.output
    assert str(task) in result.output.replace("\n", "")
    no_traceback(result)


def test_resume_honours_no_llm_and_a_new_endpoint(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[llm]\ntimeout_s = 0.5\nmax_attempts = 1\n')
    env = {"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""}
    first = kagent("optimize", LAYERNORM, "--executor", "replay", "--out", tmp_path, "--budget", 6, "--llm", "m",
                   "--llm-base-url", "http://user:hunter2-secret@127.0.0.1:9/v1", **env)
    assert first.exit_code == 0, first.output
    run_dir = only_run(tmp_path)
    stored = (run_dir / "run.json").read_text() + (run_dir / "report.md").read_text()
    assert "hunter2-secret" not in stored and "http://127.0.0.1:9/v1" in stored
    result = kagent("optimize", "--resume", run_dir, "--out", tmp_path, "--budget", 10, "--no-llm", **env)
    assert result.exit_code == 0, result.output
    assert json.loads((run_dir / "run.json").read_text())["llm"] is None
    assert "LLM failed" not in result.output  # nothing was asked


def test_a_run_json_from_before_the_typed_llm_settings_still_resumes(tmp_path):
    from kernel_agent.optimize.run_config import RunConfig

    flat = {"run_id": "r", "task_file": "t.yaml", "task": "t", "family": "f", "arch": "sm_90",
            "llm_model": "m", "llm_base_url": "http://127.0.0.1:9/v1", "llm_token_budget": None, "llm_every": 3}
    (tmp_path / "run.json").write_text(json.dumps(flat))
    config = RunConfig.load(tmp_path)
    assert config.llm is not None and (config.llm.model, config.llm.every) == ("m", 3)
    (tmp_path / "run.json").write_text(json.dumps({**flat, "llm_model": None}))
    assert RunConfig.load(tmp_path).llm is None

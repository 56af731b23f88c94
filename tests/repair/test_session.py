"""Repair sessions without a GPU: the folder (versions, transcript, recorded checks) and resuming it,
the checks (recorded H200 outcomes first, else compile-side), `--auto` rounds with the fake endpoint,
the blind control arm, and the benchmark's report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernel_agent.check import check, size_labels
from kernel_agent.cli import app
from kernel_agent.llm.client import LLMClient
from kernel_agent.llm.settings import LLMConfig
from kernel_agent.repair.auto import auto_repair, check_current, rounds_used
from kernel_agent.repair.bench import BenchOptions, run_entry, summary, write_report
from kernel_agent.repair.checks import Checker, RecordedChecks, check_key
from kernel_agent.repair.corpus import CorpusError, read_entry
from kernel_agent.repair.fixer import HOW_TO_CONFIGURE, Fixer
from kernel_agent.repair.session import RepairSession, SessionError
from kernel_agent.task import load_task
from sandbox import Outcome, Status, emulator_unavailable
from tests.llm.fake_server import FakeOpenAI, answer, status, truncated
from tests.repair.repl_driver import RECORDED, entry, fix_answer, fixed_source

WRONG = "layernorm__unbiased_variance"  # its broken and fixed versions' H200 outcomes are in RECORDED
BROKEN_BUILD = "histogram__missing_semicolon"


def start(tmp_path, name, checks_from=()):
    e = entry(name)
    kernel = tmp_path / f"{e.task_path.stem}.cu"
    kernel.write_text(e.kernel)
    return e, RepairSession.start(tmp_path / "session", e.task_path, kernel, checks_from=checks_from)


def client(url):
    return LLMClient(LLMConfig(model="test-model", base_url=url, api_key="k", timeout_s=10, max_attempts=1))


def checker(session, e):
    return Checker(session.task, session.recorded, None, include_roots=(e.from_path.parent,))


def rows(session, kind):
    return [r for r in session.transcript() if r["type"] == kind]


# -- the folder ------------------------------------------------------------------------------------


def test_a_session_keeps_every_version_and_resumes_where_it_stopped(tmp_path):
    e, s = start(tmp_path, BROKEN_BUILD)
    assert s.source(1) == e.kernel and s.current.origin == "original"
    s.add(fixed_source(entry(BROKEN_BUILD)), "editor", "by hand")
    s.move("undo")
    outcome = Outcome(status=Status.compile_error, message="boom")
    s.record_check(1, None, outcome, recorded=False)
    with (s.folder / "transcript.jsonl").open("a") as f:
        f.write('{"type": "check", "vers')  # a line cut short by a kill
    again = RepairSession.resume(s.folder)
    assert again.current.number == 1 and [v.origin for v in again.history.versions] == ["original", "editor"]
    assert again.verdicts[1].message == "boom" and again.move("redo").number == 2
    assert again.source() == fixed_source(entry(BROKEN_BUILD))


def test_bad_sessions_and_bad_input_are_refused_with_what_to_do(tmp_path):
    e, s = start(tmp_path, BROKEN_BUILD)
    with pytest.raises(SessionError, match="already holds a session: continue it with --resume"):
        RepairSession.start(s.folder, e.task_path, tmp_path / "histogram.cu")
    with pytest.raises(SessionError, match="holds no repair session"):
        RepairSession.resume(tmp_path)
    with pytest.raises(SessionError, match="cannot read the kernel"):
        RepairSession.start(tmp_path / "other", e.task_path, tmp_path / "missing.cu")
    (s.folder / "versions" / "v001.cu").unlink()
    with pytest.raises(SessionError, match="version files missing: v001.cu"):
        RepairSession.resume(s.folder)


def test_a_corpus_file_without_its_metadata_is_refused(tmp_path):
    bad = tmp_path / "x.cu"
    bad.write_text("// @repair task: tasks/level1/add.yaml\n__global__ void f() {}\n")
    with pytest.raises(CorpusError, match=r"line 2 should be '// @repair from: \.\.\.'"):
        read_entry(bad)


# -- checks ----------------------------------------------------------------------------------------


def test_a_recorded_outcome_answers_for_the_same_kernel_without_building_it(tmp_path):
    e, s = start(tmp_path, WRONG, checks_from=(RECORDED,))
    outcome, recorded = checker(s, e).check(tmp_path / "not-even-a-file.cu", s.source(), {})
    assert recorded and outcome.status is Status.wrong_result and outcome.arch == "sm_90"
    assert outcome.mismatch.size == "rows=1 cols=1" and outcome.mismatch.first_bad[0].expected == pytest.approx(0.6018, 1e-3)
    own = RecordedChecks(tmp_path / "own.jsonl")
    own.add("a", Outcome(status=Status.not_run))  # nothing a GPU would not tell better
    own.add("b", Outcome(status=Status.compile_error, message="x"))
    assert own.get("a") is None and RecordedChecks(tmp_path / "own.jsonl").get("b").message == "x"
    assert check_key(s.task, "x", {"B": "1"}, None) != check_key(s.task, "x", {"B": "2"}, None)


def test_a_kernel_whose_directives_do_not_parse_is_a_compile_error_not_a_crash(tmp_path):
    e, s = start(tmp_path, BROKEN_BUILD)
    s.add(s.source().replace("// @kagent block: 256", "// @kagent block: 256,,"), "editor")
    outcome, _ = check_current(s, checker(s, e))
    assert outcome.status is Status.compile_error and "not usable" in outcome.message


def test_check_at_one_size_is_untimed_and_names_the_sizes_when_the_size_is_unknown(tmp_path):
    e = entry(WRONG)
    task = load_task(e.task_path)
    labels = size_labels(task)
    assert len(labels) > 2 and labels[0] == task.problem().sizes[0].label
    outcome = check(task, e.from_path, size=labels[1])
    assert outcome.status is Status.not_run and outcome.timing is None
    with pytest.raises(ValueError, match=r"no size 'rows=0'; the task's sizes: "):
        check(task, e.from_path, size="rows=0")


# -- the model's rounds ----------------------------------------------------------------------------


def test_auto_repairs_a_wrong_result_in_one_round_with_the_evidence_in_the_prompt(tmp_path):
    e, s = start(tmp_path, WRONG, checks_from=(RECORDED,))
    with FakeOpenAI([answer(fix_answer(e))]) as server:
        result = auto_repair(s, checker(s, e), Fixer(s, client(server.base_url), small=True), rounds=3)
    assert (result.ending, result.rounds, result.outcome.status) == ("repaired", 1, Status.ok)
    (call,) = rows(s, "call")
    prompt = call["messages"][-1]["content"]
    assert "(wrong_result)" in prompt and "- size: rows=1 cols=1" in prompt and "first wrong index: [0, 0]" in prompt
    assert call["role"] == "repair" and call["parsed"] in ("file", "edits") and call["feedback"] == ""
    (result_row,) = rows(s, "result")
    assert result_row == {**result_row, "call": 1, "kernel": "v002", "status": "ok"}
    assert s.current.origin == "fix" and s.current.call == 1 and s.source() == fixed_source(e)


def test_auto_stops_at_a_kernel_that_compiles_when_no_gpu_can_check_it(tmp_path):
    e, s = start(tmp_path, BROKEN_BUILD)
    with FakeOpenAI([answer(fix_answer(e))]) as server:
        result = auto_repair(s, checker(s, e), Fixer(s, client(server.base_url), small=True), rounds=3)
    assert (result.ending, result.rounds, result.outcome.status) == ("pending", 1, Status.not_run)
    prompt = rows(s, "call")[0]["messages"][-1]["content"]
    assert "(compile_error)" in prompt and 'error: expected a ";"' in prompt


@pytest.mark.skipif(emulator_unavailable() is not None, reason=str(emulator_unavailable()))
def test_on_the_emulator_a_wrong_result_is_found_and_repaired_without_a_gpu_or_a_recording(tmp_path):
    """No recorded checks and no GPU: the CPU emulator finds the wrong result, the repair prompt carries
    its first wrong elements, and the fixed kernel is correct there (pending: a GPU must still time it)."""
    e, s = start(tmp_path, WRONG)
    emulating = Checker(s.task, s.recorded, None, include_roots=(e.from_path.parent,), emulate=True)
    with FakeOpenAI([answer(fix_answer(e))]) as server:
        result = auto_repair(s, emulating, Fixer(s, client(server.base_url), small=True), rounds=3)
    assert (result.ending, result.rounds, result.outcome.status) == ("pending", 1, Status.not_run)
    assert result.outcome.message.startswith("correct at")
    prompt = rows(s, "call")[0]["messages"][-1]["content"]
    assert "(wrong_result)" in prompt and "CPU emulator" in prompt and "first wrong" in prompt


def test_rounds_are_counted_across_a_resume_and_an_unusable_answer_is_asked_again(tmp_path):
    e, s = start(tmp_path, BROKEN_BUILD)
    still_broken = fixed_source(e).replace("atomicAdd(&hist[v], 1);", "atomicAdd(&hist[v], 1)")
    script = [answer("I would add a semicolon."), answer(f"```cuda\n{still_broken}```"),
              answer(fix_answer(e))]
    with FakeOpenAI(script) as server:
        first = auto_repair(s, checker(s, e), Fixer(s, client(server.base_url), small=True), rounds=1)
        assert (first.ending, first.rounds, first.outcome.status) == ("failed", 1, Status.compile_error)
        calls = rows(s, "call")
        assert calls[0]["feedback"].startswith("no code found") and "could not be used" in \
            calls[1]["messages"][-1]["content"]
        again = RepairSession.resume(s.folder)
        assert rounds_used(again) == 1
        second = auto_repair(again, checker(again, e), Fixer(again, client(server.base_url), small=True), rounds=2)
    assert (second.ending, second.rounds) == ("pending", 2)
    assert [r["version"] for r in rows(again, "round")] == [1, 2]


def test_a_cut_off_answer_is_not_sent_back_and_the_re_ask_says_how_to_answer_shorter(tmp_path):
    e, s = start(tmp_path, BROKEN_BUILD)
    with FakeOpenAI([truncated("```cuda\n" + e.kernel[: len(e.kernel) // 2]), answer(fix_answer(e))]) as server:
        result = auto_repair(s, checker(s, e), Fixer(s, client(server.base_url), small=True), rounds=1)
    assert result.ending == "pending"
    first, second = rows(s, "call")
    assert first["feedback"].startswith("the answer was cut off") and "SEARCH/REPLACE" not in first["feedback"]
    assert [m["role"] for m in second["messages"]] == ["system", "user"]
    assert second["messages"][1]["content"].startswith(first["messages"][1]["content"])
    assert "could not be used" in second["messages"][1]["content"]


def test_without_a_model_auto_says_how_to_configure_one(tmp_path):
    e, s = start(tmp_path, BROKEN_BUILD)
    result = auto_repair(s, checker(s, e), Fixer(s, None, small=True), rounds=2)
    assert result.ending == "no model" and result.detail == HOW_TO_CONFIGURE and not rows(s, "call")


def test_the_blind_arm_sends_the_kernel_without_the_evidence_and_asks_for_a_whole_file(tmp_path):
    e, s = start(tmp_path, WRONG, checks_from=(RECORDED,))
    with FakeOpenAI([answer(fix_answer(e))]) as server:
        result = auto_repair(s, checker(s, e), Fixer(s, client(server.base_url), small=True), 1, evidence=False)
    assert result.ending == "repaired"
    (call,) = rows(s, "call")
    prompt = call["messages"][-1]["content"]
    assert call["role"] == "blind repair" and "whole corrected kernel file" in prompt
    assert "wrong_result" not in prompt and "rows=1 cols=1" not in prompt


# -- the benchmark ---------------------------------------------------------------------------------


def test_the_benchmark_reports_shares_per_class_and_continues_a_session_it_finds(tmp_path):
    out = tmp_path / "bench"
    wrong, build = entry(WRONG), entry(BROKEN_BUILD)
    (out / WRONG).mkdir(parents=True)  # the wrong kernel's session, with the H200's outcomes recorded in it
    (out / WRONG / "checks.jsonl").write_text(RECORDED.read_text())
    with FakeOpenAI([answer(fix_answer(wrong)), answer(fix_answer(build))]) as server:
        options = BenchOptions(rounds=3)
        results = [run_entry(e, out, None, client(server.base_url), True, options) for e in (wrong, build)]
    assert [(r.ending, r.rounds, r.first) for r in results] == [("repaired", 1, "wrong_result"),
                                                                ("pending", 1, "compile_error")]
    rows_ = {row["class"]: row for row in summary(results, 3)}
    assert rows_["wrong_result"] == {**rows_["wrong_result"], "entries": 1, "within_1": 1, "within_3": 1}
    assert rows_["all"]["pending"] == 1 and rows_["all"]["tokens"] == 60
    report = write_report(out, results, 3, True).read_text()
    assert "| wrong_result | 1 | 1 (100%) | 1 (100%) | 1 (100%) | 0 | 0 | 30 |" in report
    assert json.loads((out / "report.json").read_text())["entries"][0]["name"] == WRONG


def test_an_ask_the_server_refuses_is_its_own_ending_and_the_next_run_asks_again(tmp_path):
    """A local server refuses a prompt over its context with HTTP 400: that entry is not "no model" (none
    configured) nor out of rounds; the bench counts it apart, and running it again asks again."""
    out, build = tmp_path / "bench", entry(BROKEN_BUILD)
    body = {"error": {"message": "Requested tokens (9000) exceed context window of 8192"}}
    with FakeOpenAI([status(400, body=body)]) as server:
        refused = run_entry(build, out, None, client(server.base_url), True, BenchOptions(rounds=2))
    assert (refused.ending, refused.rounds) == ("ask failed", 0) and "8192" in refused.detail
    row = {r["class"]: r for r in summary([refused], 2)}["all"]
    assert (row["ask_failed"], row["pending"], row["within_2"]) == (1, 0, 0)
    with FakeOpenAI([answer(fix_answer(build))]) as server:
        again = run_entry(build, out, None, client(server.base_url), True, BenchOptions(rounds=2))
    assert (again.ending, again.rounds) == ("pending", 1)


def test_the_cli_repairs_with_auto_and_exits_0_only_with_a_correct_kernel(tmp_path):
    e = entry(WRONG)
    kernel = tmp_path / "layernorm.cu"
    kernel.write_text(e.kernel)
    config = tmp_path / "llm.toml"
    config.write_text("[llm]\ntimeout_s = 10\nmax_attempts = 1\n")
    env = {"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": "", "KAGENT_LLM_MODEL": ""}
    base = ["repair", str(e.task_path), str(kernel), "--executor", "compile-only", "--checks", str(RECORDED)]
    with FakeOpenAI([answer(fix_answer(e))]) as server:
        result = CliRunner().invoke(app, [*base, "--session", str(tmp_path / "a"), "--auto", "2", "--llm", "m",
                                          "--llm-base-url", server.base_url], env=env)
    assert result.exit_code == 0, result.output
    assert "repaired after 1 round(s)" in result.output
    result = CliRunner().invoke(app, [*base, "--session", str(tmp_path / "b"), "--auto", "2", "--no-llm"], env=env)
    assert result.exit_code == 1 and "no model after 0 round(s)" in result.output
    assert "the model is switched off (--no-llm)" in result.output
    result = CliRunner().invoke(app, ["repair", "--resume", str(tmp_path / "a"), str(e.task_path)], env=env)
    assert result.exit_code == 2 and "give no task or kernel with it" in result.output
    result = CliRunner().invoke(app, ["repair", str(e.task_path)], env=env)
    assert result.exit_code == 2 and "give a task file and a kernel file" in result.output
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["repair-bench", str(tmp_path / "empty"), "--no-llm"], env=env)
    assert result.exit_code == 2 and "no corpus files" in result.output
    result = CliRunner().invoke(app, ["repair-bench", str(tmp_path), "--no-llm"], env=env)  # layernorm.cu is no entry
    assert result.exit_code == 2 and "layernorm.cu: line 1 should be '// @repair task: ...'" in result.output


def test_a_session_copied_to_a_checkout_elsewhere_finds_its_task_again(tmp_path, monkeypatch):
    """The benchmark's folders travel between the model's machine and the GPU's, whose checkouts lie
    at other paths: a session naming /elsewhere/tasks/level1/histogram.yaml resumes from
    ./tasks/level1/histogram.yaml, and then names that file."""
    from kernel_agent.repair.session import task_file_of
    from tests.paths import ROOT

    e, s = start(tmp_path, BROKEN_BUILD)
    info = json.loads((s.folder / "session.json").read_text())
    moved = "/elsewhere/checkout/" + str(e.task_path.resolve().relative_to(ROOT))
    (s.folder / "session.json").write_text(json.dumps({**info, "task": moved}))
    monkeypatch.chdir(ROOT)
    again = RepairSession.resume(s.folder)
    assert again.task.name == e.task_path.stem
    assert json.loads((s.folder / "session.json").read_text())["task"] == str(e.task_path.resolve())
    assert task_file_of("/nowhere/at/all.yaml", ROOT) == Path("/nowhere/at/all.yaml")  # the error names it
    (s.folder / "session.json").write_text(json.dumps({**info, "task": "/nowhere/at/all.yaml"}))
    with pytest.raises(SessionError, match="all.yaml"):
        RepairSession.resume(s.folder)

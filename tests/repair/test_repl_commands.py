"""The repair REPL's commands, driven without a terminal (a scripted reader, a recording console):
edit in $EDITOR, watch the kernel file, knobs, goto and diff, completion, and the messages for bad input."""

from __future__ import annotations

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.console import Console

from kernel_agent.repair.checks import Checker
from kernel_agent.repair.fixer import Fixer
from kernel_agent.repair.repl import CommandCompleter, Repl
from kernel_agent.repair.session import RepairSession
from tests.llm.fake_server import FakeOpenAI, answer
from tests.repair.repl_driver import RECORDED, entry, fix_answer
from tests.repair.test_session import client

NAME = "layernorm__unbiased_variance"  # a kernel with knobs


def repl(tmp_path, lines, url=None, recorded=()):
    e = entry(NAME)
    kernel = tmp_path / "layernorm.cu"
    kernel.write_text(e.kernel)
    session = RepairSession.start(tmp_path / "session", e.task_path, kernel, checks_from=recorded)
    script = iter(lines)

    def read(prompt):
        try:
            return next(script)
        except StopIteration:
            raise EOFError from None

    console = Console(record=True, width=200)
    checker = Checker(session.task, session.recorded, None)
    model = client(url) if url else None
    return Repl(session, checker, Fixer(session, model, small=True), console, read), console


def test_edit_knob_goto_and_diff_make_and_compare_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("EDITOR", "sed -i s/(float)(cols\\ -\\ 1)/(float)cols/")
    monkeypatch.delenv("VISUAL", raising=False)
    r, console = repl(tmp_path, ["edit", "knob BLOCK 128", "knob NOPE 1", "knobs", "goto 1", "diff 2", "goto 9",
                                 "versions", "bogus", "check 99", "quit"])
    assert r.run() == 1
    text = console.export_text()
    versions = r.session.history.versions
    assert [v.origin for v in versions] == ["original", "editor", "knob"] and versions[2].knobs == {"BLOCK": "128"}
    assert "(float)(cols - 1)" not in r.session.source(2) and r.session.source(3) == r.session.source(2)
    assert "no knob NOPE; the kernel's knobs: BLOCK, VEC, ROWS_PER_BLOCK" in text
    assert "BLOCK: 256 128 512 1024  set: 128" in text
    assert "+    const float rstd = rsqrtf(row_sum(q, red[1]) / (float)(cols - 1) + eps);" in text  # v002 -> v001
    assert "goto needs a version number from 1 to 3" in text and "unknown command 'bogus'" in text
    assert "no size 99: give a number from 1 to" in text
    assert "* v001 original" in text and "v003 from v002 knob: BLOCK=128 -> not_run" in text


def test_watch_takes_each_save_of_the_kernel_file_as_a_version_until_interrupted(tmp_path, monkeypatch):
    r, console = repl(tmp_path, ["watch", "quit"])
    kernel = tmp_path / "layernorm.cu"
    polls = []

    def poll(seconds):  # the watch loop's pause: save the file once, then Ctrl-C once the save is checked
        polls.append(seconds)
        if len(polls) == 2:
            kernel.write_text(kernel.read_text().replace("(float)(cols - 1)", "(float)cols"))
        if any(row["type"] == "check" and row["version"] == 2 for row in r.session.transcript()):
            raise KeyboardInterrupt
        assert len(polls) < 100, "the save was never taken"

    monkeypatch.setattr("kernel_agent.repair.repl._wait", poll)
    r.run(check_first=False)
    text = console.export_text()
    assert r.session.current.origin == "file" and "(float)(cols - 1)" not in r.session.source()
    assert f"watching {kernel}" in text and "stopped watching" in text and "not_run" in text


def test_completion_offers_commands_sizes_knob_names_and_values(tmp_path):
    r, _ = repl(tmp_path, [])
    completer = CommandCompleter(r)

    def complete(text):
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert complete("ch") == ["check"] and "redo" in complete("re")
    assert complete("check ")[:2] == ["1", "2"] and r.sizes[0] in complete("check ")
    assert complete("knob B") == ["BLOCK"] and complete("knob BLOCK 1") == ["BLOCK 128", "BLOCK 1024"]
    assert complete("goto ") == ["1"]


def test_optimize_runs_kagent_optimize_from_the_current_version(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr("kernel_agent.repair.repl.subprocess.run", lambda command, check: ran.append(command))
    r, console = repl(tmp_path, ["optimize --budget 12 --no-llm"])
    r.run(check_first=False)
    (command,) = ran
    assert command[1:5] == ["-m", "kernel_agent", "optimize", r.session.info.task]
    assert command[5:] == ["--kernel", str(r.session.folder / "v001.cu"), "--budget", "12", "--no-llm"]
    assert (r.session.folder / "v001.cu").read_text() == r.session.source()


def test_explain_shows_the_models_words_and_a_rejected_fix_leaves_the_version(tmp_path):
    cause = "The variance divides by cols - 1: at cols = 1 that is 0, so the result is NaN."
    with FakeOpenAI([answer(cause), answer(fix_answer(entry(NAME)))]) as server:
        r, console = repl(tmp_path, ["explain", "fix", "n", "quit"], server.base_url, (RECORDED,))
        assert r.run() == 1
    text = console.export_text()
    assert cause in text and "rejected; the current version stays" in text and len(r.session.history.versions) == 1
    calls = [row for row in r.session.transcript() if row["type"] == "call"]
    assert [c["role"] for c in calls] == ["explain", "repair"]
    asked = calls[0]["messages"][-1]["content"]
    assert "Explain why." in asked and "(wrong_result)" in asked and "```cuda block" not in asked.split("## Your answer")[1]
    decisions = [row for row in r.session.transcript() if row["type"] == "decision"]
    assert decisions == [{**decisions[0], "call": 2, "accepted": False}]


def test_help_lists_every_command_with_its_arguments(tmp_path):
    r, console = repl(tmp_path, ["help"])
    r.run(check_first=False)
    text = console.export_text()
    for usage in ("check [SIZE]", "fix:", "explain:", "edit:", "watch:", "knob NAME VALUE", "undo:", "redo:",
                  "diff [N]", "save [PATH]", "optimize [OPTIONS]", "quit:", "goto N", "versions:", "sizes:", "show:"):
        assert usage in text, usage

"""A person at a terminal: `kagent repair` driven through a real pseudo-terminal (pexpect). Without a
GPU, the checks are the H200's recorded ones (tests/data/repair_checks/h200.jsonl) and compile-side
ones; the model is the fake endpoint."""

from __future__ import annotations

import re

from tests.llm.fake_server import FakeOpenAI, answer
from tests.repair.repl_driver import RECORDED, Terminal, entry, fix_answer, fixed_source

WRONG = "layernorm__unbiased_variance"


def test_a_person_reads_the_evidence_takes_the_models_fix_undoes_redoes_saves_and_resumes(tmp_path):
    e = entry(WRONG)
    kernel = tmp_path / "layernorm.cu"
    kernel.write_text(e.kernel)
    folder = tmp_path / "session"
    args = ["--executor", "compile-only", "--checks", str(RECORDED)]
    with FakeOpenAI([answer(fix_answer(e))]) as server:
        term = Terminal([str(e.task_path), str(kernel), "--session", str(folder), *args], tmp_path, server.base_url)
        shown = term.until(r"v001>")
        assert "checks: compile-side only (no GPU here" in shown and "model: test-model" in shown
        assert re.search(r"^wrong_result \(recorded earlier\): wrong y at rows=1 cols=1", shown, re.M), shown
        assert re.search(r"index\s+expected\s+got\s*\r?\n\s*\[0, 0\]\s+0\.601816\s+nan", shown), shown
        assert "1 are NaN where the reference is not (never written?)" in shown

        term.command("check 2", r"wrong_result at rows=1 cols=1 only \(recorded earlier\)")  # as the H200 gave it

        shown = term.command("fix", r"\+.*/ \(float\)cols", r"accept this fix")
        assert re.search(r"^-.*\(float\)\(cols - 1\)", shown, re.M), shown
        shown = term.command("y", r"time: [\d.]+ ms, [\d.]+x the baseline kernel")
        assert "v002 (fix: the model's fix (call 1))" in shown
        assert re.search(r"^ok \(recorded earlier\): correct on every size", shown, re.M), shown

        term.command("undo", r"now at v001 \(original.*last verdict: wrong_result")
        term.command("show", r"\s+1 \| // @kagent entry: layernorm")
        term.command("redo", r"now at v002 \(fix")
        term.child.send("vers")  # completion of a command name: the menu offers it, Tab takes it
        term.until("versions")
        term.child.send("\t")
        term.until("ions")
        term.command("", r"\* v002 from v001 fix: the model's fix \(call 1\) -> ok")
        term.command("save", "saved v002 to")
        assert kernel.read_text() == fixed_source(e)
        term.child.sendline("quit")
        assert term.finish() == 0

    term = Terminal(["--resume", str(folder), *args], tmp_path)  # no model this time
    assert "model: none" in term.until(r"ok \(recorded earlier\)")
    term.until(r"v002>")
    term.command("diff", r"--- v001\s*\r?\n\+\+\+ v002")
    term.command("explain", "the current version is correct: nothing to fix")
    term.command("undo", r"now at v001")
    term.command("fix", r"the model is switched off \(--no-llm\)")
    term.child.sendline("quit")
    assert term.finish() == 1  # it stopped at the wrong version
    history = (folder / "history").read_text()  # both sessions' commands, for the up arrow; not the y/N answer
    assert "\n+check 2\n" in history and "\n+redo\n" in history and "\n+y\n" not in history

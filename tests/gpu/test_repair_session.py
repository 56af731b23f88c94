"""`kagent repair` on the GPU, through a pseudo-terminal: for a compile error, a wrong result, an
out-of-bounds write, a race and a hang, the session shows the failure with its evidence, takes the fix
(from the fake endpoint), and the fixed version passes in the same session: the sandbox serves again
after each failure."""

from __future__ import annotations

import re

import pytest

from tests.llm.fake_server import FakeOpenAI, answer
from tests.repair.repl_driver import Terminal, entry, fix_answer

pytestmark = pytest.mark.gpu

CASES = [
    ("histogram__missing_semicolon", r"compile_error", r">>\s+\d+ \|\s+if \(v >= 0"),
    ("layernorm__unbiased_variance", r"wrong_result", r"index\s+expected\s+got"),
    ("add__off_by_one_bound", r"wrong_result", r"out-of-bounds write|past the end"),
    ("transpose__missing_syncthreads", r"nondeterministic|wrong_result", r"differ"),
    ("add__stride_uses_block_index", r"timeout", r"line \d+: // @kagent grid"),
]


@pytest.mark.parametrize("name, status, evidence", CASES, ids=[c[0] for c in CASES])
def test_a_gpu_session_shows_the_failure_and_passes_after_the_fix(tmp_path, name, status, evidence):
    e = entry(name)
    kernel = tmp_path / f"{e.task_path.stem}.cu"
    kernel.write_text(e.kernel)
    with FakeOpenAI([answer(fix_answer(e))]) as server:
        term = Terminal([str(e.task_path), str(kernel), "--session", str(tmp_path / "session"), "--executor", "gpu"],
                        tmp_path, server.base_url, timeout=300)
        shown = term.until(r"v001>")
        print(f"\nSESSION {name}:\n{shown}")
        assert re.search(rf"^({status})", shown, re.M), shown
        assert re.search(evidence, shown), shown
        term.command("fix", r"@@", r"accept this fix")
        shown = term.command("y", r"time: [\d.]+ ms, [\d.]+x the baseline kernel")
        print(shown)
        assert re.search(r"^ok: correct on every size", shown, re.M), shown
        term.child.sendline("quit")
        assert term.finish() == 0

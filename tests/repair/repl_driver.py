"""Drive `kagent repair` through a real pseudo-terminal, as a person at a terminal would (pexpect), with
the fake OpenAI endpoint answering `fix`. Used by the CPU test (recorded H200 checks) and the GPU test."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pexpect

from kernel_agent.llm.answers import parse_answer
from kernel_agent.repair.corpus import Entry
from tests.paths import ROOT
from tests.repair.corpus import CORPUS, read_entry

RECORDED = ROOT / "tests" / "data" / "repair_checks" / "h200.jsonl"
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|[\x07\x08]")


def entry(name: str) -> Entry:
    return read_entry(CORPUS / f"{name}.cu")


def fix_answer(e: Entry) -> str:
    """What the fake model answers to `fix`: one sentence and the working kernel the broken one came from."""
    return f"The cause: {e.meta['bug']}.\n```cuda\n{e.from_path.read_text()}```\n"


def fixed_source(e: Entry) -> str:
    """The version a session makes of `fix_answer` (as the recorded checks know it)."""
    source = parse_answer(fix_answer(e), e.kernel).source
    assert source is not None
    return source


class Terminal:
    """`kagent repair ...` in a pty; `until(pattern)` waits for it in the output, colours stripped."""

    def __init__(self, args: list[str], tmp_path: Path, base_url: str | None = None, timeout: float = 120):
        config = tmp_path / "llm.toml"
        config.write_text("[llm]\ntimeout_s = 20\nmax_attempts = 1\n")
        env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", OPENAI_API_KEY="", KAGENT_CONFIG=str(config),
                   PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", COLUMNS="200")
        env.pop("KAGENT_LLM_MODEL", None)
        env.pop("OPENAI_BASE_URL", None)
        model = ["--llm", "test-model", "--llm-base-url", base_url] if base_url else ["--no-llm"]
        self.child = pexpect.spawn(sys.executable, ["-m", "kernel_agent", "repair", *args, *model], env=env,
                                   cwd=str(ROOT), encoding="utf-8", timeout=timeout, dimensions=(60, 200))
        self.seen = ""

    def until(self, pattern: str) -> str:
        """The text (without colours) up to the first match of `pattern` from here on."""
        while True:
            clean = _ANSI.sub("", self.seen)
            found = re.search(pattern, clean)
            if found:
                self.seen = clean[found.end():]
                return clean[: found.end()]
            try:
                self.seen += self.child.read_nonblocking(4096, timeout=self.child.timeout)
            except pexpect.TIMEOUT:
                raise AssertionError(f"no {pattern!r} within {self.child.timeout} s; the screen:\n{clean[-3000:]}")
            except pexpect.EOF:
                raise AssertionError(f"kagent repair ended before {pattern!r}; the screen:\n{clean[-3000:]}")

    def command(self, line: str, expect: str, prompt: str = r"v\d{3}>") -> str:
        """Type `line` at the prompt and wait for `expect` in what it prints, then for the next prompt;
        the screen's text up to that prompt. (The terminal redraws the prompt line as it is typed, so a
        prompt seen before the expected output proves nothing.)"""
        self.child.sendline(line)
        shown = self.until(expect)
        return shown + self.until(prompt)

    def finish(self) -> int:
        self.child.expect(pexpect.EOF)
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else -1

"""The first kernel of a task that has none (e.g. a KernelBench import): the model writes it whole from what
the task computes (`prompts/write_kernel.j2`), and kagent repairs it with the evidence of each failure, as
`kagent repair --auto` does, until it is correct (on a GPU) or compiles and plans at every size (without
one). It becomes the run's start: the kernel its speedups are measured against, with the library (torch
eager for an import) timed beside it. The session is kept in the run folder's `first/`, so a resumed run
goes on from its last version, and its calls join the trajectories fine-tuning reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sandbox import Status

from ..llm.answers import parse_answer
from ..llm.client import LLMClient
from ..llm.failures import LLMError
from ..llm.grammar import KERNEL_GRAMMAR
from ..llm.prompts import render, task_context
from ..repair.auto import auto_repair
from ..repair.checks import Checker, SharedGpu
from ..repair.fixer import Fixer
from ..repair.session import RepairSession
from ..task import Task

FIRST = "first"  # the run folder's repair session of the first kernel
ASKS = 2  # asks for a first answer that holds a kernel file at all


class FirstKernelError(RuntimeError):
    """The model gave no usable first kernel; the message says what happened and where the session is."""


def first_kernel(task_file: Path, task: Task, folder: Path, client: LLMClient, small: bool, arch: str,
                 gpu: SharedGpu | None, rounds: int, say: Callable[[str], None]) -> Path:
    """The path of the first kernel's last version once it is correct (or, without a GPU, compiles)."""
    session_dir = folder / FIRST
    if (session_dir / "session.json").exists():
        session = RepairSession.resume(session_dir)
    else:
        session = _first_answer(task_file, task, session_dir, client, small, arch, say)
    checker = Checker(session.task, session.recorded, gpu, arch)
    result = auto_repair(session, checker, Fixer(session, client, small, arch), rounds, True, say)
    if result.outcome.status not in (Status.ok, Status.not_run):
        raise FirstKernelError(f"the model's first kernel is still {result.outcome.status.value} after "
                               f"{result.rounds} repair round(s){': ' + result.detail if result.detail else ''}; "
                               f"its session: {session_dir} (kagent repair --resume {session_dir})")
    return session.path()


def _first_answer(task_file: Path, task: Task, session_dir: Path, client: LLMClient, small: bool, arch: str,
                  say: Callable[[str], None]) -> RepairSession:
    system = render("system_small.j2" if small else "system.j2", arch=arch)
    prompt = render("write_kernel.j2", task=task_context(task))
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    rows = []
    for ask in range(1, ASKS + 1):
        say(f"asking the model for a first kernel of {task.name}" + (f" (ask {ask})" if ask > 1 else ""))
        try:
            c = client.complete(messages, grammar=KERNEL_GRAMMAR if small else None)
        except LLMError as exc:
            raise FirstKernelError(f"the model did not answer: {exc}") from None
        parsed = parse_answer(c.text, "", finished=c.finish_reason != "length")
        rows.append({"type": "call", "role": "first kernel", "round": 0, "messages": messages, "text": c.text,
                     "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                     "finish_reason": c.finish_reason, "seconds": round(c.seconds, 3), "parsed": parsed.kind,
                     "feedback": parsed.feedback})
        if parsed.source is not None:
            session_dir.mkdir(parents=True, exist_ok=True)
            answer = session_dir / "answer.cu"
            answer.write_text(parsed.source, encoding="utf-8")
            session = RepairSession.start(session_dir, task_file, answer, call=len(rows))  # its verdicts join it
            for row in rows:
                session.log({**row, "call": session.next_call(), "version": None,
                             "kernel": "v001" if row is rows[-1] else None})
            return session
        messages = [*messages, {"role": "assistant", "content": c.text},
                    {"role": "user", "content": render("repair_unparsed.j2", feedback=parsed.feedback, small=small,
                                                       short=True)}]
    raise FirstKernelError(f"no kernel file in the model's {ASKS} answers: {rows[-1]['feedback']}")

"""Judging a model's answer to an exported prompt, for RL: the answer is read as kagent read answers to
that prompt (slot fills for a port, a file or edits against the parent's text otherwise), the kernel is
checked (a recorded check first, else the GPU, else compile-only), and the answers to one prompt are
rewarded side by side (`rewards.group_rewards`).

`KernelReward` is a reward function as TRL's GRPO trainer calls it: `(prompts, completions, **columns)`
with the dataset's other columns (`task_file`, `role`, `parent`, `base_fills`) as lists.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..llm.answers import ParsedAnswer, parse_answer
from ..llm.porting import fills_reader
from ..repair.checks import Checker, RecordedChecks, SharedGpu
from ..skeletons import library
from ..task import Task, TaskError, load_task
from .rewards import NO_KERNEL, group_rewards


def locate_task(task_file: str, roots: Sequence[Path]) -> Path:
    """The task file itself, else the first file of its name under `roots` (a run recorded on another
    machine names a path that is not here); TaskError when there is none."""
    path = Path(task_file)
    if path.is_file():
        return path
    found = [p for root in roots for p in sorted(root.rglob(path.name))]
    if not found:
        raise TaskError(f"{task_file}: no such task file, and none named {path.name} under "
                        f"{', '.join(map(str, roots))}")
    return found[0]


class Judge:
    """Checks answers to exported prompts. `task_roots`: folders searched for a task file by its name
    when the path a run recorded does not exist here (runs recorded on another machine)."""

    def __init__(self, workdir: Path, recorded: RecordedChecks, gpu: SharedGpu | None = None,
                 arch: str | None = None, task_roots: Sequence[Path] = (Path("tasks"),), emulate: bool = False):
        self.workdir, self.recorded, self.gpu, self.arch, self.emulate = workdir, recorded, gpu, arch, emulate
        self.task_roots = tuple(task_roots)
        self._tasks: dict[str, Task] = {}

    def task(self, task_file: str) -> Task:
        """The task a prompt was written for; TaskError when it cannot be found here."""
        if task_file not in self._tasks:
            self._tasks[task_file] = load_task(locate_task(task_file, self.task_roots))
        return self._tasks[task_file]

    def read(self, task: Task, role: str, parent: str, base_fills: dict[str, str], text: str) -> ParsedAnswer:
        """The answer as a kernel file, read as the prompt's role reads it."""
        if role.startswith("port:"):
            skeleton = library()[role.removeprefix("port:")]
            header = f"kagent train: skeleton {skeleton.name}, task {task.name}, slots by the model"
            parsed, _port = fills_reader(skeleton, task, base_fills, header)(text, True)
            return parsed
        return parse_answer(text, parent)

    def verdict(self, task_file: str, role: str, parent: str, base_fills: dict[str, str],
                text: str) -> tuple[str, float | None]:
        """(status, median ms when correct and timed) of one answer; NO_KERNEL when it gives no kernel."""
        task = self.task(task_file)
        parsed = self.read(task, role, parent, base_fills, text)
        if parsed.source is None:
            return NO_KERNEL, None
        digest = hashlib.sha256(parsed.source.encode()).hexdigest()[:16]
        path = self.workdir / task.name / f"{digest}.cu"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(parsed.source, encoding="utf-8")
        outcome, _recorded = Checker(task, self.recorded, self.gpu, self.arch,
                                     emulate=self.emulate).check(path, parsed.source, {})
        ms = outcome.timing.median_ms if outcome.correct and outcome.timing is not None else None
        return outcome.status.value, ms


def _text(message: Any) -> str:
    """A completion as TRL hands it: a string, or a list of chat messages (the assistant's last)."""
    if isinstance(message, str):
        return message
    return str(message[-1]["content"]) if message else ""


class KernelReward:
    """TRL reward function: each completion checked by `judge`, rewarded within the group of
    completions to the same prompt. A prompt whose task cannot be found gets NO_KERNEL's reward for
    every answer, and the reason is kept in `problems` (training goes on)."""

    __name__ = "kagent_kernel_reward"  # TRL names the reward in its logs by the function's __name__

    def __init__(self, judge: Judge):
        self.judge = judge
        self.problems: list[str] = []
        self.verdicts: list[tuple[str, float | None]] = []  # every verdict given, in order (for reports and tests)

    def __call__(self, prompts: list[Any], completions: list[Any], task_file: list[str], role: list[str],
                 parent: list[str], base_fills: list[str] | None = None, **_columns: Any) -> list[float]:
        verdicts: list[tuple[str, float | None]] = []
        for i, completion in enumerate(completions):
            fills = json.loads(base_fills[i]) if base_fills and base_fills[i] else {}
            try:
                verdicts.append(self.judge.verdict(task_file[i], role[i], parent[i], fills, _text(completion)))
            except (TaskError, KeyError) as exc:  # KeyError: a skeleton this library does not have
                self.problems.append(f"{task_file[i]} ({role[i]}): {exc}")
                verdicts.append((NO_KERNEL, None))
        self.verdicts += verdicts
        groups: dict[str, list[int]] = {}
        for i, prompt in enumerate(prompts):
            groups.setdefault(json.dumps(prompt, sort_keys=True), []).append(i)
        rewards = [0.0] * len(completions)
        for members in groups.values():
            for i, reward in zip(members, group_rewards([verdicts[i] for i in members])):
                rewards[i] = reward
        return rewards

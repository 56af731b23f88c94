"""What the search chooses among: a kernel file of the task and a value for each of its knobs."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import Kernel, Knob, load_kernel

from ..seams import Candidate
from ..task import Task
from .generic import apply_generic, generic_knobs


@dataclass
class KernelSpace:
    label: str
    kernel: Kernel
    knobs: dict[str, Knob]  # declared and generic, by name

    @property
    def tunable(self) -> bool:
        return any(len(k.values) > 1 for k in self.knobs.values())

    @property
    def size(self) -> int:
        total = 1
        for knob in self.knobs.values():
            total *= len(knob.values)
        return total


@dataclass
class Space:
    """Every kernel file of a task with its knobs; `generic` adds the edits every kernel can take."""

    kernels: dict[str, KernelSpace] = field(default_factory=dict)
    include_roots: tuple[Path, ...] | None = None  # what every kernel may include: the task's kernel folders

    @classmethod
    def of_task(cls, task: Task, generic: bool = True) -> Space:
        space = cls(include_roots=task.kernel_folders())
        for label, path in task.kernel_paths().items():
            space.add_kernel(label, path, generic)
        return space

    @property
    def size(self) -> int:
        return sum(k.size for k in self.kernels.values())

    def add_kernel(self, label: str, path: Path, generic: bool) -> KernelSpace:
        """A kernel file of the task, or one written during the run (by an LLM): its knobs become
        tunable. Raises KernelError for a file without usable directives."""
        kernel = load_kernel(path, include_roots=self.include_roots)  # an LLM's file may include the task's
        knobs = dict(kernel.directives.knobs)
        if generic:
            extra = generic_knobs(kernel.source, kernel.directives.entries[0].block, kernel.knobs)
            knobs.update({k.name: k for k in extra if k.name not in knobs})  # the file's own knob wins
        self.kernels[label] = KernelSpace(label, kernel, knobs)
        return self.kernels[label]

    def default(self, kernel: str) -> Candidate:
        return Candidate.make(kernel, {k.name: k.default for k in self.kernels[kernel].knobs.values()})

    def specialist_knobs(self, kernel: str, specialist: str) -> list[Knob]:
        return [k for k in self.kernels[kernel].knobs.values() if k.specialist == specialist]

    def random(self, rng: random.Random, kernel: str | None = None) -> Candidate:
        label = kernel or rng.choices(list(self.kernels), [k.size for k in self.kernels.values()])[0]
        return Candidate.make(label, {k.name: rng.choice(k.values) for k in self.kernels[label].knobs.values()})

    def all(self):
        """Every candidate, kernel by kernel in declaration order (the exhaustive order)."""
        for label, ks in self.kernels.items():
            names = list(ks.knobs)
            for values in itertools.product(*(ks.knobs[n].values for n in names)):
                yield Candidate.make(label, dict(zip(names, values)))

    def contains(self, candidate: Candidate) -> bool:
        ks = self.kernels.get(candidate.kernel)
        return ks is not None and set(candidate.values) == set(ks.knobs) and all(
            v in ks.knobs[k].values for k, v in candidate.knobs)

    def build(self, candidate: Candidate) -> Kernel:
        """The kernel to compile: generic edits applied to the source, declared knobs as -D macros."""
        ks = self.kernels[candidate.kernel]
        base = ks.kernel
        source, flags, declared = apply_generic(base.source, candidate.values, base.directives.entries[0].block)
        return Kernel(path=base.path, source=source, directives=base.directives,
                      knobs=base.directives.resolve_knobs(declared), flags=[*base.flags, *flags],
                      include_roots=base.include_roots)

    def self_contained(self, candidate: Candidate) -> str:
        """The candidate as one kernel file: edits applied, chosen values first (the defaults), flags kept."""
        kernel = self.build(candidate)
        chosen = candidate.values
        lines = []
        for line in kernel.source.splitlines():
            for name, knob in kernel.directives.knobs.items():
                if line.lstrip().startswith("// @kagent knob") and f" {name} [" in line:
                    ordered = [chosen[name]] + [v for v in knob.values if v != chosen[name]]
                    line = f"// @kagent knob {name} [{knob.specialist}]: {' '.join(ordered)}"
            lines.append(line)
        header = []
        own = set(kernel.directives.flags)
        if extra := [f for f in kernel.flags if f not in own]:
            header.append(f"// @kagent flags: {' '.join(extra)}")
        header.append(f"// kagent: best candidate {candidate.label()}")
        return "\n".join(header + lines) + "\n"


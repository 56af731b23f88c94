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
    kernel: Kernel | None  # None: a recorded space without a source (another tuner's cache)
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
    members: tuple[Candidate, ...] | None = None  # a recorded space: exactly these (None: every knob product)
    _member_set: frozenset[Candidate] = field(default_factory=frozenset, repr=False)

    @classmethod
    def recorded(cls, label: str, knobs: dict[str, Knob], members: list[Candidate]) -> Space:
        """The configurations another tuner recorded for a kernel kagent has no source of: searched and
        replayed, never built. Its restrictions hold: a configuration it did not record is not a member."""
        space = cls(kernels={label: KernelSpace(label, None, knobs)}, members=tuple(members))
        space._member_set = frozenset(members)
        return space

    @classmethod
    def of_task(cls, task: Task, generic: bool = True) -> Space:
        space = cls(include_roots=task.kernel_folders())
        for label, path in task.kernel_paths().items():
            space.add_kernel(label, path, generic)
        return space

    @property
    def size(self) -> int:
        return len(self.members) if self.members is not None else sum(k.size for k in self.kernels.values())

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
        if self.members is not None:
            return rng.choice(self.members if kernel is None else [c for c in self.members if c.kernel == kernel])
        label = kernel or rng.choices(list(self.kernels), [k.size for k in self.kernels.values()])[0]
        return Candidate.make(label, {k.name: rng.choice(k.values) for k in self.kernels[label].knobs.values()})

    def all(self):
        """Every candidate, kernel by kernel in declaration order (the exhaustive order)."""
        if self.members is not None:
            yield from self.members
            return
        for label, ks in self.kernels.items():
            names = list(ks.knobs)
            for values in itertools.product(*(ks.knobs[n].values for n in names)):
                yield Candidate.make(label, dict(zip(names, values)))

    def source_of(self, label: str) -> Kernel:
        """The kernel file behind a label; a recorded space has none (it is replayed, never built)."""
        kernel = self.kernels[label].kernel
        if kernel is None:
            raise ValueError(f"{label} is a recorded configuration space without a kernel source: it can only "
                             "be replayed")
        return kernel

    def contains(self, candidate: Candidate) -> bool:
        if self.members is not None:
            return candidate in self._member_set
        ks = self.kernels.get(candidate.kernel)
        return ks is not None and set(candidate.values) == set(ks.knobs) and all(
            v in ks.knobs[k].values for k, v in candidate.knobs)

    def build(self, candidate: Candidate) -> Kernel:
        """The kernel to compile: generic edits applied to the source, declared knobs as -D macros."""
        base = self.source_of(candidate.kernel)
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


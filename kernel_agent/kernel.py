"""A kernel file bound to a task: its directives, chosen knobs, flags, and its launches per size."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from sandbox import (
    Buffer, CompileJob, CompileResult, DirectiveError, Directives, KernelResources, LaunchPlanError, Program,
    SizeCase, compile_many, evaluate, parse_directives, plan,
)

from .task import Task

REGISTERS_PER_SM = 65536
MAX_KERNEL_FILE_BYTES = 16 << 20  # read no bigger file (the compiler's own source cap is smaller still)
MAX_COMBINATIONS = 10_000  # commands that enumerate every knob combination refuse more (--max-combinations)
# Largest shared memory one block may opt in to, by architecture (bytes).
SMEM_OPTIN = {"sm_70": 98304, "sm_75": 65536, "sm_80": 166912, "sm_86": 101376, "sm_87": 166912,
              "sm_89": 101376, "sm_90": 232448, "sm_100": 232448, "sm_120": 101376}


class KernelError(ValueError):
    """A kernel file that cannot be used with its task (missing, no entry, bad knob...)."""


@dataclass
class Kernel:
    path: Path
    source: str
    directives: Directives
    knobs: dict[str, str]
    flags: list[str] = field(default_factory=list)
    include_roots: tuple[Path, ...] = ()  # folders whose files it may #include: the task's kernel folders

    @property
    def entries(self) -> list[str]:
        return [e.name for e in self.directives.entries]

    def with_knobs(self, knobs: Mapping[str, str]) -> "Kernel":
        """The same file with other knob values (defaults for those not given); no re-reading."""
        try:
            chosen = self.directives.resolve_knobs(knobs)
        except DirectiveError as exc:
            raise KernelError(f"{self.path}: {exc}") from None
        return Kernel(path=self.path, source=self.source, directives=self.directives, knobs=chosen,
                      flags=list(self.flags), include_roots=self.include_roots)

    @property
    def combinations(self) -> int:
        """How many knob combinations `knob_space` yields (counted, not enumerated)."""
        return math.prod(len(k.values) for k in self.directives.knobs.values())

    def knob_space(self) -> Iterator[dict[str, str]]:
        """Every combination of the declared knob values (one empty combination if none)."""
        knobs = list(self.directives.knobs.values())
        for values in itertools.product(*(k.values for k in knobs)):
            yield {k.name: v for k, v in zip(knobs, values)}

    def compile_job(self, arch: str) -> CompileJob:
        """What compile_many needs to build this kernel."""
        return CompileJob(source=self.source, entries=self.entries, knobs=self.knobs, flags=self.flags, arch=arch,
                          filename=self.path.name, include_roots=self.include_roots)

    def compile(self, arch: str) -> CompileResult:
        (result,) = compile_many([self.compile_job(arch)])
        return result


def load_kernel(path: str | Path, knobs: Mapping[str, str] | None = None, flags: list[str] | None = None,
                include_roots: tuple[Path, ...] | None = None) -> Kernel:
    """A kernel file with its directives read; `include_roots` (default: the file's own folder) are the
    folders it may include files from. Raises KernelError for a file that cannot be used."""
    path = Path(path)
    if not path.is_file():
        raise KernelError(f"{path}: no such kernel file")
    if path.stat().st_size > MAX_KERNEL_FILE_BYTES:
        raise KernelError(f"{path}: {path.stat().st_size:,} bytes; a kernel file may have at most "
                          f"{MAX_KERNEL_FILE_BYTES:,}")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KernelError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise KernelError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        directives = parse_directives(source)
    except DirectiveError as exc:
        raise KernelError(f"{path}: {exc}") from None
    own = [f for f in directives.flags if f not in (flags or [])]
    roots = include_roots if include_roots is not None else (path.parent.resolve(),)
    kernel = Kernel(path=path, source=source, directives=directives, knobs={}, flags=own + list(flags or []),
                    include_roots=roots)
    return kernel.with_knobs(knobs or {})


def size_label(dims: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in dims.items())


def size_cases(task: Task) -> list[SizeCase]:
    """The task's buffers, scalars and cost at each size (timed size first)."""
    cases = []
    for dims in task.sizes:
        def shape(axes):
            return [dims[a] if isinstance(a, str) else int(a) for a in axes]

        buffers = [Buffer(name=n, role="input", dtype=t.dtype, shape=shape(t.shape), init=t.init)
                   for n, t in task.inputs.items()]
        buffers += [Buffer(name=n, role="output", dtype=t.dtype, shape=shape(t.shape), zeroed=t.accumulate,
                           exact=t.compare_exactly, atol=t.atol, rtol=t.rtol)
                    for n, t in task.outputs.items()]
        cases.append(SizeCase(
            label=size_label(dims), buffers=buffers,
            scalars={n: s.value for n, s in task.scalars.items()},
            bytes_moved=evaluate(task.cost.bytes, dims) if task.cost.bytes else None,
            flops=evaluate(task.cost.flops, dims) if task.cost.flops else None,
        ))
    return cases


def program(label: str, task: Task, kernel: Kernel, compiled: CompileResult) -> Program:
    """Resolve launches at every size; raise LaunchPlanError if some size cannot be launched."""
    buffer_names = {*task.inputs, *task.outputs}
    scalars = {n: (s.dtype, s.value) for n, s in task.scalars.items()}
    launches, scratch = [], []
    for dims in task.sizes:
        try:
            planned, extra = plan(kernel.directives, kernel.knobs, dims, task.params, scalars,
                                  buffer_names, task.index_dtype)
        except LaunchPlanError as exc:
            raise LaunchPlanError(f"at {size_label(dims)}: {exc}") from None
        for launch in planned:
            launch.entry = compiled.lowered_names.get(launch.entry, launch.entry)
        launches.append(planned)
        scratch.append(extra)
    return Program(label=label, cubin_path=compiled.cubin_path or "", entries=kernel.entries,
                   launches=launches, scratch=scratch)


def static_resource_problem(prog: Program, resources: list[KernelResources], arch: str) -> str | None:
    """What ptxas's figures already say cannot launch (checked on the CPU, before any GPU run)."""
    by_name = {r.name: r for r in resources}
    limit = SMEM_OPTIN.get(arch)
    for size_launches in prog.launches:
        for entry, launch in zip(prog.entries, size_launches):
            usage = by_name.get(entry)
            if usage is None:
                continue
            threads = launch.block[0] * launch.block[1] * launch.block[2]
            allocated = -(-usage.registers // 8) * 8  # registers are handed out in groups of 8
            if threads * allocated > REGISTERS_PER_SM:
                return (f"{entry}: {threads} threads x {usage.registers} registers exceeds the "
                        f"{REGISTERS_PER_SM} registers of a multiprocessor")
            smem = usage.static_smem_bytes + launch.smem
            if limit is not None and smem > limit:
                return f"{entry}: {smem} bytes of shared memory exceeds {arch}'s {limit} per block"
    return None

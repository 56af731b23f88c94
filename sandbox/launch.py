"""Resolve a kernel's directives at every size of a problem (grid, block, shared memory, arguments and
scratch), and check them against what the GPU allows before anything runs."""

from __future__ import annotations

from collections.abc import Mapping

from . import expr
from .compiler import CompileResult
from .directives import Directives
from .kernel import Kernel
from .outcome import KernelResources
from .problem import Arg, Buffer, Launch, Problem, Program

MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
REGISTERS_PER_SM = 65536
# Largest shared memory one block may opt in to, by architecture (bytes).
SMEM_OPTIN = {"sm_70": 98304, "sm_75": 65536, "sm_80": 166912, "sm_86": 101376, "sm_87": 166912,
              "sm_89": 101376, "sm_90": 232448, "sm_100": 232448, "sm_120": 101376}


class LaunchPlanError(ValueError):
    """Directives that cannot be turned into a launch at some size (unknown name, zero grid...)."""


def plan(
    directives: Directives,
    knobs: Mapping[str, str],
    dims: Mapping[str, int],
    default_params: list[str],
    scalars: Mapping[str, tuple[str, float | int]],
    buffers: set[str],
    index_dtype: str = "int32",
) -> tuple[list[Launch], list[Buffer]]:
    """Launches in order and the scratch buffers they need, for the size `dims`."""
    env: dict[str, float | int] = {**dims, **{k: _number(k, v) for k, v in knobs.items()}}
    scratch = [
        Buffer(name=s.name, role="scratch", dtype=s.dtype, shape=[_int(s.count, env, f"scratch {s.name}")],
               zeroed=s.zeroed)
        for s in directives.scratch.values()
    ]
    known_buffers = buffers | {s.name for s in scratch}
    launches = []
    for entry in directives.entries:
        grid = _dims3([_int(e, env, f"{entry.name} grid") for e in entry.grid], MAX_GRID, entry.name, "grid")
        block = _dims3([_int(e, env, f"{entry.name} block") for e in entry.block], MAX_BLOCK, entry.name, "block")
        smem = _int(entry.smem, env, f"{entry.name} smem")
        if smem < 0:
            raise LaunchPlanError(f"{entry.name}: dynamic shared memory {smem} is negative")
        args = [_arg(p, dims, scalars, known_buffers, index_dtype, entry.name)
                for p in (entry.params or default_params)]
        launches.append(Launch(entry=entry.name, grid=grid, block=block, smem=smem, args=args))
    return launches, scratch


def _number(name: str, text: str) -> float | int:
    """A knob's value as a number for expressions (non-numeric knobs are only compiler macros)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return 0


def _int(text: str, env: Mapping[str, float | int], what: str) -> int:
    try:
        return expr.evaluate_int(text, env)
    except expr.ExprError as exc:
        raise LaunchPlanError(f"{what}: {exc}") from None


def _dims3(values: list[int], limits: tuple[int, int, int], entry: str, what: str) -> tuple[int, int, int]:
    padded = ([*values, 1, 1])[:3]
    for axis, (value, limit) in enumerate(zip(padded, limits)):
        if not 1 <= value <= limit:
            raise LaunchPlanError(f"{entry}: {what} dimension {axis} is {value}, outside 1..{limit}")
    if what == "block" and (threads := padded[0] * padded[1] * padded[2]) > 1024:
        raise LaunchPlanError(f"{entry}: block ({padded[0]}, {padded[1]}, {padded[2]}) is {threads} threads, "
                              "more than the 1024 a block may have")
    return padded[0], padded[1], padded[2]


def _arg(name, dims, scalars, buffers, index_dtype, entry) -> Arg:
    if name in buffers:
        return Arg(buffer=name)
    if name in dims:
        return Arg(dtype=index_dtype, value=dims[name])
    if name in scalars:
        dtype, value = scalars[name]
        return Arg(dtype=dtype, value=value)
    raise LaunchPlanError(f"{entry}: parameter {name!r} is no buffer, dim, scalar or scratch")


def plan_program(label: str, kernel: Kernel, compiled: CompileResult, problem: Problem) -> Program:
    """The compiled kernel with its launches resolved at every size; LaunchPlanError names the size."""
    scalars = {name: (s.dtype, s.value) for name, s in problem.scalars.items()}
    launches, scratch = [], []
    for case in problem.sizes:
        try:
            planned, extra = plan(kernel.directives, kernel.knobs, case.dims, problem.params, scalars,
                                  problem.buffer_names, problem.index_dtype)
        except LaunchPlanError as exc:
            raise LaunchPlanError(f"at {case.label}: {exc}") from None
        for launch in planned:
            launch.entry = compiled.lowered_names.get(launch.entry, launch.entry)
        launches.append(planned)
        scratch.append(extra)
    return Program(label=label, cubin_path=compiled.cubin_path or "", entries=kernel.entries,
                   launches=launches, scratch=scratch)


def over_limits(program: Program, resources: list[KernelResources], arch: str) -> str | None:
    """What ptxas's figures already say cannot launch (checked on the CPU, before any GPU run)."""
    by_name = {r.name: r for r in resources}
    limit = SMEM_OPTIN.get(arch)
    for size_launches in program.launches:
        for entry, launch in zip(program.entries, size_launches):
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

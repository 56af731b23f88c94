"""What ptxas says about each kernel (registers, spills, shared memory), and its errors explained."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .cubin import kernel_registers
from .outcome import KernelResources

_FUNC = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_resources(log: str, lowered: Mapping[str, str] | None = None) -> list[KernelResources]:
    """Registers, spills, stack and static shared memory per entry, from ptxas's verbose log."""
    by_mangled = {v: k for k, v in (lowered or {}).items()}
    found: dict[str, KernelResources] = {}
    current: KernelResources | None = None
    for line in log.splitlines():
        if m := _FUNC.search(line):
            name = by_mangled.get(m.group(1), m.group(1))
            current = found.setdefault(name, KernelResources(name=name))
        if current is None:
            continue
        if m := _FRAME.search(line):
            current.stack_bytes, current.spill_stores, current.spill_loads = map(int, m.groups())
        if m := _USED.search(line):
            current.registers = int(m.group(1))
            if s := _SMEM.search(line):
                current.static_smem_bytes = int(s.group(1))
    return list(found.values())


def merged_resources(log: str, lowered: Mapping[str, str], cubin: bytes) -> list[KernelResources]:
    """The log's figures, with register counts taken from the cubin itself (present even when the log
    is empty or worded differently by another NVRTC version)."""
    from_log = {r.name: r for r in parse_resources(log, lowered)}
    registers = kernel_registers(cubin)
    merged = []
    for name, symbol in lowered.items():
        usage = from_log.get(name, KernelResources(name=name))
        usage.registers = registers.get(symbol, usage.registers)
        merged.append(usage)
    return merged


# Largest dynamic shared memory one block may opt in to, KiB, by architecture.
SMEM_OPTIN_KIB = {"sm_75": 64, "sm_80": 163, "sm_86": 99, "sm_87": 163, "sm_89": 99, "sm_90": 227,
                  "sm_100": 227, "sm_120": 99}
_TOO_MUCH_SHARED = re.compile(r"uses too much shared data \((0x[0-9a-fA-F]+) bytes, (0x[0-9a-fA-F]+) max\)(?!:)")


def explain_log(log: str, arch: str) -> str:
    """`log` with ptxas's terse shared-memory error spelled out on its own line (the line a one-line
    report shows): the limit is on static `__shared__` arrays, and dynamic shared memory goes further.
    Idempotent: an explained line is left as it is."""

    def explain(m: re.Match) -> str:
        used, limit = int(m.group(1), 16), int(m.group(2), 16)
        base = arch.rstrip("abcdefghijklmnopqrstuvwxyz")
        optin = f"{SMEM_OPTIN_KIB[base]} KiB per block on {base}" if base in SMEM_OPTIN_KIB else "227 KiB on sm_90"
        return (f"{m.group()}: the kernel declares {used} bytes of static __shared__ memory and static shared "
                f"memory is limited to {limit} bytes ({limit // 1024} KiB) per block; for more, declare the "
                f"array `extern __shared__` and its size with the directive `// @kagent smem: BYTES` (dynamic "
                f"shared memory, up to {optin})")

    return _TOO_MUCH_SHARED.sub(explain, log)

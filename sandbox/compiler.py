"""Compile kernel source to a cubin with NVRTC, cached on disk by a hash of everything that matters."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from .cubin import kernel_registers
from .outcome import KernelResources, trim_log
from .toolchain import include_dirs, nvrtc, nvrtc_version

PRELUDE = (Path(__file__).with_name("prelude.h")).read_text()
# -default-device: unannotated functions are device code (NVRTC compiles nothing for the host).
BASE_OPTIONS = ("-Xptxas=-v", "--std=c++17", "-default-device")

# User flags we pass on; anything else could change paths or outputs behind the cache's back.
ALLOWED_FLAG_PREFIXES = (
    "-use_fast_math", "--use_fast_math", "-maxrregcount", "--maxrregcount", "-ftz", "--ftz",
    "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad", "-lineinfo",
    "--extra-device-vectorization", "-extra-device-vectorization", "-std=", "--std=", "-Xptxas=-O",
    "-dlcm=", "-restrict", "--restrict",
)


@dataclass
class CompileResult:
    ok: bool
    key: str
    log: str = ""
    cubin_path: str | None = None
    resources: list[KernelResources] = field(default_factory=list)
    lowered_names: dict[str, str] = field(default_factory=dict)
    cache_hit: bool = False
    arch: str = ""
    compiler: str = ""

    def to_json(self) -> str:
        record = {k: v for k, v in self.__dict__.items() if k not in ("resources", "cache_hit")}
        record["resources"] = [r.model_dump() for r in self.resources]
        return json.dumps(record)

    @classmethod
    def from_json(cls, text: str) -> "CompileResult":
        record = json.loads(text)
        record["resources"] = [KernelResources(**r) for r in record["resources"]]
        return cls(**record)


def cache_dir() -> Path:
    root = Path(os.environ.get("KAGENT_CACHE_DIR", Path.home() / ".cache" / "kagent"))
    return root / "cubins"


def cache_key(source: str, knobs: Mapping[str, str], flags: Iterable[str], arch: str, entries: Iterable[str]) -> str:
    payload = json.dumps(
        {
            "source": source,
            "knobs": sorted(knobs.items()),
            "flags": list(flags),
            "arch": arch,
            "entries": list(entries),
            "compiler": nvrtc_version(),
            "prelude": PRELUDE,
            "options": BASE_OPTIONS,
        }
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def check_flags(flags: Iterable[str]) -> str | None:
    """An error message for the first flag we do not pass on, or None."""
    for flag in flags:
        if not flag.startswith(ALLOWED_FLAG_PREFIXES):
            return f"compile flag {flag!r} is not allowed (allowed: {' '.join(ALLOWED_FLAG_PREFIXES)})"
    return None


def compile_source(
    source: str,
    entries: list[str],
    knobs: Mapping[str, str] | None = None,
    flags: Iterable[str] = (),
    arch: str = "sm_90",
    filename: str = "kernel.cu",
    use_cache: bool = True,
) -> CompileResult:
    """Compile `source`; a failure comes back as a CompileResult with ok=False, never an exception."""
    knobs, flags = dict(knobs or {}), list(flags)
    key = cache_key(source, knobs, flags, arch, entries)
    folder = cache_dir()
    record_path, cubin_path = folder / f"{key}.json", folder / f"{key}.cubin"
    if use_cache and record_path.exists():
        result = CompileResult.from_json(record_path.read_text())
        if not result.ok or cubin_path.exists():
            result.cache_hit = True
            return result
    if message := check_flags(flags):
        return CompileResult(ok=False, key=key, log=message, arch=arch, compiler=nvrtc_version())
    result, cubin = _run_nvrtc(source, entries, knobs, flags, arch, filename, key)
    folder.mkdir(parents=True, exist_ok=True)
    if cubin is not None:
        _atomic_write(cubin_path, cubin)
        result.cubin_path = str(cubin_path)
    _atomic_write(record_path, result.to_json().encode())
    return result


def compile_many(jobs: list[dict], processes: int | None = None) -> list[CompileResult]:
    """Compile several sources in a process pool, one NVRTC call per process at a time."""
    if len(jobs) <= 1 or processes == 1:
        return [compile_source(**job) for job in jobs]
    workers = min(len(jobs), processes or os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(compile_source, **job) for job in jobs]
        return [f.result() for f in futures]


def _run_nvrtc(source, entries, knobs, flags, arch, filename, key) -> tuple[CompileResult, bytes | None]:
    lib = nvrtc()
    text = f'{PRELUDE}\n#line 1 "{filename}"\n{source}'
    err, prog = lib.nvrtcCreateProgram(text.encode(), filename.encode(), 0, [], [])
    try:
        for name in entries:
            lib.nvrtcAddNameExpression(prog, name.encode())
        options = [f"--gpu-architecture={arch}", *BASE_OPTIONS]
        options += [f"-I{d}" for d in include_dirs()]
        options += [f"-D{k}={v}" for k, v in sorted(knobs.items())]
        options += flags
        (err,) = lib.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        log = _program_log(lib, prog)
        if int(err) != 0:
            failed = CompileResult(ok=False, key=key, log=trim_log(log), arch=arch, compiler=nvrtc_version())
            return failed, None
        lowered = {}
        for name in entries:
            lerr, mangled = lib.nvrtcGetLoweredName(prog, name.encode())
            lowered[name] = mangled.decode() if int(lerr) == 0 and mangled else name
        err, size = lib.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        lib.nvrtcGetCUBIN(prog, cubin)
        result = CompileResult(
            ok=True, key=key, log=trim_log(log), resources=merged_resources(log, lowered, cubin),
            lowered_names=lowered, arch=arch, compiler=nvrtc_version(),
        )
        return result, cubin
    finally:
        lib.nvrtcDestroyProgram(prog)


def _program_log(lib, prog) -> str:
    err, size = lib.nvrtcGetProgramLogSize(prog)
    buffer = b" " * size
    lib.nvrtcGetProgramLog(prog, buffer)
    return buffer.decode(errors="replace").rstrip("\x00 \n")


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


def _atomic_write(path: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, path)

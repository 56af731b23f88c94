"""Compile kernel source to a cubin with NVRTC: screened, limited, in worker processes, cached by content."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import compile_cache
from .compile_pool import shared_pool
from .compile_worker import NvrtcJob, NvrtcReply
from .includes import Headers, Refusal, fingerprint, screen
from .limits import CompileLimits
from .outcome import KernelResources, trim_log
from .redact import redact
from .resources import explain_log, merged_resources
from .toolchain import check_arch, include_dirs, nvrtc_version

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
# The include screen lexes as C++17 does; older standards have trigraphs and lack raw strings.
ALLOWED_STANDARDS = ("c++17", "c++20")


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
    limit: str = ""  # the limit that stopped it ("time", "memory", "source_size", "crash"): never cached
    filename: str = ""  # the file name the log's lines refer to (`NAME(LINE): error ...`)

    @property
    def message(self) -> str:
        """The first error line of the log: what a one-line report shows."""
        lines = [line.strip() for line in self.log.splitlines() if line.strip()]
        return next((line for line in lines if "error" in line), lines[0] if lines else "compile failed")

    def to_json(self) -> str:
        record = {k: v for k, v in self.__dict__.items() if k not in ("resources", "cache_hit")}
        record["resources"] = [r.model_dump() for r in self.resources]
        return json.dumps(record)

    @classmethod
    def from_json(cls, text: str) -> CompileResult:
        record = json.loads(text)
        record["resources"] = [KernelResources(**r) for r in record["resources"]]
        return cls(**record)


@dataclass(frozen=True)
class CompileJob:
    """compile_source's arguments, for compile_many. `include_roots`: the folders whose files the
    kernel may include by a plain relative name (the task's kernel folders)."""

    source: str
    entries: Sequence[str]
    knobs: Mapping[str, str] = field(default_factory=dict)
    flags: Sequence[str] = ()
    arch: str = "sm_90"
    filename: str = "kernel.cu"
    use_cache: bool = True
    include_roots: Sequence[str | Path] = ()


def cache_key(source: str, knobs: Mapping[str, str], flags: Iterable[str], arch: str, entries: Iterable[str],
              headers: Headers | None = None) -> str:
    payload: dict[str, Any] = {
        "source": source, "knobs": sorted(knobs.items()), "flags": list(flags), "arch": arch,
        "entries": list(entries), "compiler": nvrtc_version(), "prelude": PRELUDE, "options": BASE_OPTIONS,
    }
    if headers and (headers.local or headers.shipped):  # absent otherwise: keys of include-free kernels stay
        payload["headers"] = fingerprint(headers) | {"include_dirs": include_dirs()}
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:24]


def check_flags(flags: Iterable[str]) -> str | None:
    """An error message for the first flag we do not pass on, or None."""
    for flag in flags:
        if not flag.startswith(ALLOWED_FLAG_PREFIXES):
            return f"compile flag {flag!r} is not allowed (allowed: {' '.join(ALLOWED_FLAG_PREFIXES)})"
        if flag.startswith(("-std=", "--std=")) and flag.split("=", 1)[1] not in ALLOWED_STANDARDS:
            return f"compile flag {flag!r} is not allowed (standards: {', '.join(ALLOWED_STANDARDS)})"
    return None


def compile_source(
    source: str,
    entries: Sequence[str],
    knobs: Mapping[str, str] | None = None,
    flags: Iterable[str] = (),
    arch: str = "sm_90",
    filename: str = "kernel.cu",
    use_cache: bool = True,
    include_roots: Sequence[str | Path] = (),
    limits: CompileLimits | None = None,
) -> CompileResult:
    """Compile `source`; a failure comes back as a CompileResult with ok=False, never an exception."""
    job = CompileJob(source, list(entries), dict(knobs or {}), list(flags), arch, filename, use_cache,
                     tuple(include_roots))
    return compile_many([job], limits=limits)[0]


def compile_many(jobs: Sequence[CompileJob | Mapping[str, Any]], processes: int | None = None,
                 limits: CompileLimits | None = None) -> list[CompileResult]:
    """Compile several kernels at once in the shared worker pool (up to `processes` at a time, default
    one per CPU); results in the order of `jobs`. A job is a CompileJob or a dict of its fields."""
    limits = limits or CompileLimits.from_env()
    given = [job if isinstance(job, CompileJob) else CompileJob(**job) for job in jobs]
    prepared = [_prepare(job, limits) for job in given]
    names = [_safe_filename(job.filename) for job in given]
    todo = {p.key: p for p in prepared if isinstance(p, _Pending)}  # the same kernel twice compiles once
    replies = shared_pool().run([p.job for p in todo.values()], limits, processes) if todo else []
    done = {key: _finish(p, reply) for (key, p), reply in zip(todo.items(), replies)}
    return [_named(done[p.key] if isinstance(p, _Pending) else p, name) for p, name in zip(prepared, names)]


def key_of(job: CompileJob, limits: CompileLimits | None = None) -> str:
    """The key `compile_many` gives this job's result (its candidate id), found without compiling: the
    source, knobs, flags, arch, entries and the headers it includes."""
    return _prepare(job, limits or CompileLimits.from_env()).key


@dataclass
class _Pending:
    key: str
    arch: str
    job: NvrtcJob


def _prepare(job: CompileJob, limits: CompileLimits) -> CompileResult | _Pending:
    """A result already (refused, or from the cache), or what a worker must compile."""
    knobs, flags, entries = dict(job.knobs), list(job.flags), list(job.entries)
    key = cache_key(job.source, knobs, flags, str(job.arch), entries)  # names a refused kernel too
    failed = CompileResult(ok=False, key=key, arch=str(job.arch), compiler=nvrtc_version())
    try:
        arch = failed.arch = check_arch(job.arch)
    except ValueError as exc:
        failed.log = f"error: {exc}"
        return failed
    if message := check_flags(flags):
        failed.log = message
        return failed
    filename = _safe_filename(job.filename)
    defines = "\n".join(f"#define {k} {v}" for k, v in knobs.items())
    headers = screen(job.source, filename, job.include_roots, include_dirs(), limits.max_source_bytes, defines)
    if isinstance(headers, Refusal):
        failed.log, failed.limit = headers.message, headers.limit
        return failed
    key = cache_key(job.source, knobs, flags, arch, entries, headers)
    if job.use_cache and (hit := _cached(key)):
        return hit
    options = (f"--gpu-architecture={arch}", *BASE_OPTIONS, *(f"-I{d}" for d in include_dirs()),
               *(f"-D{k}={v}" for k, v in sorted(knobs.items())), *flags)
    text = f'{PRELUDE}\n#line 1 "{filename}"\n{job.source}'
    return _Pending(key, arch, NvrtcJob(text, filename, tuple(sorted(headers.local.items())), options,
                                        tuple(entries), limits.memory_bytes))


def _safe_filename(name: str) -> str:
    return re.sub(r"[^\w.+-]", "_", name) or "kernel.cu"  # it goes inside a #line directive


def _named(result: CompileResult, filename: str) -> CompileResult:
    """The result as the file `filename` gets it: a cached (or shared) result of the same source compiled
    under another name has its log's `NAME(LINE):` locations renamed."""
    if not result.filename or result.filename == filename:
        return result
    old = re.escape(result.filename)
    log = re.sub(rf'(?m)^{old}(?=\(\d+\))|(?<=compilation of "){old}(?=")', lambda _m: filename, result.log)
    return replace(result, log=log, filename=filename)


def _finish(pending: _Pending, reply: NvrtcReply) -> CompileResult:
    """The result of a worker's reply, its log explained and redacted, stored unless a limit stopped it."""
    log = redact(trim_log(explain_log(reply.log, pending.arch)))
    result = CompileResult(ok=reply.ok, key=pending.key, log=log, lowered_names=reply.lowered, arch=pending.arch,
                           compiler=nvrtc_version(), limit=reply.limit, filename=pending.job.filename)
    if reply.ok and reply.cubin is not None:
        result.resources = merged_resources(reply.log, reply.lowered, reply.cubin)
        result.cubin_path = compile_cache.store_cubin(pending.key, reply.cubin)
    if not reply.limit:
        compile_cache.store_record(pending.key, result.to_json())
    return result


def _cached(key: str) -> CompileResult | None:
    stored = compile_cache.load(key)
    if stored is None:
        return None
    try:
        result = CompileResult.from_json(stored[0])
    except (ValueError, TypeError, KeyError):  # a record from another version, or a torn one
        return None
    if result.ok and not stored[1].exists():
        return None
    result.cache_hit, result.cubin_path = True, str(stored[1]) if result.ok else None
    # Records written before the NUL fix and the explanations share keys with today's: clean them up too;
    # and mask the secrets registered since.
    result.log = redact(explain_log(result.log.replace("\x00", ""), result.arch))
    return result

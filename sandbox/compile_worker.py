"""A compile worker process: NVRTC on one job at a time, under the job's memory limit, in an empty folder."""

from __future__ import annotations

import os
import re
import resource
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from .toolchain import nvrtc

_NVRTC_OUT_OF_MEMORY = 1
# How NVRTC and ptxas say they could not allocate (the builtins library fails to load the same way).
_NO_MEMORY = re.compile(r"catastrophic error: out of memory|Memory allocation failure|std::bad_alloc|"
                        r"failed to open libnvrtc-builtins")


@dataclass(frozen=True)
class NvrtcJob:
    """Everything NVRTC needs; the headers are handed over as text, so NVRTC opens no path the kernel names."""

    text: str
    filename: str
    headers: tuple[tuple[str, str], ...]  # (include name, text)
    options: tuple[str, ...]
    entries: tuple[str, ...]
    memory_bytes: int


@dataclass
class NvrtcReply:
    ok: bool
    log: str
    lowered: dict[str, str] = field(default_factory=dict)
    cubin: bytes | None = None
    limit: str = ""  # the limit that stopped the compile: "time", "memory" or "crash" (the worker died)


def main() -> None:
    """The worker loop (argv: the socket's file descriptor, the parent's pid): one job in, one reply
    out, until the parent closes the socket."""
    conn, parent_pid = Connection(int(sys.argv[1])), int(sys.argv[2])
    _exit_with_parent(parent_pid)
    try:
        lib = nvrtc()
        _run(lib, NvrtcJob('extern "C" __global__ void warm() {}', "warm.cu", (), (), (), 0))  # loads the builtins
    except (RuntimeError, OSError) as exc:  # no NVRTC here (ToolchainError, a failed dlopen): the parent says so
        conn.send(("failed", f"the compile worker could not start NVRTC: {exc}"))
        return
    _enter_empty_folder()
    stderr = _capture_stderr()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        reply = _run(lib, job)
        stderr.seek(0)
        noise = stderr.read().decode(errors="replace").strip()  # ptxas writes fatal errors to stderr
        stderr.seek(0)
        stderr.truncate()
        if noise:
            reply.log = f"{reply.log}\n{noise}".strip()
            if not reply.ok and _NO_MEMORY.search(noise):
                reply.limit = "memory"
        conn.send(reply)


def _run(lib, job: NvrtcJob) -> NvrtcReply:
    """One compile, allowed `job.memory_bytes` of data beyond what the worker already holds. The limit is
    RLIMIT_DATA (private writable memory), not RLIMIT_AS: address space that is only reserved, never
    written (a GPU driver's or a thread pool's reservations, tens of GiB on a 16-core GPU machine),
    must not count; the memory a runaway compile fills does."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if job.memory_bytes:
        cap = _data_bytes() + job.memory_bytes
        resource.setrlimit(resource.RLIMIT_DATA, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        return _compile(lib, job)
    except MemoryError:
        return NvrtcReply(ok=False, log="", limit="memory")
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def _data_bytes() -> int:
    """This process's private writable memory now (VmData), what RLIMIT_DATA counts."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def _compile(lib, job: NvrtcJob) -> NvrtcReply:
    names = [name.encode() for name, _ in job.headers]
    texts = [text.encode() for _, text in job.headers]
    err, prog = lib.nvrtcCreateProgram(job.text.encode(), job.filename.encode(), len(texts), texts, names)
    if int(err) != 0:
        return NvrtcReply(ok=False, log=f"nvrtcCreateProgram failed: {err}", limit=_memory(err))
    try:
        for name in job.entries:
            lib.nvrtcAddNameExpression(prog, name.encode())
        (err,) = lib.nvrtcCompileProgram(prog, len(job.options), [o.encode() for o in job.options])
        log = _program_log(lib, prog)
        if int(err) != 0:
            limit = _memory(err) or ("memory" if _NO_MEMORY.search(log) else "")
            return NvrtcReply(ok=False, log=log, limit=limit)
        lowered = {}
        for name in job.entries:
            lerr, mangled = lib.nvrtcGetLoweredName(prog, name.encode())
            lowered[name] = mangled.decode() if int(lerr) == 0 and mangled else name
        _, size = lib.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        lib.nvrtcGetCUBIN(prog, cubin)
        return NvrtcReply(ok=True, log=log, lowered=lowered, cubin=cubin)
    finally:
        lib.nvrtcDestroyProgram(prog)


def _program_log(lib, prog) -> str:
    _, size = lib.nvrtcGetProgramLogSize(prog)
    buffer = b" " * size
    lib.nvrtcGetProgramLog(prog, buffer)
    # NVRTC ends each part of the log (front end, ptxas) with a NUL: the ptxas part would start with one.
    return buffer.decode(errors="replace").replace("\x00", "").rstrip()


def _memory(err) -> str:
    return "memory" if int(err) == _NVRTC_OUT_OF_MEMORY else ""


def _enter_empty_folder() -> None:
    """NVRTC looks for a quoted name beside the main file, i.e. in the current folder: make that a
    folder that is empty and stays so (removed while we stand in it)."""
    folder = tempfile.mkdtemp(prefix="kagent-compile-")
    os.chdir(folder)
    os.rmdir(folder)


def _capture_stderr():
    """Route file descriptor 2 to a private file, read after each job (ptxas prints 'Memory allocation
    failure' there, not in the log)."""
    capture = tempfile.TemporaryFile()  # noqa: SIM115 -- open for the life of the process
    os.dup2(capture.fileno(), 2)
    return capture


def _exit_with_parent(parent_pid: int) -> None:
    """Leave when the parent is gone, even in the middle of a compile (NVRTC releases the GIL). A
    thread polls, since Linux's parent-death signal fires when the spawning *thread* ends."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()

"""Long-lived compile worker processes: each job goes over a socket and is waited for with a deadline."""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import cast

from .compile_worker import NvrtcJob, NvrtcReply
from .limits import CompileLimits
from .redact import environment_secrets

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
# The worker imports `sandbox` as a bare package: its __init__ would import everything (pydantic, NumPy,
# the GPU client), half a second per worker, and the worker needs only compile_worker and toolchain.
_LAUNCH = ("import sys, types; package = types.ModuleType('sandbox'); package.__path__ = [sys.argv[3]]; "
           "sys.modules['sandbox'] = package; from sandbox.compile_worker import main; main()")
START_TIMEOUT_S = 120.0  # a cold start imports Python, cuda-bindings and NVRTC, on a loaded machine too


class _Worker:
    """One compile worker: a fresh interpreter (not multiprocessing's spawn, which would re-import the
    caller's main module in every worker), talking over a socket pair."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        command = [sys.executable, "-c", _LAUNCH, str(theirs.fileno()), str(os.getpid()), _PACKAGE]
        try:
            self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                            env=_environment())
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False

    def stop(self, kill: bool) -> None:
        """End the process and reap it: killed at once, or asked to leave by closing its socket."""
        if kill:
            self.process.kill()
        self.conn.close()
        try:
            self.process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def death(self) -> str:
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return ""
        return f" (signal {signal.Signals(-code).name})" if code < 0 else f" (exit code {code})"


@dataclass
class _Busy:
    index: int  # of the job it is compiling
    worker: _Worker
    deadline: float  # time.monotonic() when the job has taken too long


class CompilePool:
    """Up to `size` workers, started when first needed and kept for the next jobs. Thread-safe: callers
    in several threads share the workers."""

    def __init__(self, size: int) -> None:
        self.size, self.pid = max(1, size), os.getpid()
        self._idle: list[_Worker] = []
        self._count = 0
        self._closed = False
        self._lock = threading.Condition()

    def run(self, jobs: Sequence[NvrtcJob], limits: CompileLimits, processes: int | None = None) -> list[NvrtcReply]:
        """One reply per job, in order. A job past the time limit gets a "time" reply and its worker is
        killed; a worker that dies gets a "crash" reply; either way the pool goes on with a new worker."""
        replies: list[NvrtcReply | None] = [None] * len(jobs)
        pending = deque(enumerate(jobs))
        busy: dict[Connection, _Busy] = {}
        width = min(len(jobs), processes or self.size, self.size)
        try:
            while pending or busy:
                while pending and len(busy) < width and (worker := self._take(wait=not busy)):
                    index, job = pending.popleft()
                    try:
                        worker.conn.send(job)
                    except OSError:  # it died while idle: another takes the job
                        pending.appendleft((index, job))
                        self._drop(worker)
                        continue
                    busy[worker.conn] = _Busy(index, worker, time.monotonic() + (
                        limits.timeout_s if worker.ready else START_TIMEOUT_S))
                soonest = min(b.deadline for b in busy.values())
                for conn in cast(list[Connection], wait(list(busy), max(0.0, soonest - time.monotonic()))):
                    if (reply := self._receive(busy[conn], limits)) is not None:
                        replies[busy.pop(conn).index] = reply
                now = time.monotonic()
                for conn, late in list(busy.items()):
                    if now >= late.deadline:
                        del busy[conn]
                        self._drop(late.worker)
                        replies[late.index] = _too_late(late.worker, limits)
        finally:
            for b in busy.values():  # interrupted with jobs in flight: their state is unknown
                self._drop(b.worker)
        return [reply for reply in replies if reply is not None]

    def _receive(self, busy: _Busy, limits: CompileLimits) -> NvrtcReply | None:
        """The reply of a worker with something to say; None when it only said it is ready (its job's
        time starts now)."""
        worker = busy.worker
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            death = worker.death()
            self._drop(worker)
            return NvrtcReply(ok=False, log=limits.explain("crash", death), limit="crash")
        if isinstance(message, NvrtcReply):
            if message.limit == "memory":
                message.log = f"{limits.explain('memory')}\n{message.log}".strip()  # the limit first: it is the news
            if message.limit:  # a worker that ran out of memory may be in any state
                self._drop(worker)
            else:
                self._give(worker)
            return message
        if message[0] == "ready":
            worker.ready, busy.deadline = True, time.monotonic() + limits.timeout_s
            return None
        self._drop(worker)  # ("failed", why): NVRTC would not start
        return NvrtcReply(ok=False, log=f"error: {message[1]}", limit="crash")

    def close(self) -> None:
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
            self._count -= len(idle)
            self._lock.notify_all()
        for worker in idle:
            worker.stop(kill=False)

    def _take(self, wait: bool) -> _Worker | None:
        """An idle worker, a new one if the pool has room, else (when `wait`) the next one given back."""
        with self._lock:
            while not self._idle and self._count >= self.size:
                if not wait:
                    return None
                self._lock.wait()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        try:
            return _Worker()
        except BaseException:
            with self._lock:
                self._count -= 1
                self._lock.notify()
            raise

    def _give(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(worker)
                self._lock.notify()
                return
        self._drop(worker)

    def _drop(self, worker: _Worker) -> None:
        worker.stop(kill=True)
        with self._lock:
            self._count -= 1
            self._lock.notify()


def _environment() -> dict[str, str]:
    """The worker's environment: ours without the secrets (API keys, tokens), which NVRTC never needs
    and a kernel that got past the screen could read in /proc/self/environ."""
    secrets = environment_secrets()
    kept = {name: value for name, value in os.environ.items() if value not in secrets}
    return {**kept, "MALLOC_ARENA_MAX": "2", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _too_late(worker: _Worker, limits: CompileLimits) -> NvrtcReply:
    if worker.ready:
        return NvrtcReply(ok=False, log=limits.explain("time"), limit="time")
    return NvrtcReply(ok=False, log=f"error: the compile worker did not start within {START_TIMEOUT_S:g} s",
                      limit="crash")


_shared: CompilePool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> CompilePool:
    """The process's pool, sized to the CPUs this process may use (a forked child makes its own)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.pid != os.getpid():
            cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
            _shared = CompilePool(cpus or 1)
        return _shared


def shutdown_compile_pool() -> None:
    """Stop the shared pool's workers (also done at exit); the next compile starts new ones."""
    global _shared
    with _shared_lock:
        pool, _shared = _shared, None
    if pool is not None and pool.pid == os.getpid():
        pool.close()


atexit.register(shutdown_compile_pool)

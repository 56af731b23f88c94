"""Parent side of the GPU worker: a watchdog that kills and restarts it on hangs and lost contexts."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

from . import worker
from .problem import Reply, Request

START_TIMEOUT_S = 180.0


class SandboxError(RuntimeError):
    """The sandbox itself failed (no GPU, a broken reference, a bug): not the kernel's fault."""


class Interrupted(BaseException):
    """The work was stopped on purpose (Ctrl-C, SIGTERM) in the middle: what was in flight has no
    outcome. A BaseException, like KeyboardInterrupt, so that no "this candidate failed" handler
    records it as the kernel's crash."""


class GpuWorker:
    """One worker process on one GPU. Every call returns a reply dict; kernels cannot crash the caller."""

    def __init__(self, device: int = 0, target=worker.main):
        self.device = device
        self._target = target  # the worker's entry point; tests pass a fake one
        self.info: dict | None = None
        self.starts = 0
        self.last_restart_s: float | None = None  # seconds the last start took
        self._process: Any = None  # a multiprocessing Process of the spawn context, while one runs
        self._conn: Any = None  # its end of the pipe
        self._interrupted = False
        self._context = multiprocessing.get_context("spawn")

    def __enter__(self) -> GpuWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def restarts(self) -> int:
        return max(0, self.starts - 1)

    def start(self) -> dict:
        self._raise_if_interrupted()
        self.starts += 1
        began = time.perf_counter()
        parent, child = self._context.Pipe()
        process = self._context.Process(target=self._target, args=(child, self.device), daemon=True)
        try:
            process.start()   # kept only once started: closing must not wait on a process that never ran
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        self._process, self._conn = process, parent
        if not parent.poll(START_TIMEOUT_S):
            self._kill()
            self._raise_if_interrupted()
            raise SandboxError(f"GPU worker did not start within {START_TIMEOUT_S:.0f} s")
        try:
            kind, payload = parent.recv()
        except EOFError:
            self._kill()
            self._raise_if_interrupted()
            raise SandboxError("GPU worker exited while starting (is there a GPU and CuPy?)") from None
        if kind != "ready":
            self._kill()
            raise SandboxError(f"GPU worker could not start:\n{payload}")
        self.info = payload
        self.last_restart_s = time.perf_counter() - began
        return payload

    def evaluate(self, request: Request) -> Reply:
        """The verdict on a request: the worker's, or the watchdog's when the worker hung or died."""
        return Reply.model_validate(self.call("evaluate", request.model_dump(), request.settings.launch_timeout_s))

    def calibrate(self) -> dict:
        return self.call("calibrate", {}, 300.0)

    def call(self, kind: str, payload: dict, first_allowance_s: float) -> dict:
        """Send one request; the reply dict (the pipe carries plain data: `evaluate` types it)."""
        self._raise_if_interrupted()
        if self._process is None or not self._process.is_alive():
            self._kill()
            self.start()
        self._conn.send((kind, payload))
        allowance, phase = first_allowance_s, "start"
        while True:
            if not self._conn.poll(allowance):
                self._kill()
                self._raise_if_interrupted()
                return {"status": "timeout", "sticky": True,
                        "message": f"no progress for {allowance:.0f} s during {phase}: killed the worker"}
            try:
                message = self._conn.recv()
            except (EOFError, ConnectionError):
                self._process.join(5)
                code = self._process.exitcode
                self._kill()
                self._raise_if_interrupted()
                return {"status": "runtime_error", "sticky": True,
                        "message": f"the GPU worker died during {phase} (exit code {code})"}
            if message[0] == "beat":
                phase, allowance = message[1], float(message[2])
            elif message[0] == "done":
                reply = message[1]
                if reply.get("sticky"):
                    self._reap()
                return reply
            else:
                raise SandboxError(f"the GPU worker failed:\n{message[1]}")

    def interrupt(self) -> None:
        """Stop now, from any thread: the call in flight, and every later one, raises Interrupted
        instead of reporting the kernel as hung or crashed, and no fresh worker is started."""
        self._interrupted = True
        process = self._process
        if process is not None and process.is_alive():
            process.kill()

    def _raise_if_interrupted(self) -> None:
        if self._interrupted:
            raise Interrupted(f"the GPU {self.device} worker was stopped")

    def close(self) -> None:
        if self._process is not None and self._process.is_alive():
            try:
                self._conn.send(("stop", None))
                self._process.join(5)
            except (BrokenPipeError, OSError):
                pass
        self._kill()

    def _reap(self) -> None:
        """The worker exits by itself after a sticky error; wait for it, kill it if it lingers."""
        if self._process is not None:
            self._process.join(10)
        self._kill()

    def _kill(self) -> None:
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join(30)
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None

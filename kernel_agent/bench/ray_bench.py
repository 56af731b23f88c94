"""`kagent bench --ray ADDRESS`: each unfinished task is a Ray task of one GPU somewhere on a cluster
(ray_task.py runs it there); the driver records each result as it arrives, so the report, `--resume`
and Ctrl-C work as with lanes. A task lost to the cluster is tried again, then recorded as an
infrastructure error that `--resume` retries. Ray is imported only here, and only when asked for."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..files import write_atomic
from ..optimize.executors import ExecutorError
from ..optimize.policy import PolicyBook, PolicyError
from ..task import Task
from .lanes import Bench, Event, save_result
from .options import INFRA_FOLDER, BenchConfig, finished
from .ray_task import CRASH_ONCE, KERNELS, ROOT, Job, NodeUnfit, Reply, in_checkout, retarget, run_job
from .results import InfrastructureError, TaskResult

RETRIES = 2  # a task lost to the cluster is tried this many more times before it is recorded as such
CONNECT_S = 10.0  # how long a cluster's address may take to answer
WAIT_S = 0.5  # the driver wakes at least this often (Ctrl-C, a cluster that grew)
POLICIES = "optimize/policies"
# Not shipped to the nodes: runs, the tests and their recorded data, and every hidden entry at the top
# (`/.*`: .git, .venv, tool caches, scratch or wheel folders a user keeps in the checkout).
EXCLUDES = ["/.*", "results", "tests", "venv", "build", "**/__pycache__", "*.egg-info"]


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise ExecutorError("--ray needs Ray on this machine and on every node: pip install 'kagent[ray]'") from None
    return ray


def runtime_env() -> dict[str, Any]:
    """How the project's code reaches the nodes (Ray uploads it once, at `ray.init`): the checkout as
    Ray's working_dir, the tasks and their recordings with it; or, for an installed kagent, its two
    packages."""
    if (ROOT / "pyproject.toml").is_file() and (ROOT / "tasks").is_dir():
        return {"working_dir": str(ROOT), "excludes": EXCLUDES}
    return {"py_modules": [str(ROOT / "kernel_agent"), str(ROOT / "sandbox")]}


def task_env() -> dict[str, Any]:
    """Each task's own additions to the job's runtime environment (the tests' crash hook)."""
    marker = os.environ.get(CRASH_ONCE)
    return {"env_vars": {CRASH_ONCE: marker}} if marker else {}


@dataclass
class Flight:
    """A task submitted to the cluster: its slot on the progress display and what was shipped with it."""

    file: Path
    task: Task
    slot: str
    job: Job


class RayBench(Bench):
    """The lanes' bench with the cluster in place of the lanes: the same tasks, result files and report."""

    def __init__(self, config: BenchConfig, run_dir: Path, llm_url: str | None = None, address: str = "auto",
                 retries: int = RETRIES):
        super().__init__(config, run_dir, llm_url)
        self.lanes = []  # the cluster's scheduler places the tasks
        self.address, self.retries = address, retries
        self.attempts: dict[str, int] = {}
        self.cluster = ""

    def run(self, on_event: Event | None = None, on_result: Callable[[TaskResult], None] | None = None,
            notice: Callable[[str], None] | None = None) -> list[TaskResult]:
        self.on_event = on_event or self.on_event
        self.on_result = on_result or self.on_result
        self.notice = notice or self.notice
        ray = import_ray()
        started_here = not ray.is_initialized()
        if started_here:
            self._connect(ray)
        try:
            self._dispatch(ray, cancel_on_interrupt=not started_here)
        finally:
            if started_here:
                with contextlib.suppress(Exception):  # an interrupted bench keeps its results whatever Ray says
                    ray.shutdown()
        return self.write_report()

    def _connect(self, ray: ModuleType) -> None:
        """`local` starts a Ray instance of this machine's own; `auto` joins the one `ray start` made here
        (or RAY_ADDRESS); anything else is a cluster's address. (A connection the caller made already is
        used as it is, with its own runtime environment.)"""
        extra = {"include_dashboard": False} if self.address == "local" else {}
        _check_reachable(self.address)
        main = threading.current_thread() is threading.main_thread()
        sigterm = signal.getsignal(signal.SIGTERM) if main else None
        try:
            ray.init(address=self.address, runtime_env=runtime_env(), log_to_driver=False,
                     logging_level=logging.WARNING, **extra)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(f"--ray {self.address}: no Ray cluster there ({exc}). Start one with "
                                "`ray start --head --num-gpus=N`, or use --ray local") from None
        finally:
            if main:  # ray.init's own SIGTERM handler exits at once: SIGTERM stops a bench as Ctrl-C does
                signal.signal(signal.SIGTERM, sigterm)

    def _capacity(self, ray: ModuleType) -> int:
        """How many tasks can run at once: the cluster's GPUs, read again as nodes join or leave."""
        gpus = int(ray.cluster_resources().get("GPU", 0))
        nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        self.cluster = f"Ray {ray.__version__}, {nodes} node(s), {gpus} GPU(s)"
        return gpus

    def _dispatch(self, ray: ModuleType, cancel_on_interrupt: bool) -> None:
        done = finished(self.run_dir)
        todo = deque((file, task) for file, task in self.tasks if task.name not in done)
        remote = ray.remote(run_job).options(num_gpus=1, max_retries=0, runtime_env=task_env())
        flights: dict[Any, Flight] = {}
        capacity = self._capacity(ray)
        if todo and capacity < 1:
            raise ExecutorError("the Ray cluster has no GPU: each task asks for one. Start the workers on GPU "
                                "nodes (`ray start --address=HEAD:6379`), or declare them with --num-gpus=N")
        try:
            while todo or flights:
                if todo and len(flights) >= capacity:
                    capacity = self._capacity(ray)
                if todo and not flights and capacity < 1:
                    self.write_report()
                    raise ExecutorError("the Ray cluster has no GPU left; `kagent bench --resume RUN` continues")
                while todo and len(flights) < capacity:
                    file, task = todo.popleft()
                    taken = {f.slot for f in flights.values()}
                    slot = next(f"ray{i}" for i in range(capacity + 1) if f"ray{i}" not in taken)
                    job = self._job(file, task)
                    flights[remote.remote(job)] = Flight(file, task, slot, job)
                    self.on_event(slot, f"{task.name} ({self.config.mode})")
                ready, _ = ray.wait(list(flights), num_returns=1, timeout=WAIT_S)
                for ref in ready:
                    flight = flights.pop(ref)
                    self._arrived(ray, ref, flight, todo)
                    if not todo:
                        self.on_event(flight.slot, "done")
        except KeyboardInterrupt:  # as with lanes: the tasks in flight are dropped, --resume redoes them
            # A connection made here is shut down next, which ends the job and its tasks. Cancelling them
            # first raced with their replies: Ray's core aborted the driver ("Tried to complete task that
            # was not pending") in about one SIGTERM test in three. A caller's connection stays up, so
            # its tasks are cancelled.
            for ref in flights if cancel_on_interrupt else ():
                with contextlib.suppress(Exception):  # best effort: a task may end as it is cancelled
                    ray.cancel(ref, force=True)
            raise

    def _job(self, file: Path, task: Task) -> Job:
        """The task and the bench-folder files it reads: its optimize runs (a journal to resume), the
        learned policies, its ready-made kernel."""
        files: dict[str, bytes] = {}
        for folder in (self.run_dir / "optimize" / task.name, self.run_dir / POLICIES):
            for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".lock"):
                files[path.relative_to(self.run_dir).as_posix()] = path.read_bytes()
        if self.config.kernels is not None and (kernel := Path(self.config.kernels) / f"{task.name}.cu").is_file():
            files[f"{KERNELS}/{kernel.name}"] = kernel.read_bytes()
        return Job(self.config, str(file.resolve()), in_checkout(file), files, self.llm_url)

    def _arrived(self, ray: ModuleType, ref: Any, flight: Flight, todo: deque) -> None:
        try:
            reply: Reply = ray.get(ref)
        except ray.exceptions.RayError as exc:  # a worker or node lost, a node unfit, a broken runtime env
            self._lost(flight, exc, todo)
            return
        self._keep(flight, reply)
        for text in reply.notices:
            self.notice(text)
        self.gpu_info = self.gpu_info or reply.gpu_info
        save_result(self.run_dir, reply.result)
        self.on_result(reply.result)

    def _keep(self, flight: Flight, reply: Reply) -> None:
        """The task's files into the bench folder (the learned policies merged, not overwritten), its
        texts and run journals made this machine's."""
        for rel, data in reply.files.items():
            target = (self.run_dir / rel).resolve()
            if not target.is_relative_to(self.run_dir.resolve()):
                continue  # never outside the bench folder
            if rel.startswith(f"{POLICIES}/") and rel.endswith(".json"):
                try:
                    _book(data).merge_into(target, _book(flight.job.files.get(rel)))
                except PolicyError as exc:  # the task's results stand without them, as in `execute`
                    self.notice(f"{flight.task.name}: its learned policies were not merged ({exc})")
            else:
                write_atomic(target, data)
        retarget(self.run_dir / "optimize" / flight.task.name, flight.file)
        if self.config.kernels is not None:
            where = str(Path(reply.scratch) / KERNELS)
            result = reply.result
            result.kernel = result.kernel.replace(where, self.config.kernels)
            result.message = result.message.replace(where, self.config.kernels)

    def _lost(self, flight: Flight, exc: Exception, todo: deque) -> None:
        name = flight.task.name
        tries = self.attempts[name] = self.attempts.get(name, 0) + 1
        cause = getattr(exc, "cause", None) or exc  # a RayTaskError carries what the task raised
        error = f"{type(cause).__name__}: {next(iter(str(cause).strip().splitlines()), '')}"
        if tries <= self.retries:
            self.notice(f"{name}: attempt {tries} lost to the cluster ({error}); trying again")
            todo.appendleft((flight.file, flight.task))
            return
        node = cause.node if isinstance(cause, NodeUnfit) else None
        record = InfrastructureError(task=name, level=flight.file.parent.name, error=error, attempts=tries, node=node)
        write_atomic(self.run_dir / INFRA_FOLDER / f"{name}.json", record.model_dump_json(indent=1).encode())
        self.notice(f"{name}: lost to the cluster {tries} times ({error}); recorded as an infrastructure error, "
                    "not the kernel's: --resume runs it again")

    def environment(self) -> dict:
        env = super().environment()
        env.pop("gpus", None)  # this machine's GPU list means nothing here
        env["cluster"] = self.cluster or f"Ray at {self.address}"
        return env


def _check_reachable(address: str) -> None:
    """A HOST:PORT that nothing answers at is said at once (ray.init would wait minutes for it)."""
    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return  # auto, local, ray://...: Ray resolves them
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_S).close()
    except OSError as exc:
        raise ExecutorError(f"--ray {address}: nothing answers there ({exc.strerror or exc}); start the head with "
                            "`ray start --head --num-gpus=N` (port 6379), or use --ray local") from None


def _book(data: bytes | None) -> PolicyBook:
    """A policy book from a file's bytes (an empty one for none)."""
    if data is None:
        return PolicyBook()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "book.json"
        path.write_bytes(data)
        return PolicyBook.load(path)

"""`kagent bench`: a suite's tasks spread over lanes (one per GPU), one result file per finished task
(so an interrupted bench resumes where it stopped), then the report."""

from __future__ import annotations

import platform
import queue
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from sandbox import Interrupted, Outcome, SandboxError, Settings, Status, nvrtc_version

from ..files import write_atomic
from ..optimize.session import Hooks
from ..recording import load, recording_path
from ..task import Task
from .evaluate import Lane, as_written, optimized, ready_made, task_result
from .options import INFRA_FOLDER, BenchConfig, finished, infrastructure_errors, suite_tasks
from .results import TaskResult
from .suite_report import write_report

Event = Callable[[str, str], None]  # (lane name, what it is doing now)
STOP_GRACE_S = 15.0  # how long an interrupted bench waits for its lanes to leave their tasks


class Bench:
    """Runs the tasks not finished yet: one thread per lane pulls from a shared queue. A task that fails
    in any way (a crashing or hanging kernel, a broken baseline) costs only its own result."""

    def __init__(self, config: BenchConfig, run_dir: Path, llm_url: str | None = None):
        self.config, self.run_dir, self.llm_url = config, run_dir, llm_url
        self.on_event: Event = lambda lane, text: None
        self.on_result: Callable[[TaskResult], None] = lambda result: None
        self.notice: Callable[[str], None] = print
        self.tasks = suite_tasks(config.paths)
        settings = Settings(budget_ms=config.budget_ms)
        devices = config.gpus if config.executor == "gpu" else [None]
        self.lanes = [Lane(device, settings) for device in devices]
        self.gpu_info: dict | None = None
        self.stopping = threading.Event()

    def run(self, on_event: Event | None = None, on_result: Callable[[TaskResult], None] | None = None,
            notice: Callable[[str], None] | None = None) -> list[TaskResult]:
        """Every unfinished task; `on_event` hears what each lane is doing, `on_result` each result."""
        self.on_event = on_event or self.on_event
        self.on_result = on_result or self.on_result
        self.notice = notice or self.notice
        done = finished(self.run_dir)
        todo: queue.Queue = queue.Queue()
        for item in self.tasks:
            if item[1].name not in done:
                todo.put(item)
        # Each lane says when it has ended. Not Thread.join: a join that Ctrl-C interrupts can leave
        # its thread marked stopped while it still runs (seen on CPython 3.11).
        ended = [threading.Event() for _ in self.lanes]
        for lane, lane_ended in zip(self.lanes, ended):
            threading.Thread(target=self._lane_loop, args=(lane, todo, lane_ended), daemon=True).start()
        try:
            for lane_ended in ended:
                while not lane_ended.wait(0.2):  # a timed wait keeps Ctrl-C working
                    pass
        except KeyboardInterrupt:
            self._stop(ended)
            raise
        return self.write_report()

    def _stop(self, ended: list[threading.Event]) -> None:
        """Kill the workers and let the lanes leave their tasks unfinished: the task in flight is
        dropped (its worker was killed under it, so its outcome would be false), the optimize journals
        keep what they hold, and --resume redoes the rest. A second Ctrl-C stops waiting."""
        self.stopping.set()
        for lane in self.lanes:
            lane.interrupt()
        deadline = time.monotonic() + STOP_GRACE_S
        for lane_ended in ended:
            lane_ended.wait(max(0.0, deadline - time.monotonic()))

    def _lane_loop(self, lane: Lane, todo: queue.Queue, ended: threading.Event) -> None:
        try:
            if lane.device is not None:
                try:
                    info = lane.gpu().start()
                except SandboxError as exc:
                    self.notice(f"{lane.name}: its worker does not start ({exc}); the other lanes take its tasks")
                    return
                self.gpu_info = self.gpu_info or info
            while not self.stopping.is_set():
                try:
                    file, task = todo.get_nowait()
                except queue.Empty:
                    return
                self.on_event(lane.name, f"{task.name} ({self.config.mode})")
                result = self._one(lane, file, task)
                if self.stopping.is_set():
                    return
                save_result(self.run_dir, result)
                self.on_result(result)
        except Interrupted:
            pass
        finally:
            lane.close()
            self.on_event(lane.name, "done")
            ended.set()

    def _one(self, lane: Lane, file: Path, task: Task) -> TaskResult:
        return evaluate_task(self.config, self.run_dir, lane, file, task, self.llm_url, self.stopping.is_set,
                             self.on_event, self.notice)

    def write_report(self) -> list[TaskResult]:
        done, lost = finished(self.run_dir), infrastructure_errors(self.run_dir)
        results = [done[task.name] for _, task in self.tasks if task.name in done]
        unfinished = [task.name for _, task in self.tasks if task.name not in done]
        failed = [lost[name] for name in unfinished if name in lost]
        title = f"kagent bench: {', '.join(self.config.paths)} ({self.config.mode})"
        write_report(self.run_dir, results, self.environment(), title, unfinished, failed)
        return results

    def environment(self) -> dict:
        env = {"run": self.config.run_id, "mode": self.config.mode, "executor": self.config.executor,
               "python": platform.python_version(), "numpy": np.__version__, "nvrtc": nvrtc_version()}
        if self.config.mode == "optimize":
            config = self.config
            env["budget"] = f"{config.budget} evaluations per task ({config.strategy}, seed {config.seed})"
        if self.config.executor == "gpu":
            env["gpus"] = ", ".join(map(str, self.config.gpus))
            if self.gpu_info:
                env.update({k: self.gpu_info[k] for k in ("name", "arch", "driver", "runtime", "cupy")
                            if k in self.gpu_info})
        else:
            env["timings"] = "replayed from the recorded H200 sweeps (tasks/recordings/h200), not measured now"
            env.update(_recorded_gpu([task for _, task in self.tasks]))
        return env


def evaluate_task(config: BenchConfig, run_dir: Path, lane: Lane, file: Path, task: Task, llm_url: str | None = None,
                  stopping: Callable[[], bool] = lambda: False, on_event: Event = lambda lane, text: None,
                  notice: Callable[[str], None] = print) -> TaskResult:
    """One task on one lane, as the bench's mode asks (a lane thread here, a Ray task in ray_bench.py). An
    evaluation that raises is the task's `runtime_error` (its traceback in tasks/TASK.error.txt); once
    `stopping()` is true, it is the stop's consequence instead (Interrupted), never the task's failure."""
    level = file.parent.name
    started = time.perf_counter()
    try:
        if config.mode == "kernels":
            return ready_made(task, level, Path(config.kernels or "."), lane)
        if config.mode == "optimize":
            def progress(state, attempts):
                if stopping():  # between two batches: the journal holds the last one
                    raise Interrupted(task.name)
                on_event(lane.name, f"{task.name} (optimize {len(state.attempts)}/{config.budget})")
            hooks = Hooks(on_batch=progress, notice=lambda text: notice(f"{task.name}: {text}"))
            return optimized(task, file, level, lane, run_dir / "optimize", config, hooks, llm_url)
        return as_written(task, level, lane)
    except Exception as exc:
        if stopping():  # a consequence of the stop, not the task's failure
            raise Interrupted(task.name) from exc
        (run_dir / "tasks").mkdir(parents=True, exist_ok=True)
        (run_dir / "tasks" / f"{task.name}.error.txt").write_text(traceback.format_exc())
        lane.close()  # a fresh worker for the next task
        outcome = Outcome(status=Status.runtime_error, message=f"{type(exc).__name__}: {exc}")
        return task_result(task, level, config.mode, "-", outcome, lane, False, started=started, evaluations=0)


def save_result(run_dir: Path, result: TaskResult) -> None:
    """A finished task's record (atomically: a bench killed at any moment leaves whole files); an
    infrastructure error recorded for it by an earlier attempt is void from now on."""
    write_atomic(run_dir / "tasks" / f"{result.task}.json", result.model_dump_json(indent=1).encode())
    (run_dir / INFRA_FOLDER / f"{result.task}.json").unlink(missing_ok=True)


def _recorded_gpu(tasks: list[Task]) -> dict:
    """The GPU, driver and compiler of the first recorded sweep among the tasks."""
    for task in tasks:
        path = recording_path(task.name, None)
        if path.exists():
            cache = load(path)
            gpu = cache.gpu or {}
            return {"recorded on": gpu.get("name", "?"), "recorded driver": gpu.get("driver", "?"),
                    "recorded with nvrtc": cache.compiler.get("nvrtc", "?")}
    return {}

"""One bench task as a Ray task on a cluster node (ray_bench.py is the driver's side): the node is
checked first, then the same per-task evaluation as a lane runs in a scratch bench folder whose new
files travel back with the result. Imports nothing from Ray: it runs inside a Ray worker already."""

from __future__ import annotations

import os
import platform
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandbox import SandboxError, Settings, ToolchainError, gpu_count, nvrtc_version

from ..files import write_atomic
from ..optimize.run_config import RunConfig
from ..recording import recording_path
from ..task import load_task
from .evaluate import Lane
from .lanes import evaluate_task
from .options import BenchConfig
from .results import TaskResult

ROOT = Path(__file__).resolve().parents[2]  # the kagent checkout (or site-packages) this copy runs from
KERNELS = "kernels"  # in the scratch folder: the task's ready-made kernel file (--kernels), shipped
KEPT_ON_NODE = ("optimize/kagent.sqlite",)  # the attempt store (a convenience) stays with the node's scratch
CRASH_ONCE = "KAGENT_RAY_CRASH_ONCE"  # tests: a marker file path; the first task to create it kills its worker


class NodeUnfit(RuntimeError):
    """This node cannot run the task (no NVRTC, no GPU, a GPU worker that does not start): an
    infrastructure error the driver retries, never the kernel's failure."""

    def __init__(self, node: str, reason: str):
        super().__init__(node, reason)  # both in args: the exception is pickled back to the driver
        self.node, self.reason = node, reason

    def __str__(self) -> str:
        return f"node {self.node}: {self.reason}"


@dataclass(frozen=True)
class Job:
    """What a node needs to run one task."""

    config: BenchConfig
    task_file: str  # absolute, as the driver sees it
    task_in_checkout: str | None  # the same file relative to the kagent checkout (shipped as Ray's working_dir)
    files: dict[str, bytes]  # bench-folder files the task reads (its optimize journal, the policies, its kernel)
    llm_url: str | None = None


@dataclass(frozen=True)
class Reply:
    """What came back: the task's result and the bench-folder files the task wrote or changed."""

    result: TaskResult
    files: dict[str, bytes]
    notices: list[str]
    node: str
    scratch: str  # the scratch bench folder's path on the node (the driver puts its own back in the texts)
    gpu_info: dict | None = None


def run_job(job: Job) -> Reply:
    """The Ray task's body. Raises NodeUnfit where the node cannot evaluate kernels."""
    node = platform.node()
    check_node(node, job.config.executor)
    with tempfile.TemporaryDirectory(prefix="kagent-ray-") as scratch:
        folder = Path(scratch)
        for rel, data in job.files.items():
            write_atomic(folder / rel, data)
        file = locate(job.task_file, job.task_in_checkout)
        task = load_task(file)
        config = job.config
        if config.kernels is not None:
            config = config.model_copy(update={"kernels": str(folder / KERNELS)})
        retarget(folder / "optimize" / task.name, file)
        lane = Lane(0 if config.executor == "gpu" else None, Settings(budget_ms=config.budget_ms))
        notices: list[str] = []
        try:
            info = _start(lane, node)
            result = evaluate_task(config, folder, lane, file, task, job.llm_url, notice=notices.append)
        finally:
            lane.close()
        if lane.device is not None:
            result.gpu = _node_gpu()
        _crash_once_for_tests()
        return Reply(result, written(folder, job.files), notices, node, str(folder), info)


def check_node(node: str, executor: str) -> None:
    """NVRTC importable (every executor compiles), and a GPU visible where the executor runs kernels."""
    try:
        nvrtc_version()
    except (ToolchainError, RuntimeError, OSError) as exc:
        raise NodeUnfit(node, f"NVRTC is not usable ({exc})") from None
    if executor == "gpu" and gpu_count() == 0:
        raise NodeUnfit(node, "no CUDA GPU visible to the task (is the CUDA driver installed?)")


def _start(lane: Lane, node: str) -> dict | None:
    if lane.device is None:
        return None
    try:
        return lane.gpu().start()
    except SandboxError as exc:
        raise NodeUnfit(node, f"its GPU worker does not start ({exc})") from None


def _node_gpu() -> int | None:
    """The node's index of the GPU Ray gave this task (the task itself sees it as device 0)."""
    import ray

    ids = ray.get_gpu_ids()
    try:
        return int(ids[0]) if ids else None
    except (TypeError, ValueError):
        return None


def locate(task_file: str, in_checkout: str | None) -> Path:
    """The task file on this node: in the shipped checkout when it was in the driver's, else the driver's
    own path (a suite outside the checkout must sit at the same path on every node)."""
    if in_checkout is not None and (ROOT / in_checkout).is_file():
        return ROOT / in_checkout
    return Path(task_file)


def in_checkout(path: Path) -> str | None:
    """`path` relative to the kagent checkout, or None when it lies outside."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return None


def retarget(task_runs: Path, task_file: Path) -> None:
    """The optimize runs of a task name the task file and the recording by path: make them this machine's,
    so that a run journal resumes on whichever node (or driver) holds it now."""
    for run_json in sorted(task_runs.glob("*/run.json")):
        config = RunConfig.load(run_json.parent)
        config.task_file = str(task_file)
        if config.recording is not None:
            config.recording = str(recording_path(config.task, None))
        config.save(run_json.parent)


def written(folder: Path, shipped: dict[str, bytes]) -> dict[str, bytes]:
    """The files under `folder` that are new or changed since they were shipped (lock files, the
    shipped kernel and the attempt store left out)."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith((f"{KERNELS}/", *KEPT_ON_NODE)) or rel.endswith(".lock"):
            continue
        data = path.read_bytes()
        if shipped.get(rel) != data:
            found[rel] = data
    return found


def _crash_once_for_tests() -> None:
    """With CRASH_ONCE set (tests only), the first task to get here kills its worker process: a worker
    lost mid-task, after its evaluation and before its reply."""
    marker = os.environ.get(CRASH_ONCE)
    if not marker:
        return
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    os._exit(1)

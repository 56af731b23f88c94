"""`kagent bench --ray` on a local Ray instance (CPU, two logical GPUs declared, the replay executor): the
same per-task results as the lanes, a worker killed mid-task tried again, tasks the cluster keeps losing
recorded as infrastructure errors that --resume runs again, and a killed driver resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from kernel_agent.bench import ray_bench, ray_task
from kernel_agent.bench.options import INFRA_FOLDER, BenchConfig, finished
from kernel_agent.bench.ray_bench import RayBench, runtime_env
from kernel_agent.cli import app
from kernel_agent.optimize.executors import ExecutorError
from sandbox import ToolchainError
from tests.paths import ROOT

ray = pytest.importorskip("ray")

LEVEL1, LEVEL2 = ROOT / "tasks" / "level1", ROOT / "tasks" / "level2"
SUITE = [LEVEL1, LEVEL2]
VARIES = {"wall_s"}  # the only field a task's record may differ in between two benches


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One local Ray instance for the module: 2 CPUs, 2 logical GPUs, the checkout as working_dir."""
    env = runtime_env()
    env["env_vars"] = {"KAGENT_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "cache")}
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, runtime_env=env)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def kagent(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def bench_dir(out):
    (folder,) = [p for p in out.iterdir() if (p / "bench.json").exists()]
    return folder


def records(folder):
    return {name: r.model_dump(exclude=VARIES) for name, r in finished(folder).items()}


def replay_config(*paths, run_id="t"):
    return BenchConfig(run_id=run_id, paths=[str(p) for p in paths], mode="as-written", executor="replay")


def test_the_cluster_gives_the_lanes_results(cluster, tmp_path):
    lanes = kagent("bench", *SUITE, "--out", tmp_path / "lanes")
    assert lanes.exit_code == 0, lanes.output
    on_ray = kagent("bench", *SUITE, "--ray", cluster, "--executor", "replay", "--out", tmp_path / "ray")
    assert on_ray.exit_code == 0, on_ray.output
    assert "ray0:" in on_ray.output and "ray1:" in on_ray.output  # two GPUs, two tasks at a time
    lanes_dir, ray_dir = bench_dir(tmp_path / "lanes"), bench_dir(tmp_path / "ray")
    expected = records(lanes_dir)
    assert len(expected) == 21 and records(ray_dir) == expected
    doc = json.loads((ray_dir / "results.json").read_text())
    assert doc["unfinished"] == [] and "infrastructure_errors" not in doc
    assert doc["metrics"] == json.loads((lanes_dir / "results.json").read_text())["metrics"]
    assert "2 GPU(s)" in doc["environment"]["cluster"] and doc["environment"]["recorded on"] == "NVIDIA H200"
    assert json.loads((ray_dir / "bench.json").read_text())["gpus"] == []


def test_ready_made_kernels_and_optimize_on_the_cluster(cluster, tmp_path):
    """The --kernels file and the optimize runs travel to the node and back: the same verdicts, texts
    and run folders as the lanes'."""
    from tests.kernel_agent.test_bench import MIXED, ready_made

    kernels = ready_made(tmp_path / "kernels")
    files = [LEVEL1 / f"{n}.yaml" for n in MIXED]
    for where, extra in (("lanes", []), ("ray", ["--ray", cluster, "--executor", "replay"])):
        result = kagent("bench", *files, "--kernels", kernels, "--out", tmp_path / where, *extra)
        assert result.exit_code == 0, result.output
    expected = records(bench_dir(tmp_path / "lanes"))
    assert records(bench_dir(tmp_path / "ray")) == expected and expected["add"]["kernel"] == str(kernels / "add.cu")

    tasks = [LEVEL2 / "bias_gelu.yaml", LEVEL2 / "l2_normalize.yaml"]
    for where, extra in (("lanes-opt", []), ("ray-opt", ["--ray", cluster, "--executor", "replay"])):
        result = kagent("bench", *tasks, "--optimize", "--budget", 8, "--out", tmp_path / where, *extra)
        assert result.exit_code == 0, result.output
    lanes_dir, ray_dir = bench_dir(tmp_path / "lanes-opt"), bench_dir(tmp_path / "ray-opt")
    got, want = records(ray_dir), records(lanes_dir)
    assert {n: {**r, "kernel": label(r)} for n, r in got.items()} == \
        {n: {**r, "kernel": label(r)} for n, r in want.items()}
    for name in ("bias_gelu", "l2_normalize"):
        (run,) = (ray_dir / "optimize" / name).iterdir()
        assert len((run / "attempts.jsonl").read_text().splitlines()) == 8 and (run / "best.cu").exists()
        assert json.loads((run / "run.json").read_text())["task_file"] == str(LEVEL2 / f"{name}.yaml")
    assert policies(ray_dir) == policies(lanes_dir) and policies(ray_dir)  # merged back as the lanes save them


def label(record):
    """The kernel's label without its run folder (whose id has the time in it)."""
    return record["kernel"].split(" (")[0]


def policies(bench):
    folder = bench / "optimize" / "policies"
    return {p.relative_to(folder).as_posix(): json.loads(p.read_text()) for p in folder.rglob("*.json")}


def test_a_worker_killed_mid_task_is_tried_again(cluster, tmp_path, monkeypatch):
    marker = tmp_path / "crashed"
    monkeypatch.setenv(ray_task.CRASH_ONCE, str(marker))
    notices = []
    (tmp_path / "t").mkdir()
    results = RayBench(replay_config(LEVEL2), tmp_path / "t").run(notice=notices.append)
    assert marker.exists()  # one worker did die after its evaluation, before its reply
    lost = [n for n in notices if "attempt 1 lost to the cluster (WorkerCrashedError" in n]
    assert len(lost) == 1 and "trying again" in lost[0]
    assert len(results) == 6 and all(r.status.value == "ok" for r in results)
    (tmp_path / "lanes").mkdir()
    from kernel_agent.bench.lanes import Bench

    Bench(replay_config(LEVEL2), tmp_path / "lanes").run()
    assert records(tmp_path / "t") == records(tmp_path / "lanes")
    report = (tmp_path / "t" / "report.md").read_text()
    assert "Partial" not in report and "Infrastructure errors" not in report and "(6 of 6)" in report


def test_a_task_the_cluster_keeps_losing_is_an_infrastructure_error_resume_retries(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv(ray_task.CRASH_ONCE, str(tmp_path / "crashed"))
    folder = tmp_path / "t"
    folder.mkdir()
    replay_config(LEVEL2).save(folder)
    results = RayBench(replay_config(LEVEL2), folder, retries=0).run(notice=lambda text: None)
    assert len(results) == 5 and all(r.status.value == "ok" for r in results)  # never the kernel's runtime_error
    (lost,) = (folder / INFRA_FOLDER).iterdir()
    record = json.loads(lost.read_text())
    assert record["attempts"] == 1 and record["error"].startswith("WorkerCrashedError")
    assert lost.stem not in finished(folder)
    doc = json.loads((folder / "results.json").read_text())
    assert doc["unfinished"] == [lost.stem] and doc["infrastructure_errors"][0]["task"] == lost.stem
    assert doc["metrics"]["tasks"] == 5 and "runtime_error" not in doc["metrics"]["failures"]
    report = (folder / "report.md").read_text()
    assert "**Infrastructure errors: 1 task(s) lost to the cluster" in report and f"| {lost.stem} | 1 |" in report

    again = kagent("bench", "--resume", folder, "--ray", cluster)  # the marker exists now: no crash
    assert again.exit_code == 0, again.output
    assert len(finished(folder)) == 6 and not any((folder / INFRA_FOLDER).iterdir())
    assert "infrastructure_errors" not in json.loads((folder / "results.json").read_text())
    assert "Infrastructure errors" not in (folder / "report.md").read_text()


def test_a_node_without_a_gpu_or_nvrtc_is_an_infrastructure_error(cluster, tmp_path, monkeypatch):
    """The GPU executor on logical GPUs (this machine has none): every attempt finds no GPU, so the task
    is tried three times and recorded as lost to the infrastructure, with the node named."""
    config = BenchConfig(run_id="t", paths=[str(LEVEL2 / "bias_gelu.yaml")], mode="as-written", executor="gpu")
    notices = []
    (tmp_path / "t").mkdir()
    assert RayBench(config, tmp_path / "t").run(notice=notices.append) == []
    assert sum("trying again" in n for n in notices) == 2
    record = json.loads((tmp_path / "t" / INFRA_FOLDER / "bias_gelu.json").read_text())
    assert record["attempts"] == 3 and record["error"].startswith("NodeUnfit") and record["node"]
    assert "no CUDA GPU visible" in record["error"]

    def no_nvrtc():
        raise ToolchainError("NVRTC is not available")
    monkeypatch.setattr(ray_task, "nvrtc_version", no_nvrtc)
    with pytest.raises(ray_task.NodeUnfit, match="NVRTC is not usable"):
        ray_task.check_node("n1", "replay")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_resume_after_the_driver_is_killed_loses_no_finished_task(cluster, tmp_path, sig):
    """The driver in its own process, killed once the first result is written (SIGKILL: nothing runs
    after; SIGTERM: stops as Ctrl-C does, writing the partial report); --resume finishes the rest."""
    out = tmp_path / "out"
    driver = subprocess.Popen([sys.executable, "-m", "kernel_agent", "bench", *map(str, SUITE), "--ray", cluster,
                               "--executor", "replay", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"})
    deadline = time.monotonic() + 120
    while not list(out.glob("*/tasks/*.json")) and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.02)
    driver.send_signal(sig)
    output = driver.communicate(timeout=60)[0].decode()
    folder = bench_dir(out)
    kept = {p.name: p.read_bytes() for p in (folder / "tasks").glob("*.json")}
    assert 1 <= len(kept) < 21, output
    if sig == signal.SIGTERM:
        assert driver.returncode == 130 and "continue with --resume" in " ".join(output.split()), output
        assert "**Partial:" in (folder / "report.md").read_text()
    again = kagent("bench", "--resume", folder, "--ray", cluster)
    assert again.exit_code == 0, again.output
    assert all((folder / "tasks" / name).read_bytes() == data for name, data in kept.items())
    doc = json.loads((folder / "results.json").read_text())
    assert doc["unfinished"] == [] and doc["metrics"]["tasks"] == 21 and doc["metrics"]["correct"] == 21


def test_without_ray_or_with_gpus_the_message_says_what_to_do(tmp_path, monkeypatch):
    task = LEVEL2 / "bias_gelu.yaml"
    result = kagent("bench", task, "--ray", "auto", "--gpus", "0", "--out", tmp_path)
    assert result.exit_code == 2 and "leave --gpus out" in " ".join(result.output.split())
    with pytest.raises(ExecutorError, match="nothing answers there"):  # said at once, not after ray.init's minutes
        ray_bench._check_reachable("127.0.0.1:1")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    result = kagent("bench", task, "--ray", "auto", "--out", tmp_path)
    assert result.exit_code == 3 and "pip install 'kagent[ray]'" in " ".join(result.output.split())


def test_the_nodes_get_the_code_and_tasks_not_hidden_folders_runs_or_tests():
    from ray._private.runtime_env.packaging import _get_excludes  # the matcher Ray applies to working_dir

    excluded = _get_excludes(ROOT, runtime_env()["excludes"])
    for kept in ("kernel_agent/sweep.py", "sandbox/gpu.py", "prompts/planner.j2", "tasks/level1/add.yaml",
                 "kernel_agent/skeletons/rowwise.cu", "pyproject.toml", "tasks/wide/layernorm_wide/rowwise.cu"):
        assert not excluded(ROOT / kept), kept
    for left in (".git", ".venv", ".whl", ".my-scratch", "results", "tests", "kernel_agent/__pycache__"):
        assert excluded(ROOT / left), left


def test_the_h200_runs_kept_agree_task_by_task():
    """The evidence of tests/data/h200/bench_ray_level1: the lanes and --ray on one H200, same verdicts."""
    kept = ROOT / "tests" / "data" / "h200" / "bench_ray_level1"
    lanes, on_ray = (json.loads((kept / f"{name}_results.json").read_text()) for name in ("lanes", "ray"))
    assert on_ray["environment"]["cluster"].startswith("Ray 2.") and "cluster" not in lanes["environment"]
    verdicts = [{t["task"]: (t["status"], t["kernel"]) for t in run["tasks"]} for run in (lanes, on_ray)]
    assert verdicts[0] == verdicts[1] and len(verdicts[0]) == 15
    assert lanes["environment"]["name"] == on_ray["environment"]["name"] == "NVIDIA H200"

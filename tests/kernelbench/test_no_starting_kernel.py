"""A task without a starting kernel (an imported KernelBench problem): `optimize` says a model is needed;
given a kernel it starts from it; with a model, the model's first kernel (repaired where it fails) is the
run's start, kept across a resume; `bench` as written says what is missing."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from tests.kernelbench.test_import import NAIVE_TANH
from tests.llm.fake_server import FakeOpenAI, answer
from tests.llm.test_optimize_llm import config_file
from tests.paths import ROOT

torch = pytest.importorskip("torch")

BROKEN_TANH = NAIVE_TANH.replace("tanhf(x[i]", "tanhf(xx[i]")
TASK_LINE = re.compile(r"^## Task: (\S+)", re.MULTILINE)


@pytest.fixture(scope="module")
def tanh_task(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    problem = tmp_path_factory.mktemp("src") / "level1" / "01_Scaled_tanh.py"
    problem.parent.mkdir()
    shutil.copyfile(ROOT / "tests" / "data" / "kernelbench" / "01_Scaled_tanh.py", problem)
    result = CliRunner().invoke(app, ["import", "kernelbench", str(problem), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out / "l1_01_scaled_tanh.yaml"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("kernel_agent.optimize.session.detect_arch", lambda device=0: None)


def optimize(task, out, *extra, env=None):
    return CliRunner().invoke(app, ["optimize", str(task), "--out", str(out), "--budget", "3", "--no-warm-start",
                                    "--executor", "compile-only", *extra], env=env)


def test_without_a_model_or_a_kernel_it_says_a_model_is_needed(tanh_task, tmp_path):
    result = optimize(tanh_task, tmp_path / "out")
    assert result.exit_code == 2 and "has no starting kernel: a model writes the first one (--llm" in result.output


def test_a_given_kernel_is_the_runs_start(tanh_task, tmp_path, no_gpu):
    kernel = tmp_path / "naive.cu"
    kernel.write_text(NAIVE_TANH)
    result = optimize(tanh_task, tmp_path / "out", "--kernel", str(kernel))
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out" / "l1_01_scaled_tanh").iterdir()
    assert json.loads((run_dir / "run.json").read_text())["start"] == "given/start.cu"
    assert (run_dir / "given" / "start.cu").read_text() == NAIVE_TANH
    first = json.loads((run_dir / "attempts.jsonl").read_text().splitlines()[0])
    assert (first["kernel"], first["status"]) == ("baseline", "not_run")


def test_the_models_first_kernel_is_repaired_and_becomes_the_start(tanh_task, tmp_path, no_gpu):
    config = config_file(tmp_path, timeout_s=5.0, max_attempts=1)
    script = [answer(f"```cuda\n{BROKEN_TANH}```"),  # the first kernel: does not compile
              answer(f"`xx` was a typo:\n```cuda\n{NAIVE_TANH}```"),  # its repair
              answer(f"```cuda\n{NAIVE_TANH}```")]  # the search's asks from here on: the same again
    with FakeOpenAI(script) as server:
        result = optimize(tanh_task, tmp_path / "out", "--llm", "test-model", "--llm-base-url", server.base_url,
                          "--no-llm-port", env={"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""})
        first_prompt = server.requests[0]["messages"][-1]["content"]
    assert result.exit_code == 0, result.output
    assert "class Model" in first_prompt and "(const float* x, float* out, int batch_size, int dim)" in first_prompt
    (run_dir,) = (tmp_path / "out" / "l1_01_scaled_tanh").iterdir()
    assert (run_dir / "given" / "start.cu").read_text() == NAIVE_TANH
    transcript = [json.loads(line) for line in (run_dir / "first" / "transcript.jsonl").read_text().splitlines()]
    checks = [r["status"] for r in transcript if r["type"] == "check"]
    assert checks == ["compile_error", "not_run"]
    assert [r["role"] for r in transcript if r["type"] == "call"] == ["first kernel", "repair"]
    # each answer's verdict joins its call: what `kagent export` reads for fine-tuning
    assert [(r["call"], r["status"]) for r in transcript if r["type"] == "result"] == [(1, "compile_error"),
                                                                                       (2, "not_run")]
    # resumed: the start is the model's kernel still, and no new first kernel is asked for
    again = CliRunner().invoke(app, ["optimize", "--resume", str(run_dir), "--budget", "4", "--out",
                                     str(tmp_path / "out")], env={"KAGENT_CONFIG": str(config)})
    assert "no starting kernel" not in again.output


def test_a_first_kernel_that_stays_broken_ends_the_run_with_its_session(tanh_task, tmp_path, no_gpu):
    config = config_file(tmp_path, timeout_s=5.0, max_attempts=1)
    with FakeOpenAI([answer(f"```cuda\n{BROKEN_TANH}```")]) as server:
        result = optimize(tanh_task, tmp_path / "out", "--llm", "test-model", "--llm-base-url", server.base_url,
                          env={"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""})
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "still compile_error after" in said and "--resume" in said


def test_bench_as_written_says_what_is_missing(tanh_task, tmp_path):
    result = CliRunner().invoke(app, ["bench", str(tanh_task.parent), "--out", str(tmp_path / "bench")])
    (report,) = (tmp_path / "bench").glob("*/results.json")
    rows = json.loads(report.read_text())["tasks"]
    assert rows[0]["status"] == "not_run" and "no starting kernel" in rows[0]["message"], result.output


def test_bench_optimizes_an_imported_suite_with_the_fixture_served_model(tanh_task, tmp_path, no_gpu):
    """The path the H200 bench takes (there on the GPU; here compile-only): each task's first kernel
    comes from the model, which the routing server answers with the task's fixture kernel."""
    from tests.llm.routing_server import RoutingOpenAI

    config = config_file(tmp_path, timeout_s=5.0, max_attempts=1)
    with RoutingOpenAI({"l1_01_scaled_tanh": NAIVE_TANH}) as server:
        result = CliRunner().invoke(app, ["bench", str(tanh_task.parent), "--optimize", "--budget", "2",
                                          "--out", str(tmp_path / "bench"), "--llm", "fixture",
                                          "--llm-base-url", server.base_url],
                                    env={"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""})
        first = TASK_LINE.search(server.requests[0]["messages"][-1]["content"])
    assert result.exit_code == 0, result.output
    (report,) = (tmp_path / "bench").glob("*/results.json")
    (row,) = json.loads(report.read_text())["tasks"]
    assert row["status"] == "not_run" and row["has_library"], row  # compiled; no GPU to run it here
    assert first is not None and first.group(1) == "l1_01_scaled_tanh"
    (start,) = (tmp_path / "bench").glob("*/optimize/l1_01_scaled_tanh/*/given/start.cu")
    assert start.read_text() == NAIVE_TANH

"""`kagent optimize --kernel FILE`: a kernel of the user's (e.g. one fixed in `kagent repair`) joins the
run's kernels beside the task's; the run keeps a copy, so a resume or `kagent measure` finds it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernel_agent.cli import app
from tests.llm.test_compile_only_loop import WARP_PER_ROW, no_gpu, task_without_recording  # noqa: F401

ENV = {"KAGENT_LLM_MODEL": "", "OPENAI_BASE_URL": ""}


def test_a_given_kernel_is_measured_with_the_tasks_own_and_kept_in_the_run(tmp_path, no_gpu):  # noqa: F811
    task = task_without_recording(tmp_path)
    mine = tmp_path / "my softmax.cu"
    mine.write_text(WARP_PER_ROW)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["optimize", str(task), "--kernel", str(mine), "--out", str(out), "--budget",
                                      "4", "--no-llm", "--no-warm-start"], env=ENV)
    assert result.exit_code == 0, result.output
    (run,) = (out / "softmax_unrecorded").iterdir()
    assert json.loads((run / "run.json").read_text())["given"] == ["given_my_softmax"]
    assert (run / "given" / "given_my_softmax.cu").read_text() == WARP_PER_ROW
    kernels = [json.loads(line)["kernel"] for line in (run / "attempts.jsonl").read_text().splitlines()]
    assert kernels[:2] == ["baseline", "given_my_softmax"]
    result = CliRunner().invoke(app, ["optimize", "--resume", str(run), "--kernel", str(mine), "--out", str(out)],
                                env=ENV)
    assert result.exit_code == 2 and "--kernel starts a new run" in result.output


def test_a_given_file_that_is_no_kernel_is_refused_before_any_run_folder_is_made(tmp_path, no_gpu):  # noqa: F811
    task = task_without_recording(tmp_path)
    bad = tmp_path / "notes.cu"
    bad.write_text("__global__ void f() {}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["optimize", str(task), "--kernel", str(bad), "--out", str(out), "--no-llm"],
                                env=ENV)
    assert result.exit_code == 2 and f"--kernel {bad}" in result.output
    assert not (out / "softmax_unrecorded").exists() or not any((out / "softmax_unrecorded").iterdir())

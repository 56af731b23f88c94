"""Issue 12: a recording answers only for what was recorded (same task, same kernel source), and a knob
space too large to enumerate is counted and refused, never enumerated."""

from __future__ import annotations

import json
import shutil
import time

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.recording import RECORDINGS
from sandbox import load_kernel
from tests.paths import LAYERNORM, ROOT

RECORDING = RECORDINGS / "layernorm.json"
HUGE_KNOBS = "".join(f"// @kagent knob K{i} [compute]: {' '.join(str(v) for v in range(10))}\n" for i in range(10))


def kagent(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def task_copy(tmp_path):
    folder = tmp_path / "task"
    shutil.copytree(ROOT / "tasks" / "level1" / "layernorm", folder / "layernorm")
    shutil.copy(LAYERNORM, folder / "layernorm.yaml")
    return folder / "layernorm.yaml"


def test_an_edited_kernel_is_compiled_for_real_not_replayed(task_copy, tmp_path):
    variant = task_copy.parent / "layernorm" / "rowblock.cu"
    variant.write_text(variant.read_text().replace("__syncthreads();", "__syncthreads() oops;", 1))
    result = kagent("optimize", task_copy, "--executor", "replay", "--recording", RECORDING, "--out",
                    tmp_path / "out", "--budget", 8)
    assert result.exit_code == 0, result.output  # the baseline stays correct: the run ends with it
    assert "kernel rowblock changed since" in " ".join(result.output.split())
    (run_dir,) = (tmp_path / "out" / "layernorm").iterdir()
    rows = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows if r["kernel"] == "rowblock"} == {"compile_error"}
    assert all(r["kernel"] == "baseline" for r in rows if r["status"] == "ok")
    assert not (run_dir / "best.cu").exists() or load_kernel(run_dir / "best.cu").source.count("oops") == 0


def test_a_changed_task_is_refused(task_copy, tmp_path):
    task_copy.write_text(task_copy.read_text().replace("atol: 1.0e-4", "atol: 1.0e-3"))
    result = kagent("optimize", task_copy, "--executor", "replay", "--recording", RECORDING, "--out", tmp_path)
    assert result.exit_code == 3
    assert "recorded for another version of task layernorm" in " ".join(result.output.split())


def test_a_renamed_copy_of_a_recorded_kernel_is_still_answered(task_copy, tmp_path):
    folder = task_copy.parent / "layernorm"
    shutil.copy(folder / "rowblock.cu", folder / "renamed.cu")
    task_copy.write_text(task_copy.read_text().replace("rowblock: layernorm/rowblock.cu",
                                                       "rowblock: layernorm/renamed.cu"))
    result = kagent("optimize", task_copy, "--executor", "replay", "--recording", RECORDING, "--out",
                    tmp_path / "out", "--budget", 6)
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out" / "layernorm").iterdir()
    rows = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in rows)


def test_a_huge_knob_space_is_counted_and_refused(task_copy, tmp_path):
    variant = task_copy.parent / "layernorm" / "rowblock.cu"
    variant.write_text(HUGE_KNOBS + variant.read_text())
    began = time.monotonic()
    validate = kagent("tasks", "validate", task_copy, "--all-knobs", "--quick")
    assert validate.exit_code == 2
    text = " ".join(validate.output.split())
    declared = load_kernel(ROOT / "tasks" / "level1" / "layernorm" / "rowblock.cu").combinations
    assert f"rowblock (rowblock.cu): {declared * 10**10:,} knob combinations, over the limit of 10,000" in text
    assert f"--max-combinations {declared * 10**10}" in text
    sweep = kagent("sweep", task_copy, "--compile-only", "--out", tmp_path / "sweep.json")
    assert sweep.exit_code == 2 and f"{declared * 10**10 + 1:,} knob combinations" in " ".join(sweep.output.split())
    optimize = kagent("optimize", task_copy, "--executor", "replay", "--recording", RECORDING, "--out",
                      tmp_path / "out")
    assert optimize.exit_code == 3 and "does not cover the task's space" in " ".join(optimize.output.split())
    assert time.monotonic() - began < 60

"""The command line as a user meets it: exit codes, JSON, clear messages instead of tracebacks."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.task import discover
from tests.conftest import GPU
from tests.paths import KERNELS, LAYERNORM, ROOT

runner = CliRunner()


def kagent(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_help_explains_each_command():
    result = kagent("--help")
    assert result.exit_code == 0
    for command in ("check", "doctor", "optimize", "tasks"):
        assert command in result.output
    assert "--compile-only" in kagent("check", "--help").output


def test_compile_only_json_for_the_baseline():
    result = kagent("check", LAYERNORM, "--compile-only", "--json")
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.output)
    assert outcome["status"] == "ok" and outcome["arch"]
    assert outcome["resources"][0]["name"] == "layernorm" and outcome["resources"][0]["registers"] > 0


def test_compile_only_reports_the_compile_error_line():
    result = kagent("check", LAYERNORM, KERNELS / "compile_error.cu", "--compile-only", "--json")
    assert result.exit_code == 1
    outcome = json.loads(result.output)
    assert outcome["status"] == "compile_error"
    assert "compile_error.cu(8): error" in outcome["message"]


def test_compile_only_catches_resource_limits():
    result = kagent("check", LAYERNORM, KERNELS / "too_many_registers.cu", "--compile-only", "--json")
    assert result.exit_code == 1 and json.loads(result.output)["status"] == "resource_error"


def test_knobs_are_validated():
    variant = ROOT / "tasks" / "level1" / "layernorm" / "rowblock.cu"
    assert kagent("check", LAYERNORM, variant, "--compile-only", "--knob", "BLOCK=128").exit_code == 0
    bad_value = kagent("check", LAYERNORM, variant, "--compile-only", "--knob", "BLOCK=100")
    assert bad_value.exit_code == 2 and "not one of its values" in bad_value.output
    bad_form = kagent("check", LAYERNORM, variant, "--compile-only", "--knob", "BLOCK")
    assert bad_form.exit_code == 2 and "NAME=VALUE" in bad_form.output


@pytest.mark.parametrize("args, message", [
    (["tasks/absent.yaml"], "no such task file"),
    ([LAYERNORM, "absent.cu"], "no such kernel file"),
    ([LAYERNORM, ROOT / "tasks" / "level1" / "layernorm" / "reference.py"], "no '// @kagent entry"),
])
def test_bad_input_is_exit_code_2_without_traceback(args, message):
    result = kagent("check", *args, "--compile-only")
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


@pytest.mark.skipif(GPU, reason="checks the message shown on a machine without a GPU")
def test_running_without_a_gpu_says_so():
    result = kagent("check", LAYERNORM)
    assert result.exit_code == 3 and "--compile-only" in result.output


@pytest.mark.slow  # every task's kernels compiled (test_suite.py checks every knob combination, also slow)
def test_tasks_validate_passes_on_the_repository():
    result = kagent("tasks", "validate", ROOT / "tasks", "--quick")
    assert result.exit_code == 0, result.output
    count = len(discover(ROOT / "tasks"))
    assert f"{count} of {count} tasks valid" in result.output and "FAIL" not in result.output


def test_doctor_compiles_without_a_gpu():
    result = kagent("doctor")
    assert result.exit_code == 0, result.output
    assert "NVRTC" in result.output and "compile test for sm_" in result.output



@pytest.mark.parametrize("args, message", [
    (["--arch", "sm_1000"], "--arch sm_1000: architecture 'sm_1000' is not like sm_90; supported: sm_"),
    (["--flag", "-I/etc"], "--flag: compile flag '-I/etc' is not allowed"),
])
def test_a_bad_arch_or_flag_is_bad_input(args, message):
    result = kagent("check", LAYERNORM, "--compile-only", *args)
    assert result.exit_code == 2 and message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_kernel_that_includes_a_host_file_is_refused_without_quoting_it(tmp_path):
    kernel = tmp_path / "spy.cu"
    kernel.write_text('#include "/etc/passwd"\n' + (ROOT / "tasks" / "level1" / "layernorm" / "naive.cu").read_text())
    result = kagent("check", LAYERNORM, kernel, "--compile-only", "--json")
    assert result.exit_code == 1, result.output
    outcome = json.loads(result.output)
    assert outcome["status"] == "compile_error" and "refused" in outcome["log"]
    assert "root:x:0" not in result.output


def test_a_header_beside_the_kernel_may_be_included(tmp_path):
    shutil.copytree(ROOT / "tasks" / "level1" / "layernorm", tmp_path / "layernorm")
    (tmp_path / "layernorm" / "eps.cuh").write_text("#define EPS_SCALE 1.0f\n")
    naive = (tmp_path / "layernorm" / "naive.cu")
    naive.write_text('#include "eps.cuh"\n' + naive.read_text())
    task = tmp_path / "layernorm.yaml"
    task.write_text(LAYERNORM.read_text())
    assert kagent("check", task, "--compile-only").exit_code == 0


def test_an_unwritable_cache_is_a_warning_line_not_a_failure(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = runner.invoke(app, ["check", str(LAYERNORM), "--compile-only"], env={"KAGENT_CACHE_DIR": str(blocker)})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "warning: the compile cache" in text and "compiling without a cache" in text
    assert "Traceback" not in result.output and "RuntimeWarning" not in result.output


@pytest.mark.parametrize("grid", ["1e200 ** 2", "ceil_div(rows, 0)", "(0 - 1) ** 0.5"])
def test_a_grid_that_is_no_size_is_a_launch_error(tmp_path, grid):
    source = (ROOT / "tasks" / "level1" / "layernorm" / "naive.cu").read_text()
    kernel = tmp_path / "k.cu"
    kernel.write_text("\n".join(f"// @kagent grid: {grid}" if line.startswith("// @kagent grid:") else line
                                for line in source.splitlines()))
    result = kagent("check", LAYERNORM, kernel, "--compile-only", "--json")
    assert result.exit_code == 1, result.output
    outcome = json.loads(result.output)
    assert outcome["status"] == "launch_error" and "layernorm grid" in outcome["message"]

"""Task files: malformed ones fail with the field path and what was expected."""

import shutil

import pytest
import yaml

from kernel_agent.task import TaskError, load_task
from kernel_agent.validate import validate_task
from tests.paths import LAYERNORM, ROOT


@pytest.fixture
def task_copy(tmp_path):
    """A writable copy of the layernorm task; returns (path, data) to edit and re-save."""
    shutil.copytree(LAYERNORM.parent / "layernorm", tmp_path / "layernorm")
    path = tmp_path / "layernorm.yaml"
    data = yaml.safe_load(LAYERNORM.read_text())

    def save(**changes):
        path.write_text(yaml.safe_dump({**data, **changes}))
        return path

    return save, data


def test_layernorm_loads(layernorm):
    assert layernorm.dims == {"rows": 16384, "cols": 4096}
    assert len(layernorm.check_sizes) >= 3
    timed = layernorm.problem().sizes[0]
    assert timed.bytes_moved == 4 * (2 * 16384 * 4096 + 2 * 4096)
    assert [b.name for b in timed.buffers] == ["x", "gamma", "beta", "y"]


@pytest.mark.parametrize("change, message", [
    (dict(inputs={"x": {"shape": ["rows", "cols"], "dtype": "float17"}}), "inputs.x.dtype: .*unknown dtype 'float17'"),
    (dict(outputs={}), "outputs: .*at least 1"),
    (dict(dims={"rows": 4}), "check_sizes.0: has dims"),
    (dict(params=["x", "gamma", "beta", "y", "rows", "cols", "epsilon"]), "params.6: unknown name 'epsilon'"),
    (dict(outputs={"y": {"shape": ["rows", "width"], "atol": 1e-4}}), "outputs.y.shape: unknown dim 'width'"),
    (dict(outputs={"y": {"shape": ["rows", "cols"], "atol": -1}}), "outputs.y.atol: .*greater than or equal to 0"),
    (dict(cost={"bytes": "rows * depth"}), "cost.bytes: unknown names \\['depth'\\]"),
    (dict(cost={"bytes": "open('x')"}), "cost.bytes: .*unknown function"),
    (dict(baseline="layernorm/missing.cu"), "baseline: file 'layernorm/missing.cu' not found"),
    (dict(reference="layernorm/reference.py"), "reference: expected 'file.py:function'"),
    (dict(colour="blue"), "colour: Extra inputs are not permitted"),
    (dict(check_sizes=[{"rows": 0, "cols": 3}]), "rows=0 must be at least 1"),
    # issue 12: values that parse but cannot be used
    (dict(cost={"bytes": "rows / (cols - 4096)"}), "cost.bytes: division by zero .* at (cols=4096 rows=16384|rows=16384 cols=4096)"),
    (dict(cost={"flops": "9 ** 9 ** 9"}), "cost.flops: exponent .* too large"),
    (dict(cost={"bytes": "rows - cols"}), "cost.bytes: 'rows - cols' is -?\\d+ at .*, not a finite number >= 0"),
    (dict(outputs={"y": {"shape": ["rows", -3]}}), "outputs.y.shape: .*a fixed axis must be at least 1, got -3"),
    (dict(dims={"rows": 2**31, "cols": 4096}), "rows=2147483648 does not fit the kernels' int32 index type"),
    (dict(scalars={"eps": {"dtype": "int32", "value": 2**31}}), "scalars.eps: .*does not fit int32"),
    (dict(scalars={"eps": {"dtype": "int64", "value": 2.5}}), "scalars.eps: .*not a whole number"),
    (dict(scalars={"eps": {"dtype": "float32", "value": 1e39}}), "scalars.eps: .*not a finite float32"),
])
def test_malformed_task_names_the_field(task_copy, change, message):
    save, _ = task_copy
    with pytest.raises(TaskError, match=message):
        load_task(save(**change))


def test_not_a_mapping_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(TaskError, match="expected a mapping"):
        load_task(bad)
    with pytest.raises(TaskError, match="no such task file"):
        load_task(tmp_path / "absent.yaml")


def test_validate_warns_when_a_constant_output_would_pass(task_copy):
    save, data = task_copy
    loose = dict(data["outputs"]["y"], atol=100.0)
    report = validate_task(save(outputs={"y": loose}), compile_kernels=False, quick=True)
    assert report.ok and any("passes the tolerance at every check size" in w for w in report.warnings)


def test_validate_reports_a_crashing_reference(task_copy, tmp_path):
    save, _ = task_copy
    (tmp_path / "layernorm" / "broken.py").write_text("def f(x, gamma, beta, eps):\n    raise RuntimeError('bug')\n")
    report = validate_task(save(reference="layernorm/broken.py:f"), compile_kernels=False)
    assert not report.ok and "RuntimeError: bug" in report.errors[0]


def test_validate_compiles_every_kernel(task_copy, tmp_path):
    save, _ = task_copy
    (tmp_path / "layernorm" / "broken.cu").write_text(
        "// @kagent entry: layernorm\n// @kagent grid: rows\n// @kagent block: 32\n"
        'extern "C" __global__ void layernorm(const float* x) { oops; }\n')
    report = validate_task(save(variants={"broken": "layernorm/broken.cu"}), quick=True)
    assert not report.ok
    assert any("broken" in e and "compile_error" in e and "broken.cu(4)" in e for e in report.errors)
    assert "baseline" in report.kernels


def test_duplicate_keys_are_an_error_not_a_silent_overwrite(tmp_path):
    text = LAYERNORM.read_text()
    twice = tmp_path / "layernorm.yaml"
    shutil.copytree(LAYERNORM.parent / "layernorm", tmp_path / "layernorm")
    twice.write_text(text + "\nbaseline: layernorm/rowblock.cu\n")
    with pytest.raises(TaskError, match="key 'baseline' appears twice"):
        load_task(twice)


def test_a_task_file_that_is_not_utf8_is_named(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_bytes(LAYERNORM.read_bytes().replace(b"layernorm", b"layern\xff\xfem", 1))
    with pytest.raises(TaskError, match="not UTF-8 text"):
        load_task(broken)


def test_the_fingerprint_follows_what_decides_a_verdict_only(task_copy):
    save, data = task_copy
    first = load_task(save()).fingerprint()
    assert load_task(save(description="reworded", family="other")).fingerprint() == first
    tighter = {**data["outputs"], "y": {**data["outputs"]["y"], "atol": 1e-7}}
    assert load_task(save(outputs=tighter)).fingerprint() != first
    reference = LAYERNORM.parent / "layernorm" / "reference.py"
    copy = save().parent / "layernorm" / "reference.py"
    copy.write_text(reference.read_text() + "\n# edited\n")
    assert load_task(save()).fingerprint() != first


def test_the_reference_a_prompt_shows_carries_the_module_names_it_uses():
    from kernel_agent.task import function_with_its_names, numeric_constants

    module = ('"""doc"""\nimport numpy as np\n\nK, PAD = 8, 4  # the window\nUNUSED = 3\n_C = np.sqrt(2.0)\n\n'
              'def _scale(v):\n    return v * _C\n\ndef ref(x):\n    return _scale(x[:, :K]) + PAD\n\n'
              'def torch_ref(x):\n    return x\n')
    shown = function_with_its_names(module, "ref")
    assert shown.startswith("K, PAD = 8, 4\n\n_C = np.sqrt(2.0)\n\ndef _scale(v):")
    assert shown.endswith("return _scale(x[:, :K]) + PAD") and "UNUSED" not in shown and "torch_ref" not in shown
    assert function_with_its_names(module, "missing") == ""
    assert numeric_constants(module) == {"K": "8", "PAD": "4", "UNUSED": "3"}  # _C is not a number literal
    maxpool = load_task(ROOT / "tasks" / "naive" / "maxpool1d.yaml")
    assert "KERNEL, PAD, DILATION = 8, 4, 3" in maxpool.reference_source()

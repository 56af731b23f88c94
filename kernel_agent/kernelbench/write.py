"""Writing an analysed KernelBench problem as a kagent task: `NAME.yaml` and `NAME/` holding the problem
file (unchanged: the prompts show it) and `reference.py` (the model on the CPU as the reference, torch
eager on the GPU as the library baseline). There is no starting kernel: a model writes the first."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from sandbox import DTYPES

from .analyze import Analysis, axis_length

# KernelBench's own tolerances per precision (atol = rtol), as its eval applies them
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2, "float64": 1e-6}

REFERENCE = '''"""KernelBench problem {file} as a kagent task (written by `kagent import kernelbench`): the reference
runs its PyTorch model on the CPU; the library baseline is torch eager on the GPU. Parameters of the
model are inputs of the task (p_...), set into the model before each run."""

from pathlib import Path

from kernel_agent.kernelbench.runtime import Runner

RUNNER = Runner(Path(__file__).with_name("problem.py"), inputs={inputs!r}, params={params!r}, sizes={sizes!r})


def reference({signature}):
    return RUNNER.reference(locals())


def torch_eager({signature}):
    return RUNNER.library(locals())
'''


def write_task(analysis: Analysis, problem: Path, out: Path) -> Path:
    """Write the task under `out`; return the task file's path."""
    folder = out / analysis.name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(problem, folder / "problem.py")
    tensors_in = [t for t in analysis.tensors if t.source != "output"]
    scalars = list(analysis.scalars)
    by_position = sorted([*[(t.key, t.name, "tensor") for t in analysis.of("input")],
                          *[(pos, name, "scalar") for name, (_, _, pos) in analysis.scalars.items()]])
    names = [t.name for t in tensors_in] + scalars + analysis.sizes
    (folder / "reference.py").write_text(REFERENCE.format(
        file=problem.name, inputs=[(name, kind) for _, name, kind in by_position],
        params={t.name: t.key for t in analysis.of("param")}, sizes=analysis.sizes,
        signature=", ".join(names)), encoding="utf-8")
    outputs = analysis.of("output")
    moved = [f"{DTYPES[t.dtype].itemsize} * {_count(t.shape)}" for t in [*tensors_in, *outputs]]
    task: dict[str, Any] = {
        "name": analysis.name,
        "description": f"KernelBench {problem.parent.name}/{problem.name}: {analysis.description}",
        "reference": f"{analysis.name}/reference.py:reference",
        "library": f"{analysis.name}/reference.py:torch_eager",
        "model_source": f"{analysis.name}/problem.py",
        "dims": analysis.timed,
        **({"derived": analysis.derived} if analysis.derived else {}),
        "check_sizes": analysis.checks,
        "index_dtype": "int64" if _needs_int64(analysis) else "int32",
        "inputs": {t.name: {"shape": t.shape, "dtype": t.dtype, "init": t.init} for t in tensors_in},
        "outputs": {t.name: {"shape": t.shape, "dtype": t.dtype,
                             **({"atol": TOLERANCE[t.dtype], "rtol": TOLERANCE[t.dtype]} if t.dtype in TOLERANCE
                                else {})} for t in outputs},
        **({"scalars": {name: {"dtype": dtype, "value": value}
                        for name, (dtype, value, _) in analysis.scalars.items()}} if analysis.scalars else {}),
        "params": [*[t.name for t in tensors_in], *[t.name for t in outputs], *scalars, *analysis.sizes,
                   *analysis.derived],
        "cost": {"bytes": " + ".join(moved)},
    }
    path = out / f"{analysis.name}.yaml"
    path.write_text(f"# imported by kagent import kernelbench from {problem}\n"
                    + yaml.safe_dump(task, sort_keys=False, width=120), encoding="utf-8")
    return path


def _count(shape: list[str | int]) -> str:
    return " * ".join(map(str, shape)) if shape else "1"


def _needs_int64(analysis: Analysis) -> bool:
    """The element count of some tensor at the timed size does not fit an int index."""
    for tensor in analysis.tensors:
        count = 1
        for axis in tensor.shape:
            count *= axis_length(axis, analysis.timed, analysis.derived)
        if count >= 2**31:
            return True
    return False

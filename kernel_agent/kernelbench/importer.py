"""Importing a problem file or a folder of them: each becomes a task that validates, or is listed with
the reason it cannot be one. `import.json` in the output folder keeps the outcome of every file."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from ..validate import validate_task
from .analyze import analyze
from .problem import ProblemError
from .write import write_task


@dataclass
class Imported:
    problem: str
    task: str | None  # the task file written (None: not imported)
    status: str  # "imported" (and validates), "invalid" (written, but validation failed), "rejected"
    reason: str = ""


def problem_files(path: Path) -> list[Path]:
    """The problem files under `path` (a file, or a folder searched recursively), in KernelBench's order."""
    if path.is_file():
        return [path]

    def order(p: Path) -> tuple:
        number = p.stem.split("_", 1)[0]
        return (str(p.parent), int(number) if number.isdigit() else 1 << 30, p.name)

    return sorted((p for p in path.rglob("*.py") if not p.name.startswith("_")), key=order)


def import_problems(files: list[Path], out: Path, validate: bool = True,
                    on_each: Callable[[Imported], None] = lambda _: None) -> list[Imported]:
    """Import every file into `out` (one task each); validation runs the reference at the check sizes."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ProblemError("reading KernelBench problems needs PyTorch here (pip install torch)") from None
    out.mkdir(parents=True, exist_ok=True)
    results: list[Imported] = []
    for file in files:
        try:
            task_file = write_task(analyze(file), file, out)
        except ProblemError as exc:
            result = Imported(str(file), None, "rejected", str(exc))
        else:
            result = Imported(str(file), str(task_file), "imported")
            if validate:
                report = validate_task(task_file, compile_kernels=False, quick=True)
                if not report.ok:
                    result.status, result.reason = "invalid", "; ".join(report.errors)
        results.append(result)
        on_each(result)
        (out / "import.json").write_text(json.dumps([asdict(r) for r in results], indent=1))
    return results

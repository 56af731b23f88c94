"""`kagent import kernelbench PATH`: KernelBench problems as tasks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer
from rich.markup import escape

from ..kernelbench.importer import Imported, import_problems, problem_files
from ..kernelbench.problem import ProblemError
from ..render import console
from .app import app, fail

import_app = typer.Typer(help="Turn other benchmarks' problems into kagent tasks.", no_args_is_help=True,
                         rich_markup_mode="markdown")
app.add_typer(import_app, name="import")


@import_app.command("kernelbench")
def kernelbench_command(
    path: Path = typer.Argument(..., help="A KernelBench problem file, or a folder of them (e.g. your checkout's "
                                          "KernelBench/level1)."),
    out: Path = typer.Option(Path("tasks/kernelbench"), help="Folder for the tasks (NAME.yaml and NAME/) and "
                                                             "import.json."),
    validate: bool = typer.Option(True, "--validate/--no-validate",
                                  help="Run each task's reference at its check sizes (PyTorch on the CPU)."),
) -> None:
    """Write a kagent task for each KernelBench problem (`Model`, `get_inputs`, `get_init_inputs`).

    Each task gets the problem's inputs (and the model's parameters, as inputs named p_...) with their
    shapes named by the problem's size constants, its own size as the timed size, smaller check sizes
    made by re-running the file with smaller constants, the PyTorch model on the CPU as the reference,
    torch eager on the GPU as the library baseline, KernelBench's tolerances, and the problem's source
    for the prompts. It has no starting kernel: a model writes the first. A problem that cannot be a
    task (a random op, a data-dependent shape, an unsupported dtype) is listed with the reason. Needs
    PyTorch. Exit code 0 when every problem imported and validated, 1 when some did not, 2 for bad input.
    """
    if not path.exists():
        fail(2, f"no such file or folder: {path}")
    files = problem_files(path)
    if not files:
        fail(2, f"no problem files (*.py) under {path}")

    def show(result: Imported) -> None:
        mark = {"imported": "[green]imported[/]", "invalid": "[red]invalid[/]", "rejected": "[yellow]rejected[/]"}
        where = f" -> {escape(result.task)}" if result.task else ""
        reason = f": {escape(result.reason)}" if result.reason else ""
        console.print(f"{mark[result.status]} {escape(Path(result.problem).name)}{where}{reason}", soft_wrap=True)

    try:
        results = import_problems(files, out, validate, show)
    except ProblemError as exc:
        fail(3, str(exc))
    counts = Counter(r.status for r in results)
    console.print(f"{counts['imported']} of {len(results)} imported" + (" and valid" if validate else "")
                  + f"; {counts['rejected']} rejected, {counts['invalid']} invalid; see {out / 'import.json'}",
                  markup=False)
    raise typer.Exit(0 if counts["imported"] == len(results) else 1)

"""`kagent port` and `kagent skeletons`: a skeleton's slots filled for a task, and the library listed."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from sandbox import Status, ToolchainError

from ..check import check
from ..render import console
from ..skeletons import SkeletonError, fitting, library, port
from ..task import TaskError, discover, load_task
from .app import app, arch_option, fail, notice


@app.command("port")
def port_command(
    task_path: Path = typer.Argument(..., help="Task YAML, or a folder of tasks (then --fills is a folder too)."),
    fills: Path = typer.Option(..., "--fills", help="Fill file: a `skeleton: NAME` line, then one fenced block "
                                                   "per slot named by its info string; or a folder of TASK.md."),
    skeleton: str | None = typer.Option(None, help="Skeleton to fill [default: the fill file's `skeleton:` line]."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Kernel file to write (a folder for a folder of tasks) [default: print it]."),
    compile_check: bool = typer.Option(True, "--compile/--no-compile",
                                       help="Compile the kernel with NVRTC and resolve its launches at every size."),
    arch: str = typer.Option("sm_90", help="Architecture to compile for."),
) -> None:
    """Fill a skeleton's slots for a task: the result is an ordinary kernel file.

    The skeletons (`kagent skeletons`) are expert, knobbed kernels with named slots for a task's math;
    a fill gives each slot a few lines. Check, sweep, optimize and bench take the kernel like any
    other, e.g. `kagent bench tasks/naive --kernels DIR` after porting a folder into DIR.
    """
    arch_option(arch)
    if task_path.is_dir():
        if not fills.is_dir():
            fail(2, f"{task_path} is a folder of tasks: --fills must be a folder of TASK.md files")
        if out is None:
            fail(2, "porting a folder of tasks needs --out DIR")
        pairs = [(path, fills / f"{path.stem}.md") for path in discover(task_path)]
        missing = [path.stem for path, fill in pairs if not fill.exists()]
        if missing:
            notice(f"no fill file for {', '.join(missing)} in {fills}: not ported")
        out.mkdir(parents=True, exist_ok=True)
        failed = sum(not _port_one(path, fill, skeleton, out / f"{path.stem}.cu", compile_check, arch)
                     for path, fill in pairs if fill.exists())
        if failed:
            raise typer.Exit(1)
        return
    if not _port_one(task_path, fills, skeleton, out, compile_check, arch):
        raise typer.Exit(1)


def _port_one(task_file: Path, fills: Path, skeleton: str | None, out: Path | None, compile_check: bool,
              arch: str) -> bool:
    try:
        task = load_task(task_file)
        text = fills.read_text()
    except TaskError as exc:
        fail(2, str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        fail(2, f"{fills}: cannot read it ({exc})")
    try:
        instance = port(task, text, skeleton)
    except SkeletonError as exc:
        fail(2, f"{task.name}: {exc}")
    if out is None:
        console.print(instance.source, markup=False, highlight=False, end="")
        return True
    out.write_text(instance.source)
    if not compile_check:
        console.print(f"{task.name}: wrote {out} (skeleton {instance.skeleton})", markup=False)
        return True
    try:
        outcome = check(task, out, arch=arch)
    except ToolchainError as exc:
        fail(3, str(exc))
    good = outcome.status is Status.not_run
    verdict = "compiles and launches at every size" if good else f"{outcome.status.value}: {outcome.message}"
    console.print(f"{task.name}: wrote {out} (skeleton {instance.skeleton}): {verdict}", markup=False)
    return good


@app.command("skeletons")
def skeletons_command(
    task_file: Path | None = typer.Argument(None, help="Task YAML: list only the skeletons that fit it."),
) -> None:
    """List the skeleton library: each skeleton's pattern, families and slots."""
    skeletons = list(library().values())
    if task_file is not None:
        try:
            skeletons = fitting(load_task(task_file))
        except TaskError as exc:
            fail(2, str(exc))
    table = Table(title="skeletons" + (f" fitting {escape(str(task_file))}" if task_file else ""))
    for column in ("skeleton", "families", "pattern", "slots"):
        table.add_column(column)
    for s in skeletons:
        slots = ", ".join(s.name + ("?" if s.optional else "") for s in s.slots)
        table.add_row(s.name, ", ".join(s.families), escape(s.summary), slots)
    console.print(table)
    if task_file is not None and not skeletons:
        console.print("no skeleton fits this task's family", markup=False)

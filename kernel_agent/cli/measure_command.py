"""`kagent measure`: a compile-only run's kernels measured on a GPU afterwards; its report and trajectory completed."""

from __future__ import annotations

from pathlib import Path

import typer

from sandbox import BaselineFailed, DirectiveError, KernelError, SandboxError, Settings, ToolchainError

from ..optimize.executors import ExecutorError
from ..optimize.measure import MeasureError, measure_on_gpu
from ..optimize.run_config import RunFolderError
from ..optimize.session import OptimizeInputError, resume_run
from ..render import console, errors
from ..render.progress import measure_progress
from ..render.tables import show_measured
from ..task import TaskError
from .app import app, check_positive, fail, sigterm_as_interrupt


@app.command()
def measure(
    run: str = typer.Argument(..., help="The compile-only run: its folder, or its run id under --out."),
    out: Path = typer.Option(Path("results"), help="Folder of runs (OUT/TASK/RUN/) and of the attempt store."),
    device: int = typer.Option(0, help="GPU index."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per candidate."),
    again: bool = typer.Option(False, "--again",
                               help="Measure a run that was measured already once more (from its compile-only "
                                    "journal, attempts.compile-only.jsonl)."),
) -> None:
    """Measure a compile-only run's kernels on a GPU, and complete its report and trajectory.

    Write on a laptop, measure on the GPU box: `kagent optimize --executor compile-only` (what a machine
    with neither a GPU nor a recording does) compiles every kernel and plans its launches, and runs none
    (`not_run`). Here, on a machine with a GPU of the run's architecture, the baseline and every such
    attempt are checked and timed, rank rewards are recomputed batch by batch as the search would have
    given them, and the best kernel is re-measured beside the baseline and the library function. The
    run folder is then completed: attempts.jsonl, best.cu, report.md, progress.png, the model's
    kernels' verdicts in trajectory.jsonl, run.json (measured_on) and the attempt store; the compile-only
    journal and report are kept as attempts.compile-only.jsonl and report.compile-only.md.
    Needs a CUDA GPU; nothing is written before every measurement is in.
    """
    check_positive(budget_ms=budget_ms)
    try:
        found = resume_run(out, run, given_as="RUN")
        with sigterm_as_interrupt(), measure_progress(console, found.config.task) as line:
            measured = measure_on_gpu(found, device, Settings(budget_ms=budget_ms), again, line.notice, line.on_each)
    except (MeasureError, OptimizeInputError, RunFolderError, TaskError, KernelError, DirectiveError,
            BaselineFailed) as exc:
        fail(2, str(exc))
    except (ExecutorError, ToolchainError, SandboxError) as exc:
        fail(3, str(exc))
    except KeyboardInterrupt:
        errors.print("interrupted: the run is not marked measured (run.json is written last); run the same command "
                     "to measure it", markup=False)
        raise typer.Exit(130) from None
    show_measured(console, measured.result, measured.measured, found.folder)

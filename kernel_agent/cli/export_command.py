"""`kagent export`: kagent's own runs and repair sessions as datasets for fine-tuning (TRL's formats)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..render import console
from ..train.export import export
from ..train.samples import read_samples
from .app import app, fail


@app.command("export")
def export_command(
    paths: list[Path] = typer.Argument(..., help="Run folders, repair sessions or folders holding them (searched "
                                                 "for trajectory.jsonl and transcript.jsonl), e.g. results/."),
    out: Path = typer.Option(Path("results/datasets"), help="Folder for the datasets and manifest.json."),
    test_tasks: str | None = typer.Option(None, "--test-tasks",
                                          help="Comma-separated tasks held out for evaluation [default: a stable "
                                               "share of the tasks, --test-fraction]."),
    test_fraction: float = typer.Option(0.25, min=0.0, max=1.0, help="Share of the tasks held out."),
) -> None:
    """Write the model answers kagent kept as fine-tuning datasets, split by task.

    SFT (`sft.*.jsonl`: conversational prompt/completion, answers that became correct kernels, fastest
    first), preferences (`preference.*.jsonl`: prompt/chosen/rejected from answers to the same prompt),
    and RL prompts (`prompts.*.jsonl`: each task prompt once, with its task). Every file comes as
    `.train` and `.test`: the test tasks are in no training file.
    """
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(2, f"no such file or folder: {', '.join(missing)}")
    samples, skipped = read_samples(paths)
    if not samples:
        fail(2, f"no model answers under {', '.join(map(str, paths))} (runs with --llm keep them in "
                "trajectory.jsonl, repair sessions in transcript.jsonl)")
    named = {t.strip() for t in test_tasks.split(",") if t.strip()} if test_tasks else None
    manifest = export(samples, out, named, test_fraction, skipped)
    console.print(f"{manifest['samples']} answers from {len(manifest['tasks'])} tasks ({manifest['judged']} judged, "
                  f"{manifest['correct']} correct); held out: {', '.join(manifest['test_tasks']) or 'none'}",
                  markup=False)
    for name, parts in manifest["rows"].items():
        console.print(f"{name}: {parts['train']} train, {parts['test']} test", markup=False)
    for line in skipped:
        console.print(f"skipped {line}", markup=False)
    console.print(f"written to {out}", markup=False)

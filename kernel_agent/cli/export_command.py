"""`kagent export`: kagent's own runs and repair sessions as datasets for fine-tuning (TRL's formats)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..render import console
from ..train.export import export
from ..train.ports import port_samples
from ..train.samples import read_samples
from .app import app, fail


@app.command("export")
def export_command(
    paths: list[Path] = typer.Argument(None, help="Run folders, repair sessions or folders holding them (searched "
                                                  "for trajectory.jsonl and transcript.jsonl), e.g. results/."),
    ports: Path | None = typer.Option(None, "--ports",
                                      help="A folder of port fill files known correct (tests/data/ports, or the "
                                           "winners a GPU run kept in OUT/ported): each becomes an SFT row of the "
                                           "port prompt kagent sends and the fills as the answer."),
    tasks: list[Path] = typer.Option([Path("tasks")], "--tasks", help="Where --ports finds its tasks' files, by name."),
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
    `.train` and `.test`: the test tasks are in no training file. With --ports, port fill files known
    correct join them as answers to the port prompt of their task.
    """
    paths = paths or []
    if not paths and ports is None:
        fail(2, "give run folders or repair sessions to export, or --ports with a folder of port fill files")
    missing = [str(p) for p in [*paths, *([ports] if ports else [])] if not p.exists()]
    if missing:
        fail(2, f"no such file or folder: {', '.join(missing)}")
    samples, skipped = read_samples(paths)
    if ports is not None:
        ported, unusable = port_samples(sorted(ports.glob("*.md")) if ports.is_dir() else [ports], tasks)
        samples, skipped = samples + ported, skipped + unusable
    if not samples:
        fail(2, f"no model answers under {', '.join(map(str, paths))} (runs with --llm keep them in "
                "trajectory.jsonl, repair sessions in transcript.jsonl)" + (f" and no usable fills in {ports}"
                                                                              if ports else ""))
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

"""`kagent replay-bench --cache FILE`: kagent's strategies beside kernel_tuner's on other tuners'
recorded spaces (the part of replay-bench that needs no task file)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from ..bench import kernel_tuner_runs
from ..bench.side_by_side import OURS, bench_cache
from ..bench.side_by_side_report import HEADERS, row_cells, verdicts, write
from ..foreign_cache import ForeignCacheError, load_foreign
from ..render import console
from .app import fail


def kernel_tuner_choice(text: str) -> tuple[str, ...]:
    """--kernel-tuner: 'all' (every strategy that runs here), 'none', or names joined by commas."""
    if text == "none":
        return ()
    if not kernel_tuner_runs.available():
        fail(2, "kernel_tuner is not installed (pip install 'kagent[tuner]'), so its strategies cannot run beside "
                "kagent's; pass --kernel-tuner none to run kagent's alone")
    if text == "all":
        return kernel_tuner_runs.STRATEGIES
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in kernel_tuner_runs.STRATEGIES]
    if unknown or not names:
        fail(2, f"--kernel-tuner: unknown strategy {', '.join(unknown) or repr(text)}; choose all, none or some of "
                f"{', '.join(kernel_tuner_runs.STRATEGIES)}")
    return names


def replay_caches(caches: list[Path], seeds: int, budget: int, theirs: tuple[str, ...], out: Path) -> None:
    """Read every cache first (a bad one fails before any run), then bench each, then write the report."""
    loaded = []
    for path in caches:
        try:
            loaded.append(load_foreign(path))
        except ForeignCacheError as exc:
            fail(2, str(exc))
    benches = []
    runs = seeds * (len(OURS) + len(theirs))
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console) as progress:
        for cache in loaded:
            bar = progress.add_task(f"{cache.path.name}", total=runs)

            def advance(strategy: str, seed: int, bar=bar, name=cache.path.name) -> None:
                progress.update(bar, advance=1, description=f"{name}: {strategy} seed {seed}")
                if not console.is_terminal and seed == seeds - 1:  # no live bar in a log: a line a strategy
                    console.print(f"{name}: {strategy}, {seeds} seeds done", markup=False)

            benches.append(bench_cache(cache, seeds, budget, theirs=theirs, on_run=advance))
    wide = Console(width=max(console.width, 170), emoji=False)
    for bench in benches:
        table = Table(title=f"{bench.name}: {bench.kernel} on {bench.device}, {bench.size} configurations "
                            f"({bench.failures} failed), median [quartiles] over {seeds} seeds")
        for header in HEADERS:
            table.add_column(header)
        for result in bench.results:
            table.add_row(*(escape(cell) for cell in row_cells(bench, result)))
        wide.print(table)
        for line in verdicts(bench):
            console.print(escape(line))
    for path in write(benches, out, kernel_tuner_runs.kernel_tuner_version()):
        console.print(f"wrote {escape(str(path))}")

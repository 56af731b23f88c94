"""The `kagent` application and what every command shares: failing with an exit code, notices, and
the checks of values typer cannot express (finite times, known architectures, NAME=VALUE pairs).

Exit codes: 0 success (for `check`: a correct kernel); 1 the kernel failed (any failure class, or a
suspect timing); 2 bad input (task, kernel file, knob, flag, option value, damaged run folder);
3 the environment (no GPU, no NVRTC, a recording that does not fit); 130 interrupted.
"""

from __future__ import annotations

import contextlib
import math
import signal
import warnings
from collections.abc import Iterator
from typing import NoReturn

import typer
from rich.markup import escape

from sandbox import ToolchainError, UnsupportedArch, check_arch

from ..render import errors

MAX_SEED = 2**63 - 1  # seeds and token budgets are stored as SQLite's signed 64-bit integers
MAX_BUDGET = 1_000_000
MAX_BATCH = 1024

app = typer.Typer(help="kagent: write, repair and tune CUDA C kernels, proven correct on a real GPU.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode="markdown")
tasks_app = typer.Typer(help="Work with task files.", no_args_is_help=True, rich_markup_mode="markdown")
app.add_typer(tasks_app, name="tasks")


@app.callback()
def _setup() -> None:
    """A warning (e.g. an unwritable compile cache) is one yellow line, like every other notice."""
    warnings.showwarning = lambda message, category, *_, **__: notice(f"warning: {message}")


def fail(code: int, message: str) -> NoReturn:
    errors.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


def notice(text: str) -> None:
    errors.print(f"[yellow]{escape(text)}[/]")


def check_positive(**values: float | None) -> None:
    """Times and budgets must be finite and above zero (`nan`, `inf` and `-5` are refused, exit 2)."""
    for name, value in values.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            fail(2, f"--{name.replace('_', '-')} must be a finite number above 0, got {value}")


def arch_option(arch: str | None) -> str | None:
    """An --arch NVRTC cannot compile for is bad input (exit 2), named with the ones it can."""
    if arch is not None:
        try:
            check_arch(arch)
        except (UnsupportedArch, ToolchainError, ValueError) as exc:
            fail(2, f"--arch {arch}: {exc}")
    return arch


def knob_pairs(pairs: list[str]) -> dict[str, str]:
    """--knob/--fix NAME=VALUE options as a dict."""
    knobs = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name or not value:
            fail(2, f"--knob expects NAME=VALUE, got {pair!r}")
        knobs[name.strip()] = value.strip()
    return knobs


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """A `timeout` or a batch scheduler's SIGTERM stops the command the way Ctrl-C does."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

"""PNG charts drawn with matplotlib (the optional `kagent[plot]`): optimisation progress, bench speedups, roofline.

matplotlib is imported inside the functions, so importing kagent never needs it; without it each function returns
False and writes nothing. Figures are built without pyplot (a Figure on an Agg canvas: no display, no global
state) under matplotlib's default style (a user's matplotlibrc cannot change them) and saved without Software or
date metadata: the same data gives the same bytes.

Roofline: log-log axes of arithmetic intensity (FLOP/byte) against achieved GFLOP/s under the measured roof,
min(copy bandwidth x intensity, fp32 FMA rate). A kernel whose task counts bytes but no FLOPs has no intensity and
is not given an invented one: a side panel shows its achieved GB/s as a stem under the copy-bandwidth line. A
kernel with no byte count cannot be placed and is only named in the legend. Each legend entry gives the kernel's
share of the roof at its intensity (or of the copy bandwidth); above 100% the task's cost model is wrong.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from .files import write_atomic

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

DPI = 100
BEST, POINT, GREY = "#1f77b4", "#9ecae1", "#7f7f7f"
LIBRARY, SUSPECT, FAILED = "#2ca02c", "#ff7f0e", "#d62728"
# Marker and colour per failure class, in the order of the progress chart's rows; others get a black dot.
FAILURE_STYLES = {
    "compile_error": ("x", "#d62728"), "resource_error": ("s", "#9467bd"), "launch_error": ("^", "#8c564b"),
    "runtime_error": ("v", "#e377c2"), "timeout": ("D", "#bcbd22"), "wrong_result": ("P", "#17becf"),
    "nondeterministic": ("*", "#393b79"), "not_run": ("o", "#bbbbbb"),  # not_run: drawn hollow
}
VERTICAL_BARS_MAX = 12  # more tasks: horizontal bars, a row each, so that every name stays readable
LOG_RANGE = 30.0  # progress: a log y axis once the largest speedup shown is this many times the smallest


@dataclass(frozen=True)
class ProgressPoint:
    number: int
    status: str  # a sandbox Status value: ok, compile_error, ..., not_run
    speedup: float | None  # this evaluation's speedup over the baseline, when correct


@dataclass(frozen=True)
class TaskBar:
    task: str
    speedup: float | None  # vs the task's baseline kernel
    library_speedup: float | None  # vs the library (torch) function
    correct: bool
    suspect: bool  # faster than the roofline allows


@dataclass(frozen=True)
class RooflinePoint:
    label: str
    flops: float | None
    bytes_moved: float | None
    ms: float


def _ok(v: float | None) -> TypeGuard[float]:
    """A usable measurement: a positive finite number."""
    return v is not None and math.isfinite(v) and v > 0


def _wrap(label: str) -> str:
    """A legend label in lines of 40 characters at most: a candidate's knobs make long ones."""
    return textwrap.fill(label, 40, break_on_hyphens=False)


def _write(path: Path, size: tuple[float, float], draw: Callable[[Figure], None]) -> bool:
    """Draw a figure `size` inches big with `draw`, write it to `path` atomically; False without matplotlib."""
    try:
        from matplotlib import style
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False
    buf = io.BytesIO()
    with style.context("default"):
        fig = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        draw(fig)
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    write_atomic(Path(path), buf.getvalue())
    return True


def _speedup_axis(axis: Axis, log: bool) -> None:
    """Ticks read 0.5x, 1x, 2x; a log axis gets them at 1-2-5 steps and leaves its minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if log:
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_minor_formatter(NullFormatter())
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))


def progress_png(path: Path, points: list[ProgressPoint], title: str) -> bool:
    """x = evaluation number; y = the best speedup so far (a step line) over each correct evaluation's own
    (dots), 1x dashed; below, a row per failure class present with a marker at each failed evaluation."""
    points = sorted(points, key=lambda p: p.number)
    classes = [s for s in FAILURE_STYLES if any(p.status == s for p in points)]
    classes += sorted({p.status for p in points} - set(FAILURE_STYLES) - {"ok"})
    return _write(path, (8, 4.5), lambda fig: _draw_progress(fig, points, classes, title))


def _draw_progress(fig: Figure, points: list[ProgressPoint], classes: list[str], title: str) -> None:
    from matplotlib.ticker import MaxNLocator

    ratios = [4, 0.5 + 0.3 * len(classes)] if classes else [1]
    grid = fig.add_gridspec(len(ratios), 1, height_ratios=ratios)
    ax = fig.add_subplot(grid[0])
    good = {p.number: p.speedup for p in points if p.status == "ok" and _ok(p.speedup)}
    steps, best = [], 0.0
    for p in points:
        best = max(best, good.get(p.number, 0.0))
        if best:
            steps.append((p.number, best))
    ax.axhline(1.0, color=GREY, ls="--", lw=1, label="baseline (1x)")
    ax.plot(list(good), list(good.values()), "o", ms=5, color=POINT, mec="none", label="correct evaluation")
    ax.step([x for x, _ in steps], [y for _, y in steps], where="post", color=BEST, lw=2.5, label="best so far")
    lo, hi = min([*good.values(), 1.0]), max([*good.values(), 1.0])
    if hi / lo > LOG_RANGE:
        ax.set(yscale="log", ylim=(lo / 1.5, hi * 1.5))
    else:  # linear from 0, so that heights compare
        ax.set_ylim(0.0, max(hi, 1.5) * 1.08)
    _speedup_axis(ax.yaxis, hi / lo > LOG_RANGE)
    if good:
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.75, "no correct evaluation" if points else "no evaluations", transform=ax.transAxes,
                ha="center", va="center", color=GREY, fontsize=14)
    ax.set(xlim=(0.5, max([p.number for p in points] + [1]) + 0.5), ylabel="speedup over baseline", title=title)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    if not classes:
        ax.set_xlabel("evaluation")
        return
    strip = fig.add_subplot(grid[1], sharex=ax)
    for row, name in enumerate(classes):
        marker, colour = FAILURE_STYLES.get(name, (".", "black"))
        hits = [p.number for p in points if p.status == name]
        strip.plot(hits, [row] * len(hits), marker, ls="none", ms=6, color=colour,
                   mfc="none" if name == "not_run" else colour)
    counts = [f"{n} ({sum(p.status == n for p in points)})" for n in classes]
    strip.set_yticks(range(len(classes)), counts, fontsize=8)
    strip.set(ylim=(len(classes) - 0.5, -0.5), xlabel="evaluation")
    ax.tick_params(axis="x", labelbottom=False)
    strip.grid(axis="x", alpha=0.3)


def speedups_png(path: Path, bars: list[TaskBar], title: str) -> bool:
    """Per task, a bar from 1x to its speedup vs the baseline kernel and one vs the library function (log
    scale); a failed task is a red cross at 1x, a suspect task's bars are hatched orange. Vertical bars up to
    VERTICAL_BARS_MAX tasks, horizontal ones beyond, the figure growing a row per task."""
    horizontal = len(bars) > VERTICAL_BARS_MAX
    size = (8.0, max(4.5, 0.22 * len(bars) + 1.3)) if horizontal else (8.0, 4.5)
    return _write(path, size, lambda fig: _draw_speedups(fig, bars, horizontal, title))


def _draw_speedups(fig: Figure, bars: list[TaskBar], horizontal: bool, title: str) -> None:
    from matplotlib.patches import Patch

    ax = fig.add_subplot()
    draw = ax.barh if horizontal else ax.bar  # same positional order: position, length, thickness, start
    values = [1.0]
    for offset, field, colour, name in ((-0.2, "speedup", BEST, "vs baseline kernel"),
                                        (0.2, "library_speedup", LIBRARY, "vs library function")):
        for suspect in (False, True):
            chosen = [(i, v) for i, b in enumerate(bars)
                      if b.correct and b.suspect == suspect and _ok(v := getattr(b, field))]
            values += [v for _, v in chosen]
            draw([i + offset for i, _ in chosen], [v - 1.0 for _, v in chosen], 0.4, 1.0, color=colour,
                 edgecolor=SUSPECT if suspect else "none", lw=1.5 if suspect else 0, hatch="//" if suspect else None,
                 label=None if suspect or not chosen else name)
    failed = [i for i, b in enumerate(bars) if not b.correct]
    untimed = [i for i, b in enumerate(bars) if b.correct and not _ok(b.speedup)]
    for where, marker, colour, name in ((failed, "x", FAILED, "failed"), (untimed, "o", GREY, "not timed")):
        if where:
            ones = [1.0] * len(where)
            ax.plot(ones if horizontal else where, where if horizontal else ones, marker, ls="none", ms=9,
                    mew=2.5, color=colour, mfc="none", label=name, zorder=3)
    (ax.axvline if horizontal else ax.axhline)(1.0, color=GREY, lw=1)
    value_axis, task_axis = (ax.xaxis, ax.yaxis) if horizontal else (ax.yaxis, ax.xaxis)
    set_scale, set_value_lim, set_task_lim = (ax.set_xscale, ax.set_xlim, ax.set_ylim) if horizontal \
        else (ax.set_yscale, ax.set_ylim, ax.set_xlim)
    set_scale("log")
    # At least 0.45x..2.2x, so that the 0.5x and 2x ticks give a small range its scale.
    set_value_lim(min(min(values) / 1.6, 0.45), max(max(values) * 1.6, 2.2))
    _speedup_axis(value_axis, True)
    value_axis.set_label_text("speedup (log scale)")
    tilt = not horizontal and len(bars) > 4  # long names side by side would run into each other
    task_axis.set_ticks(range(len(bars)), [b.task + " (suspect)" * b.suspect for b in bars], fontsize=8,
                        rotation=35 if tilt else 0, ha="right" if tilt or horizontal else "center",
                        rotation_mode="anchor")
    for tick, b in zip(task_axis.get_ticklabels(), bars):
        tick.set_color(FAILED if not b.correct else SUSPECT if b.suspect else "black")
    extra = 0.0 if horizontal else max(0, 4 - len(bars)) / 2  # room for four: one task's bars stay bar-shaped
    ends = (-0.6 - extra, len(bars) - 0.4 + extra)
    set_task_lim(*(ends[::-1] if horizontal else ends))  # horizontal: the first task on top
    handles, names = ax.get_legend_handles_labels()
    if any(b.suspect and b.correct for b in bars):
        handles.append(Patch(facecolor="white", edgecolor=SUSPECT, lw=1.5, hatch="//"))
        names.append("suspect: faster than the roofline")
    if handles:
        fig.legend(handles, names, fontsize=8, loc="outside lower center", ncols=len(handles))
    ax.grid(axis="x" if horizontal else "y", alpha=0.3)
    ax.set_title(title)


def roofline_png(path: Path, points: list[RooflinePoint], bandwidth_gbps: float, peak_gflops: float,
                 title: str) -> bool:
    """Kernels placed under the measured roof (see the module docstring); ceilings in GB/s and GFLOP/s."""
    if not (_ok(bandwidth_gbps) and _ok(peak_gflops)):
        raise ValueError(f"roofline ceilings must be positive: {bandwidth_gbps} GB/s, {peak_gflops} GFLOP/s")
    size = (10.0, max(4.5, 0.2 * len(points) + 1.2))  # a legend row per kernel
    return _write(path, size, lambda fig: _draw_roofline(fig, points, bandwidth_gbps, peak_gflops, title))


def _draw_roofline(fig: Figure, points: list[RooflinePoint], bw: float, peak: float, title: str) -> None:
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    full = [p for p in points if _ok(p.ms) and _ok(p.flops) and _ok(p.bytes_moved)]
    bytes_only = [p for p in points if _ok(p.ms) and not _ok(p.flops) and _ok(p.bytes_moved)]
    # Colour and marker by position: 10 colours x 8 markers tell up to 80 kernels apart in the legend.
    looks = [(colormaps["tab10"](i % 10), "osD^vP*X"[i // 10 % 8]) for i in range(len(full + bytes_only))]
    grid = fig.add_gridspec(1, 2, width_ratios=[4, 1]) if bytes_only else fig.add_gridspec(1, 1)
    ax = fig.add_subplot(grid[0])
    xs = [(p.flops or 0) / (p.bytes_moved or 1) for p in full]  # FLOP/byte
    ys = [(p.flops or 0) / p.ms / 1e6 for p in full]  # GFLOP/s
    ridge = peak / bw
    x_lo, x_hi = min([*xs, ridge]) / 10, max([*xs, ridge]) * 4  # room on the left for the slope's label
    ax.plot([x_lo, ridge, x_hi], [bw * x_lo, peak, peak], color="black", lw=2)
    ax.set(xscale="log", yscale="log", xlim=(x_lo, x_hi), ylim=(min([*ys, bw * x_lo]) / 3, peak * 3),
           xlabel="arithmetic intensity (FLOP/byte)", ylabel="achieved GFLOP/s", title=title)
    ax.grid(which="both", alpha=0.2)
    handles: list[Line2D] = []
    for p, x, y, (colour, marker) in zip(full, xs, ys, looks):
        handles += ax.plot(x, y, marker, color=colour, ms=8, mec="black", mew=0.5, ls="none",
                           label=_wrap(f"{p.label} ({y / min(bw * x, peak):.0%} of roof)"))
    if bytes_only:
        handles += _bytes_panel(fig.add_subplot(grid[1]), bytes_only, looks[len(full):], bw)
    unplaced = [p.label for p in points if p not in full and p not in bytes_only]
    if unplaced:
        handles.append(Line2D([], [], ls="none", label=_wrap("not placed (no byte count): " + ", ".join(unplaced))))
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    ax.text(x_hi / 1.2, peak * 1.15, f"fp32 FMA {peak:,.0f} GFLOP/s", ha="right", va="bottom", fontsize=8)
    fig.draw_without_rendering()  # the slope's angle on screen needs the final layout, legend included
    (x0, y0), (x1, y1) = ax.transData.transform([(x_lo, bw * x_lo), (ridge, peak)])
    # Above the slope near its left end: kernels sit under the roof, the leftmost 10x further right.
    ax.text(x_lo * 1.3, bw * x_lo * 1.3 * 1.25, f"copy bandwidth {bw:,.0f} GB/s", fontsize=8, va="bottom",
            rotation=math.degrees(math.atan2(y1 - y0, x1 - x0)), rotation_mode="anchor")


def _bytes_panel(ax: Axes, points: list[RooflinePoint], looks: list, bw: float) -> list[Line2D]:
    """Kernels with a byte count only: a stem up to each one's achieved GB/s under the copy-bandwidth line."""
    from matplotlib.lines import Line2D

    gbps = [(p.bytes_moved or 0) / p.ms / 1e6 for p in points]
    ax.vlines(range(len(points)), 0, gbps, color="#cccccc", lw=3)
    handles = []
    for i, (p, v, (colour, marker)) in enumerate(zip(points, gbps, looks)):
        ax.plot(i, v, marker, color=colour, ms=8, mec="black", mew=0.5)
        handles.append(Line2D([], [], marker=marker, ls="none", ms=8, color=colour, mec="black", mew=0.5,
                              label=_wrap(f"{p.label} ({v / bw:.0%} of bandwidth)")))
    ax.axhline(bw, color="black", lw=2)
    ax.text(-0.5, bw * 1.01, "copy bandwidth", fontsize=8, va="bottom")
    ax.set(xticks=[], ylim=(0, max([*gbps, bw]) * 1.15), xlim=(-0.6, max(len(points), 3) - 0.4),
           ylabel="achieved GB/s", title="no FLOP count")
    return handles


@dataclass(frozen=True)
class ShareCurve:
    label: str  # the strategy, with its tuner
    ours: bool  # kagent's (solid) or another tuner's (dashed)
    evaluations: list[int]
    q1: list[float]  # share of the optimum after that many evaluations: first quartile, median, third
    median: list[float]
    q3: list[float]


def shares_png(path: Path, panels: list[tuple[str, list[ShareCurve]]], title: str) -> bool:
    """One panel per recorded space: x = evaluations (log), y = the share of the optimum reached so far,
    a median line per strategy (kagent's solid, kernel_tuner's dashed) over its interquartile band."""
    columns = min(3, max(1, len(panels)))
    rows = -(-len(panels) // columns) if panels else 1
    return _write(path, (5.2 * columns, 3.9 * rows + 0.6),
                  lambda fig: _draw_shares(fig, panels, columns, rows, title))


def _draw_shares(fig: Figure, panels: list[tuple[str, list[ShareCurve]]], columns: int, rows: int,
                 title: str) -> None:
    from matplotlib import colormaps

    palette = colormaps["tab20"]  # a listed map: an integer picks its i-th colour
    names = list(dict.fromkeys(c.label for _, curves in panels for c in curves))
    style = {name: palette(i % 20) for i, name in enumerate(names)}
    for i, (name, curves) in enumerate(panels):
        ax = fig.add_subplot(rows, columns, i + 1)
        for curve in curves:
            colour = style[curve.label]
            ax.fill_between(curve.evaluations, curve.q1, curve.q3, color=colour, alpha=0.12, lw=0)
            ax.plot(curve.evaluations, curve.median, "-" if curve.ours else "--", color=colour,
                    lw=2.2 if curve.ours else 1.3, label=curve.label)
        ax.axhline(0.95, color=GREY, ls=":", lw=1)
        ax.set(xscale="log", ylim=(0.0, 1.02), title=_wrap(name), xlabel="evaluations",
               ylabel="share of the optimum")
        ax.grid(alpha=0.3)
        if i == 0:
            fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=min(5, len(curves)),
                       fontsize=8)
    fig.suptitle(title)

"""matplotlib charts: each renders a valid PNG of the expected size from recorded H200 data, byte for byte the
same twice, with its marks where they belong (pixels read back), and none without matplotlib."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernel_agent.plots import (
    BEST,
    FAILURE_STYLES,
    LIBRARY,
    SUSPECT,
    ProgressPoint,
    RooflinePoint,
    TaskBar,
    progress_png,
    roofline_png,
    speedups_png,
)
from kernel_agent.recording import RECORDINGS
from tests.paths import ROOT

H200 = RECORDINGS  # the recorded sweeps
BENCH = ROOT / "tests" / "data" / "h200" / "bench_level1_optimize"  # the published bench
COPY_GBPS, FMA_GFLOPS = 4199.816162320909, 54630.03885538121  # the ceilings recorded in the sweeps
TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c"]  # the roofline's first three kernels


def read(path: Path) -> np.ndarray:
    """The PNG at `path` as (height, width, 3) floats in 0..1, after checking its signature and that no
    temporary file was left beside it."""
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(path.parent.glob(".*.tmp"))
    return imread(path)[:, :, :3]


def size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG header."""
    return struct.unpack(">II", path.read_bytes()[16:24])


def near(img: np.ndarray, colour: str, tol: float = 0.03) -> np.ndarray:
    """A boolean map of the pixels within `tol` of `colour` ('#rrggbb') in every channel."""
    rgb = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return (np.abs(img - rgb) <= tol).all(axis=2)


def inside_axes(img: np.ndarray) -> np.ndarray:
    """The image inside the outermost axes frame (black lines over most of the height and width): a legend,
    whose marks share the plot's colours, lies outside it."""
    black = near(img, "#000000")
    rows = np.nonzero(black.sum(axis=1) > 0.6 * img.shape[1])[0]
    cols = np.nonzero(black.sum(axis=0) > 0.6 * img.shape[0])[0]
    assert rows.size and cols.size
    return img[rows.min() + 1:rows.max(), cols.min() + 1:cols.max()]


def softmax_run() -> list[ProgressPoint]:
    """The recorded softmax sweep's speedups in order, with failures of four classes mixed in."""
    records = json.loads((H200 / "softmax.json").read_text())["records"]
    speedups = [r["outcome"]["speedup"] for r in records if r["outcome"]["status"] == "ok"]
    failures = {3: "compile_error", 4: "compile_error", 9: "wrong_result", 15: "timeout", 22: "not_run"}
    return [ProgressPoint(n, failures[n], None) if n in failures else ProgressPoint(n, "ok", speedups[n - 1])
            for n in range(1, len(speedups) + 1)]


def bench_bars() -> list[TaskBar]:
    """The published level-1 bench's 15 tasks, as the bench report would hand them over."""
    tasks = json.loads((BENCH / "results.json").read_text())["tasks"]
    return [TaskBar(t["task"], t["speedup"], t["library_speedup"], t["status"] == "ok", t["suspect"])
            for t in tasks]


def sweep_point(task: str, label: str, best: bool) -> RooflinePoint:
    """A recorded sweep's baseline or fastest kernel, with its task's byte and FLOP counts."""
    doc = json.loads((H200 / f"{task}.json").read_text())
    ok = [r["outcome"] for r in doc["records"] if r["outcome"]["status"] == "ok"]
    fastest = min(ok, key=lambda o: o["timing"]["median_ms"])
    ms = fastest["timing"]["median_ms"] if best else doc["baseline_timing"]["median_ms"]
    return RooflinePoint(label, fastest["roofline"]["flops"], fastest["roofline"]["bytes_moved"], ms)


def test_progress_draws_the_best_line_rising_and_each_failure_class_in_its_own_row(tmp_path):
    path = tmp_path / "progress.png"
    points = softmax_run()
    assert progress_png(path, points, "softmax: agent (gpu)") is True
    img = read(path)
    assert size(path) == (800, 450) and img.shape == (450, 800, 3)
    line = near(img, BEST)
    rows, cols = np.nonzero(line)
    left, right = rows[cols < 400], rows[cols >= 400]
    assert left.size and right.size and right.min() < left.min()  # higher on the right: the best improved
    for name in ("compile_error", "wrong_result", "timeout"):  # filled markers: exact colour in the middle
        hits = np.nonzero(near(img, FAILURE_STYLES[name][1]))
        assert hits[0].size > 5, name
        assert hits[0].min() > 0.6 * 450, name  # in the strip below the speedup panel
    compile_cols = np.nonzero(near(img, FAILURE_STYLES["compile_error"][1]))[1]
    assert compile_cols.max() < 0.3 * 800  # evaluations 3 and 4 of 37: at the left
    for name in ("resource_error", "launch_error", "runtime_error", "nondeterministic"):
        assert not near(img, FAILURE_STYLES[name][1]).any(), name  # classes that did not occur: no row


@pytest.mark.parametrize("points", [
    [ProgressPoint(n, s, None) for n, s in enumerate(["compile_error", "runtime_error", "not_run", "odd"], 1)],
    [ProgressPoint(1, "ok", None), ProgressPoint(2, "ok", float("nan")), ProgressPoint(3, "timeout", None)],
    [],
])
def test_a_run_with_nothing_correct_draws_no_line(tmp_path, points):
    path = tmp_path / "progress.png"
    assert progress_png(path, points, "nothing correct")
    img = read(path)
    assert img.shape == (450, 800, 3) and not near(img, BEST).any()
    assert near(img, FAILURE_STYLES["compile_error"][1]).any() == any(p.status == "compile_error" for p in points)


def test_a_wide_range_of_speedups_still_shows_the_early_steps(tmp_path):
    """From 1.3x to 2000x: on a linear axis the first ten steps would be one flat row of pixels."""
    path = tmp_path / "progress.png"
    assert progress_png(path, [ProgressPoint(n, "ok", 1.3 ** n) for n in range(1, 30)], "wide")
    rows, cols = np.nonzero(near(read(path), BEST))
    assert np.unique(rows[cols < 0.4 * 800]).size > 60  # the legend's sample line adds a few rows only


def test_bench_speedups_put_each_bar_on_its_side_of_1x_and_mark_failed_and_suspect_tasks(tmp_path):
    path = tmp_path / "speedups.png"
    bars = [TaskBar("up", 10.0, None, True, False), TaskBar("down", 0.5, None, True, False)]
    assert speedups_png(path, bars, "two")
    img = read(path)
    assert size(path) == (800, 450)
    plot = inside_axes(img)
    one = np.argmax(near(plot, "#7f7f7f").sum(axis=1))  # the 1x line: the row with the most grey
    rows, cols = np.nonzero(near(plot, BEST))
    half = plot.shape[1] // 2
    assert (rows[cols < half] < one).all() and (rows[cols >= half] > one).all()  # 10x rises, 0.5x hangs
    assert not near(img, LIBRARY).any() and not near(img, SUSPECT).any() and not near(img, "#d62728").any()
    bars += [TaskBar("lib", 3.0, 1.5, True, False), TaskBar("broken", None, None, False, False),
             TaskBar("too fast", 400.0, 40.0, True, True)]
    assert speedups_png(path, bars, "five")
    img = read(path)
    assert near(img, LIBRARY).any() and near(img, SUSPECT).any() and near(img, "#d62728").any()


@pytest.mark.parametrize("count, shape", [(1, (450, 800)), (12, (450, 800)), (15, (460, 800)), (40, (1010, 800))])
def test_bench_charts_keep_a_row_per_task_when_there_are_many(tmp_path, count, shape):
    bars = (bench_bars() * 3)[:count]
    bars = [TaskBar(f"{b.task}_{i}", b.speedup, b.library_speedup, b.correct, b.suspect) for i, b in enumerate(bars)]
    path = tmp_path / "speedups.png"
    assert speedups_png(path, bars, f"{count} tasks")
    img = read(path)
    assert img.shape[:2] == shape
    rows = np.unique(np.nonzero(near(img, BEST))[0])
    if count > 12:  # horizontal bars: blue from near the top of the plot to near its bottom
        assert rows.min() < 0.15 * shape[0] and rows.max() > 0.8 * shape[0]


def test_roofline_places_a_memory_bound_kernel_left_of_and_below_a_compute_bound_one(tmp_path):
    path = tmp_path / "roofline.png"
    points = [sweep_point("softmax", "softmax best", best=True), sweep_point("matmul_fp32", "matmul best", best=True)]
    assert roofline_png(path, points, COPY_GBPS, FMA_GFLOPS, "level1")
    img = read(path)
    assert size(path) == (1000, 450)
    (mem_rows, mem_cols), (mm_rows, mm_cols) = (np.nonzero(near(inside_axes(img), c)) for c in TAB10[:2])
    assert mem_cols.size > 20 and mm_cols.size > 20
    assert mem_cols.mean() < mm_cols.mean() and mem_rows.mean() > mm_rows.mean()
    # The baseline of the same task sits straight below its best kernel: same intensity, slower.
    points = [sweep_point("softmax", "baseline", best=False), sweep_point("softmax", "best", best=True)]
    assert roofline_png(path, points, COPY_GBPS, FMA_GFLOPS, "softmax")
    (base_rows, base_cols), (best_rows, best_cols) = (np.nonzero(near(inside_axes(read(path)), c))
                                                          for c in TAB10[:2])
    assert abs(base_cols.mean() - best_cols.mean()) < 3 and base_rows.mean() > best_rows.mean() + 50


def test_a_kernel_without_a_flop_count_gets_the_bandwidth_panel_and_one_without_bytes_is_only_named(tmp_path):
    path = tmp_path / "roofline.png"
    full = sweep_point("softmax", "softmax", best=True)
    bytes_only = sweep_point("transpose", "transpose", best=True)  # the transpose task counts bytes only
    assert bytes_only.flops is None
    assert roofline_png(path, [full, bytes_only], COPY_GBPS, FMA_GFLOPS, "t")
    assert near(read(path), TAB10[1]).sum() > 40  # its marker in the panel and in the legend
    no_bytes = RooflinePoint("transpose", None, None, bytes_only.ms)
    assert roofline_png(path, [full, no_bytes], COPY_GBPS, FMA_GFLOPS, "t")
    assert not near(read(path), TAB10[1]).any()
    assert roofline_png(path, [no_bytes], COPY_GBPS, FMA_GFLOPS, "only an unplaced kernel")
    many = [sweep_point(p.stem, p.stem, best=True) for p in sorted(H200.glob("*.json"))]
    assert roofline_png(path, many, COPY_GBPS, FMA_GFLOPS, "level1")
    assert size(path) == (1000, round(100 * (0.2 * len(many) + 1.2)))
    with pytest.raises(ValueError, match="ceilings"):
        roofline_png(path, [full], 0.0, FMA_GFLOPS, "no bandwidth measured")


def test_the_same_data_gives_the_same_bytes(tmp_path):
    renders = [
        lambda p: progress_png(p, softmax_run(), "softmax"),
        lambda p: speedups_png(p, bench_bars(), "level1"),
        lambda p: roofline_png(p, [sweep_point("softmax", "baseline", False), sweep_point("histogram", "h", True)],
                               COPY_GBPS, FMA_GFLOPS, "softmax"),
    ]
    for i, render in enumerate(renders):
        first, second = tmp_path / f"{i}a.png", tmp_path / f"{i}b.png"
        assert render(first) and render(second)
        assert first.read_bytes() == second.read_bytes()
        assert b"tEXt" not in first.read_bytes()  # no Software or date text chunk


def test_without_matplotlib_nothing_is_written_and_false_is_returned(tmp_path, monkeypatch):
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert progress_png(tmp_path / "a.png", softmax_run(), "t") is False
    assert speedups_png(tmp_path / "b.png", bench_bars(), "t") is False
    assert roofline_png(tmp_path / "c.png", [sweep_point("softmax", "s", True)], COPY_GBPS, FMA_GFLOPS, "t") is False
    assert list(tmp_path.iterdir()) == []


def test_importing_kagent_does_not_import_matplotlib():
    code = "import sys, kernel_agent, kernel_agent.plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

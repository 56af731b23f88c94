"""`kagent bench` results: every metric on hand-built results, and the four report files read back."""

from __future__ import annotations

import csv
import json
import math
import struct

import pytest

from kernel_agent.bench.results import TaskResult, metrics, metrics_by_level
from kernel_agent.bench.suite_report import CSV_COLUMNS, SUSPECT_NOTE, write_report
from sandbox import Status


def result(task: str, status: Status = Status.ok, time_ms: float | None = 1.0, baseline_ms: float | None = 1.0,
           **kw) -> TaskResult:
    return TaskResult(**{"level": "level1", **kw}, task=task, mode="kernels", kernel="baseline", status=status,
                      time_ms=time_ms, baseline_ms=baseline_ms)


def four() -> list[TaskResult]:
    """One 3x faster (1.2x vs the library), one 1.2x faster, one wrong, one timed out."""
    return [result("a", baseline_ms=3.0, library_ms=1.2, roofline_ms=0.5),
            result("b", baseline_ms=1.2),
            result("c", Status.wrong_result, time_ms=None, message="max abs error 0.5 | at [3]"),
            result("d", Status.timeout, time_ms=None, baseline_ms=None)]


def test_four_tasks_give_every_metric_exactly():
    m = metrics(four())
    assert (m.tasks, m.correct, m.correctness) == (4, 2, 0.5)
    assert m.fast == {"fast_0": 0.5, "fast_1": 0.5, "fast_1.5": 0.25, "fast_2": 0.25}
    assert m.library_tasks == 1 and m.library_timed == 1
    assert m.fast_library == {"fast_0": 1.0, "fast_1": 1.0, "fast_1.5": 0.0, "fast_2": 0.0}
    assert m.timed == 2 and m.geomean_speedup == pytest.approx(math.sqrt(3 * 1.2), rel=1e-12)
    assert m.geomean_library_speedup == pytest.approx(1.2, rel=1e-12)
    assert m.roofline_tasks == 1 and m.mean_roofline_fraction == 0.5
    assert m.failures == {"wrong_result": 1, "timeout": 1}
    assert m.suspect == [] and m.replayed == 0


def test_derived_figures_only_for_a_correct_timed_task():
    a, b, _, _ = four()
    assert (a.speedup, a.library_speedup, a.roofline_fraction, a.suspect) == (3.0, 1.2, 0.5, False)
    assert (b.speedup, b.library_speedup, b.roofline_fraction) == (1.2, None, None)
    wrong_but_timed = result("w", Status.wrong_result, time_ms=0.1, baseline_ms=1.0, roofline_ms=1.0)
    assert not wrong_but_timed.correct and wrong_but_timed.speedup is None and not wrong_but_timed.suspect
    assert result("z", time_ms=0.0).speedup is None and result("n", time_ms=float("nan")).time_ms is None


def test_each_level_gets_its_own_metrics_in_the_json_and_the_report(tmp_path):
    results = four() + [result("e", level="level2", baseline_ms=4.0), result("f", Status.compile_error,
                                                                          level="level2", time_ms=None)]
    levels = metrics_by_level(results)
    assert list(levels) == ["level1", "level2"]
    assert levels["level1"].correctness == 0.5 and levels["level2"].correctness == 0.5
    assert levels["level2"].geomean_speedup == pytest.approx(4.0) and levels["level2"].fast["fast_2"] == 0.5
    write_report(tmp_path, results, {}, "t")
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["by_level"]["level2"]["geomean_speedup"] == pytest.approx(4.0)
    assert "| level2 | 2 | 50.0% | 50.0% | 50.0% | 4.00x | - |" in (tmp_path / "report.md").read_text()
    write_report(tmp_path, four(), {}, "t")  # one level: no per-level table
    assert "## By level" not in (tmp_path / "report.md").read_text()


def test_a_task_faster_than_the_roofline_is_listed_as_suspect_but_still_counted():
    results = [result("cheat", time_ms=0.1, baseline_ms=1.0, roofline_ms=0.2), result("fair", roofline_ms=0.5),
               result("near", roofline_ms=1.05)]  # within the measurement margin of a measured ceiling
    assert results[0].roofline_fraction == pytest.approx(2.0) and results[0].suspect
    assert not results[2].suspect
    m = metrics(results)
    assert m.suspect == ["cheat"]
    assert m.fast["fast_2"] == pytest.approx(1 / 3) and m.geomean_speedup == pytest.approx(10.0 ** (1 / 3))
    assert m.roofline_tasks == 2 and m.mean_roofline_fraction == pytest.approx((0.5 + 1.05) / 2)  # not the cheat


def test_not_run_counts_as_not_correct_and_a_failure():
    m = metrics([result("a"), result("b", Status.not_run, time_ms=None)])
    assert m.correctness == 0.5 and m.failures == {"not_run": 1} and m.fast["fast_0"] == 0.5


def test_no_library_time_anywhere_gives_none_not_zero():
    m = metrics([result("a", baseline_ms=2.0), result("b", Status.compile_error, time_ms=None)])
    assert m.library_tasks == 0 and m.library_timed == 0
    assert m.fast_library == {"fast_0": None, "fast_1": None, "fast_1.5": None, "fast_2": None}
    assert m.geomean_library_speedup is None and m.fast["fast_1.5"] == 0.5


def test_a_failed_task_with_a_library_time_stays_in_the_library_denominator():
    m = metrics([result("a", library_ms=2.0), result("b", Status.runtime_error, time_ms=None, library_ms=1.0)])
    assert m.library_tasks == 2 and m.fast_library["fast_1"] == 0.5


@pytest.mark.parametrize("results", [[], [result("x", Status.compile_error, time_ms=None),
                                          result("y", Status.launch_error, time_ms=None)]])
def test_an_empty_or_all_failed_suite_has_no_geomean_and_no_nan(results):
    m = metrics(results)
    assert m.geomean_speedup is None and m.geomean_library_speedup is None and m.mean_roofline_fraction is None
    assert m.correctness == (None if not results else 0.0)
    json.dumps(m.model_dump(mode="json"), allow_nan=False)


def test_custom_thresholds():
    assert list(metrics(four(), ps=(0.5, 3.0)).fast) == ["fast_0.5", "fast_3"]


def read_png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_the_report_files_hold_the_figures(tmp_path):
    results = four() + [result("e", time_ms=0.1, baseline_ms=1.0, roofline_ms=0.2, replayed=True)]
    env = {"gpu": "NVIDIA H200", "driver": "570.1"}
    write_report(tmp_path, results, env, "level1 kernels")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "results.csv", "results.json", "speedups.png"]

    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["format"] == "kagent-bench/1" and doc["title"] == "level1 kernels" and doc["environment"] == env
    assert doc["metrics"]["correctness"] == 0.6 and doc["metrics"]["fast"]["fast_2"] == 0.4
    assert doc["metrics"]["suspect"] == ["e"] and doc["metrics"]["replayed"] == 1
    tasks = {t["task"]: t for t in doc["tasks"]}
    assert tasks["a"]["speedup"] == 3.0 and tasks["a"]["library_speedup"] == 1.2 and tasks["a"]["status"] == "ok"
    assert tasks["e"]["suspect"] is True and tasks["c"]["speedup"] is None
    assert TaskResult.model_validate(tasks["c"]) == results[2]  # the derived keys are ignored on reading back

    rows = list(csv.reader((tmp_path / "results.csv").open()))
    assert rows[0] == CSV_COLUMNS and len(rows) == 6
    by_task = {row[0]: dict(zip(CSV_COLUMNS, row)) for row in rows[1:]}
    assert float(by_task["a"]["speedup"]) == 3.0 and by_task["a"]["family"] == "" and by_task["e"]["suspect"] == "true"
    assert by_task["c"]["status"] == "wrong_result" and by_task["c"]["time_ms"] == ""
    assert by_task["c"]["message"] == "max abs error 0.5 | at [3]"

    md = (tmp_path / "report.md").read_text()
    head = md.split("## Metrics")[0]
    assert md.startswith("# level1 kernels") and "**Replayed timings" in head and "- gpu: NVIDIA H200" in head
    for line in ("| correctness rate | 60.0% (3 of 5) |", "| fast_0 vs baseline | 60.0% |",
                 "| fast_1.5 vs baseline | 40.0% |", "| tasks with a library time | 1 |",
                 "| fast_1 vs library | 100.0% |", "| fast_1.5 vs library | 0.0% |",
                 "| geomean speedup vs baseline | 3.30x over 3 correct timed tasks |",
                 "| mean roofline fraction | 50.0% over 1 tasks |", "- wrong_result: 1", "- timeout: 1"):
        assert line in md, line
    assert "| a | ok | `baseline` | 1.0000 | 3.0000 | 3.00x | 1.2000 | 1.20x | 50.0% |  |" in md
    assert f"| e | ok | `baseline` | 0.1000 | 1.0000 | 10.00x | - | - | 200.0% | {SUSPECT_NOTE}; replayed |" in md
    assert "max abs error 0.5 \\| at [3]" in md and "fast_p is the share" in md

    width, height = read_png_size((tmp_path / "speedups.png").read_bytes())
    assert (width, height) == (800, 450)  # five tasks: vertical bars (the chart itself: test_plots.py)
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_published_h200_bench_is_rebuilt_exactly_from_its_task_records(tmp_path):
    """`kagent bench tasks/level1 --optimize --budget 40` on the H200 (2026-11-30), kept in
    tests/data/h200: its metrics and report.md follow from its task records alone, so the figures in
    the docs were not edited by hand and the kagent-bench/1 records still load."""
    from tests.paths import ROOT

    published = ROOT / "tests" / "data" / "h200" / "bench_level1_optimize"
    doc = json.loads((published / "results.json").read_text())
    fields = set(TaskResult.model_fields)
    results = [TaskResult(**{k: v for k, v in r.items() if k in fields}) for r in doc["tasks"]]
    write_report(tmp_path, results, doc["environment"], doc["title"], doc["unfinished"])
    assert json.loads((tmp_path / "results.json").read_text()) == doc
    assert (tmp_path / "report.md").read_text() == (published / "report.md").read_text()
    assert doc["metrics"]["correct"] == 15 and doc["environment"]["name"] == "NVIDIA H200"


def test_a_task_with_a_library_function_counts_in_fast_p_vs_the_library_even_untimed():
    """KernelBench's fast_p vs torch eager: a task that failed before anything was timed is not fast."""
    m = metrics([result("a", library_ms=2.0, has_library=True),
                 result("b", Status.compile_error, time_ms=None, has_library=True)])
    assert m.library_tasks == 2 and m.fast_library["fast_1"] == 0.5

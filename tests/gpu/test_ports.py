"""Skeleton instances on the GPU: every hand-written fill (the naive-only tasks' fixtures in
tests/data/ports, the re-expressed expert variants in kernel_agent/skeletons/examples) assembles into
a kernel that is correct at every check size and, at default knobs, faster than the task's naive
kernel at the timed size. The side-by-side speed comparisons are `kagent bench` (fixtures) and
`python3 -m kernel_agent.skeletons.twins` (examples), not this test."""

import json

import pytest

from kernel_agent.check import check
from kernel_agent.skeletons import LIBRARY, library, port
from kernel_agent.skeletons.winners import read_winner
from kernel_agent.task import discover, load_task
from sandbox import Settings, Status
from tests.llm.fake_server import answer
from tests.llm.test_porting import run
from tests.paths import ROOT

pytestmark = pytest.mark.gpu

TASKS = {path.stem: path for path in discover(ROOT / "tasks")}
# Correct, and slower than the naive kernel at default knobs: avgpool2d's 11x11 windows at stride 11 are
# 0.81x on the H200 (2026-11-30), 0.85x on an H100 (2026-12-06) (window2d, STAGE=0). Its path for large
# non-overlapping windows, STAGE=2, is not the default (slower on small overlapping ones): 1.03x there
# (kernel_agent/skeletons/README.md, "Measured again (H100, 2026-12-06)").
SLOWER_AT_DEFAULT_KNOBS = {"avgpool2d"}
FILLS = sorted((ROOT / "tests" / "data" / "ports").glob("*.md")) + sorted((LIBRARY / "examples").glob("*.md"))


@pytest.mark.parametrize("fill", FILLS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_filled_skeleton_is_correct_and_faster_than_the_naive_kernel(fill, worker, tmp_path):
    task = load_task(TASKS[fill.stem])
    kernel = tmp_path / f"{task.name}.cu"
    kernel.write_text(port(task, fill.read_text()).source)
    outcome = check(task, kernel, worker=worker, settings=Settings(budget_ms=100))
    print(f"\nPORT {fill.parent.name}/{fill.stem}: {outcome.status.value}, {outcome.speedup}x the naive kernel")
    assert outcome.status is Status.ok, outcome.model_dump_json(indent=2)
    assert outcome.speedup is not None
    if fill.stem in SLOWER_AT_DEFAULT_KNOBS and outcome.speedup <= 1.0:
        pytest.xfail(f"known slower than the naive kernel at default knobs: {outcome.speedup:.2f}x")
    assert outcome.speedup > 1.0


def test_a_port_measured_fast_is_kept_for_later_ports(tmp_path):
    """The whole porting path on the GPU: the model's slot fills (the fixture, served by the fake
    endpoint) become a kernel that is checked, timed and, faster than the naive kernel, kept in
    OUT/ported/ for the ports of other tasks."""
    fill = (ROOT / "tests" / "data" / "ports" / "softplus.md").read_text()
    _, run_dir, _, _ = run(tmp_path, [answer(fill)], "--executor", "gpu")
    rows = [json.loads(line) for line in (run_dir / "trajectory.jsonl").read_text().splitlines()]
    verdict = next(r for r in rows if r["type"] == "result" and r["kernel"] == "llm1")
    assert verdict["status"] == "ok" and verdict["speedup"] > 1
    won = read_winner(tmp_path / "out" / "ported" / "softplus.md", library()["elementwise"])
    assert won is not None and won.speedup == pytest.approx(verdict["speedup"], rel=1e-3)

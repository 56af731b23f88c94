"""Every task in the repository (but the wide spaces of tasks/wide) is valid: fields, reference
(probed at every size, the timed one included), no trivial pass, and every knob combination of every
kernel compiles for sm_90 with its launches resolved at every size. Slow (minutes): CI runs it, the
developer loop leaves it out."""

import pytest

from kernel_agent.task import discover
from kernel_agent.validate import validate_task
from tests.paths import ROOT

# tasks/wide holds spaces of thousands of combinations, some failing on purpose (too many threads,
# too much shared memory, too many registers): test_wide_spaces.py checks them, a sample at a time.
WIDE = ROOT / "tasks" / "wide"
TASK_FILES = [path for path in discover(ROOT / "tasks") if WIDE not in path.parents]
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("path", TASK_FILES, ids=[str(p.relative_to(ROOT / "tasks")) for p in TASK_FILES])
def test_task_is_valid_for_every_knob_combination(path):
    report = validate_task(path, "sm_90", compile_kernels=True, all_knobs=True)
    assert report.ok, "\n".join(report.errors)
    assert not report.warnings, "\n".join(report.warnings)
    assert "baseline" in report.kernels

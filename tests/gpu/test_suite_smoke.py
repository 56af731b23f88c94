"""Every kernel of every task, at default knobs, is correct on the task's check sizes.

A quick guard on the GPU: the timed size is swapped for the largest check size so the whole suite
runs in a minute. The full verification (timed size, every knob combination) is `kagent sweep`.
"""

import pytest

from kernel_agent.check import check
from kernel_agent.task import discover, load_task
from sandbox import Settings, Status
from tests.paths import ROOT

pytestmark = pytest.mark.gpu

KERNELS = [
    (path, label)
    for path in discover(ROOT / "tasks")
    for label in load_task(path).kernel_paths()
]


@pytest.mark.parametrize("path, label", KERNELS,
                         ids=[f"{p.relative_to(ROOT / 'tasks')}:{label}" for p, label in KERNELS])
def test_kernel_is_correct_on_the_check_sizes(path, label, worker):
    task = load_task(path)
    largest = max(task.check_sizes, key=lambda dims: sorted(dims.values()))
    small = task.model_copy(update={"dims": largest})
    outcome = check(small, small.kernel_paths()[label], worker=worker, settings=Settings(time_it=False))
    print(f"\nSMOKE {path.name}:{label}: {outcome.status.value}: {outcome.message}")
    assert outcome.status is Status.ok, outcome.model_dump_json(indent=2)

"""The teaching examples shown to small models (prompts/examples/FAMILY.cu) are correct kernels of
the suite tasks their `// task:` line names, and faster than those tasks' naive kernels."""

import re

import pytest

from kernel_agent.check import check
from kernel_agent.task import load_task
from sandbox import Settings, Status
from tests.paths import ROOT

pytestmark = pytest.mark.gpu

EXAMPLES = sorted((ROOT / "prompts" / "examples").glob("*.cu"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_teaching_example_is_correct_and_faster_than_the_naive_kernel(example, worker):
    task = load_task(ROOT / re.search(r"^//\s*task:\s*(\S+)", example.read_text(), re.MULTILINE).group(1))
    outcome = check(task, example, worker=worker, settings=Settings(budget_ms=100))
    print(f"\nTEACHING {example.stem} ({task.name}): {outcome.status.value}, {outcome.speedup}x the naive kernel")
    assert outcome.status is Status.ok, outcome.model_dump_json(indent=2)
    assert outcome.speedup is not None and outcome.speedup > 1.0

"""Every kernel of the repair corpus (tests/data/repair) fails on the GPU with the class its metadata
expects, and the sandbox keeps serving after it (a runtime error or a timeout restarts the worker).

The corpus feeds the repair benchmark: a label this test disproves must be fixed in the corpus file
(its `expect:` line and the README's table), not loosened here."""

import time

import pytest

from kernel_agent.check import check
from kernel_agent.task import load_task
from sandbox import Settings, Status
from tests.repair.corpus import corpus_files, read_entry

pytestmark = pytest.mark.gpu

FAST = Settings(budget_ms=150, launch_timeout_s=5.0)
FILES = corpus_files()


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_kernel_fails_with_its_expected_class(path, worker):
    entry = read_entry(path)
    task = load_task(entry.task_path)
    began = time.perf_counter()
    outcome = check(task, path, worker=worker, settings=FAST)
    print(f"\nREPAIR {path.name}: expected {entry.expect}, got {outcome.status.value} in "
          f"{time.perf_counter() - began:.2f} s: {outcome.message}")
    expected = Status(entry.expect)
    if expected is Status.nondeterministic:
        # As race.cu in test_cheats: when only the first of the repeated runs differs, a race reads as
        # `wrong_result` "the first launch differs"; either way the evidence is that outputs differed.
        assert outcome.status in (Status.nondeterministic, Status.wrong_result), outcome.model_dump_json(indent=2)
        assert "differ" in outcome.message, outcome.model_dump_json(indent=2)
    else:
        assert outcome.status is expected, outcome.model_dump_json(indent=2)

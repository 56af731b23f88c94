"""The watchdog: hangs and deaths become typed replies, and the next call gets a fresh worker."""

import threading
import time

import pytest

from sandbox import (
    GpuWorker,
    Interrupted,
    Reply,
    SandboxError,
    Status,
    outcome_from_reply,
)
from tests.sandbox import fake_workers


def test_hang_is_killed_after_its_allowance():
    with GpuWorker(target=fake_workers.hangs) as worker:
        began = time.perf_counter()
        reply = worker.call("evaluate", {}, 5.0)
        assert reply["status"] == "timeout" and "during launch" in reply["message"]
        assert time.perf_counter() - began < 5  # the beat's 0.5 s allowance, not the first 5 s
        assert outcome_from_reply(Reply.model_validate(reply)).status is Status.timeout
        worker.call("evaluate", {}, 5.0)
        assert worker.restarts == 1


def test_death_is_a_runtime_error_and_the_next_call_restarts():
    with GpuWorker(target=fake_workers.dies) as worker:
        reply = worker.call("evaluate", {}, 5.0)
        assert reply["status"] == "runtime_error" and "exit code 7" in reply["message"]
        worker.call("evaluate", {}, 5.0)
        assert worker.starts == 2


def test_sticky_error_replaces_the_worker():
    with GpuWorker(target=fake_workers.sticky_then_exits) as worker:
        assert worker.call("evaluate", {}, 5.0)["sticky"]
        worker.call("evaluate", {}, 5.0)
        assert worker.restarts == 1


def test_a_healthy_worker_is_reused():
    with GpuWorker(target=fake_workers.answers) as worker:
        for i in range(3):
            assert worker.call("evaluate", {"i": i}, 5.0)["echo"] == {"i": i}
        assert worker.starts == 1


def test_a_worker_that_cannot_start_is_a_sandbox_error():
    with pytest.raises(SandboxError, match="no CUDA device"):
        GpuWorker(target=fake_workers.broken).start()


def test_a_process_that_cannot_be_launched_raises_its_own_error():
    """When the worker's process cannot even be launched (here: its target cannot be pickled for the
    spawned interpreter), that error reaches the caller; closing the worker afterwards does not replace
    it with one about a process that never ran."""
    with pytest.raises(Exception, match="pickle") as raised:
        with GpuWorker(target=lambda conn, device: None) as worker:
            worker.start()
    assert not isinstance(raised.value, AssertionError)


def test_an_interrupt_stops_the_call_in_flight_without_blaming_the_kernel():
    """Ctrl-C in a bench kills the worker from another thread: the call raises Interrupted (no
    timeout or runtime_error outcome that a journal could record), and nothing restarts it."""
    with GpuWorker(target=fake_workers.busy) as worker:
        worker.start()
        threading.Timer(0.3, worker.interrupt).start()
        began = time.perf_counter()
        with pytest.raises(Interrupted):
            worker.call("evaluate", {}, 5.0)
        assert time.perf_counter() - began < 5
        with pytest.raises(Interrupted):
            worker.call("evaluate", {}, 5.0)
        assert worker.starts == 1

"""The timing gate (sandbox/timing.py): a host stall between recording the start event and launching is
not timed as the kernel's, and a launch that waits for the device itself still finishes, timed right."""

import time

import pytest

from sandbox.timing import GATE_LIMIT_NS, EventTimer

pytestmark = pytest.mark.gpu
STALL_S = 0.005


def _stalled_fill(buffer):
    def launch():
        time.sleep(STALL_S)  # the host thread kept off the CPU for 5 ms, as beside a busy compile pool
        buffer.fill(1.0)
    return launch


def test_a_host_stall_before_the_launch_is_timed_only_without_the_gate():
    import cupy as cp

    buffer = cp.empty(1 << 20, dtype=cp.float32)
    gated = min(EventTimer().time(lambda: None, _stalled_fill(buffer)) for _ in range(5))
    ungated = min(EventTimer(gated=False).time(lambda: None, _stalled_fill(buffer)) for _ in range(5))
    assert gated < 0.5, gated  # a 4 MB fill: microseconds
    assert ungated > STALL_S * 1000 * 0.9, ungated  # the stall, timed as the kernel's without the gate


def test_a_launch_that_waits_for_the_device_opens_the_gate_by_its_time_limit():
    import cupy as cp

    buffer = cp.empty(1 << 20, dtype=cp.float32)

    def synchronising():
        buffer.fill(2.0)
        cp.cuda.Device().synchronize()  # waits for the gate, which waits for this launch to return

    started = time.perf_counter()
    ms = EventTimer().time(lambda: None, synchronising)
    waited = time.perf_counter() - started
    assert ms < 0.5, ms
    assert GATE_LIMIT_NS / 1e9 * 0.9 < waited < 1.0, waited
    assert float(buffer[-1]) == 2.0

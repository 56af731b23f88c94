"""Stand-ins for the GPU worker process that misbehave on purpose (importable by spawn)."""

import os
import time


def hangs(conn, device):
    conn.send(("ready", {"uuid": "fake"}))
    conn.recv()
    conn.send(("beat", "launch", 0.5))
    time.sleep(60)


def dies(conn, device):
    conn.send(("ready", {"uuid": "fake"}))
    conn.recv()
    conn.send(("beat", "launch", 5.0))
    os._exit(7)


def sticky_then_exits(conn, device):
    conn.send(("ready", {"uuid": "fake"}))
    conn.recv()
    conn.send(("done", {"status": "runtime_error", "sticky": True, "message": "CUDA_ERROR_ILLEGAL_ADDRESS"}))


def answers(conn, device):
    conn.send(("ready", {"uuid": "fake"}))
    while True:
        kind, payload = conn.recv()
        if kind == "stop":
            return
        conn.send(("beat", "reference", 30.0))
        conn.send(("done", {"status": "ok", "echo": payload}))


def broken(conn, device):
    conn.send(("error", "Traceback: no CUDA device"))


def timed(conn, device):
    """Answers every evaluation as correct: 2 ms for small grids (layernorm's naive thread-per-row
    baseline launches 64 blocks at the timed size), 1 ms otherwise."""
    conn.send(("ready", {"uuid": "fake-timed", "name": "Fake GPU"}))
    while True:
        kind, payload = conn.recv()
        if kind == "stop":
            return
        if kind == "calibrate":
            conn.send(("done", {"copy_gbps": 1000.0, "fma_gflops": 10000.0, "device": {}}))
            continue
        timings = []
        for program in payload["programs"]:  # the candidate, then the baseline when it is timed beside
            median = 2.0 if program["launches"][0][0]["grid"][0] < 1000 else 1.0
            timings.append(dict(median_ms=median, p10_ms=median, p90_ms=median, min_ms=median, max_ms=median,
                                repetitions=10))
        conn.send(("done", {"status": "ok", "timings": timings, "sizes_checked": ["all"], "deterministic": True}))


def busy(conn, device):
    """Takes a minute over every evaluation, beating as it goes (a slow kernel, not a hung one)."""
    conn.send(("ready", {"uuid": "fake-busy", "name": "Fake GPU"}))
    while True:
        kind, payload = conn.recv()
        if kind == "stop":
            return
        conn.send(("beat", "launch", 120.0))
        time.sleep(60)
        conn.send(("done", {"status": "ok"}))

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

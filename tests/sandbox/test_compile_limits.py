"""Compiles have limits (time, memory, source size), run in a pool of workers that survives them and leaks none."""

import os
import sys
import time
from pathlib import Path

import pytest

from sandbox import (
    CompileLimits,
    compile_cache,
    compile_many,
    compile_source,
    shutdown_compile_pool,
)

pytest.importorskip("cuda.bindings.nvrtc")

SMALL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] *= SCALE; }\n'
# Full unrolling of a long loop keeps NVRTC busy for many seconds (50 s for 2^20 on one machine).
SLOW = ('extern "C" __global__ void k(float* a) { float s = 0;\n#pragma unroll\n'
        "for (int i = 0; i < (1 << 20); i++) s += a[(i * 7) & 1023] * i;\na[0] = s; }\n")


def compile_workers() -> set[int]:
    """Child processes of this one that are compile workers, zombies included (a zombie is a leak too)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and (b"compile_worker" in cmdline or fields[0] == "Z"):
            found.add(int(stat.parent.name))
    return found


needs_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="lists processes through /proc")


@needs_proc
def test_a_compile_past_the_time_limit_is_stopped_and_the_pool_goes_on():
    compile_source(SMALL, ["k"], {"SCALE": "1.f"}, use_cache=False)  # a warm worker: the clock is the compile's
    before = compile_workers()
    started = time.monotonic()
    result = compile_source(SLOW, ["k"], limits=CompileLimits(timeout_s=1.0))
    assert time.monotonic() - started < 15
    assert not result.ok and result.limit == "time"
    assert "ran past 1 s" in result.message and "KAGENT_COMPILE_TIMEOUT_S" in result.message
    assert compile_cache.load(result.key) is None  # not cached: a larger limit may pass
    assert len(before - compile_workers()) == 1  # the stuck worker was killed and reaped, not left a zombie
    assert compile_source(SMALL, ["k"], {"SCALE": "2.f"}, limits=CompileLimits(timeout_s=1.0)).ok


@needs_proc
def test_many_compiles_keep_their_order_when_one_times_out():
    jobs = [{"source": SMALL, "entries": ["k"], "knobs": {"SCALE": f"{i}.f"}} for i in range(5)]
    jobs.insert(2, {"source": SLOW, "entries": ["k"]})
    results = compile_many(jobs, limits=CompileLimits(timeout_s=1.0))
    assert [r.ok for r in results] == [True, True, False, True, True, True]
    assert results[2].limit == "time"
    assert [r.key for r in results[3:]] == [compile_source(SMALL, ["k"], {"SCALE": f"{i}.f"}).key for i in (2, 3, 4)]


@needs_proc
def test_shutting_the_pool_down_leaves_no_process_behind():
    compile_many([{"source": SMALL, "entries": ["k"], "knobs": {"SCALE": f"{i}.5f"}} for i in range(4)])
    assert compile_workers()
    shutdown_compile_pool()
    assert compile_workers() == set()
    assert compile_source(SMALL, ["k"], {"SCALE": "7.5f"}).ok  # the next compile starts a new pool


def test_running_out_of_the_memory_limit_is_reported_as_such():
    # the limit is what a compile may fill beyond what the warm worker holds: a small kernel needs ~10 MiB
    result = compile_source(SMALL, ["k"], {"SCALE": "3.25f"}, limits=CompileLimits(memory_mb=4))
    assert not result.ok and result.limit == "memory"
    assert "4 MiB" in result.message and "KAGENT_COMPILE_MEMORY_MB" in result.message
    assert compile_cache.load(result.key) is None
    assert compile_source(SMALL, ["k"], {"SCALE": "3.25f"}).ok  # the default limit is ample


def test_a_source_over_the_size_limit_is_refused_before_it_is_read_further():
    huge = SMALL + "// " + "x" * (2 << 20) + "\n"
    result = compile_source(huge, ["k"], {"SCALE": "1.f"})
    assert not result.ok and result.limit == "source_size" and "KAGENT_MAX_SOURCE_KB" in result.log


def test_limits_come_from_the_environment():
    env = {"KAGENT_COMPILE_TIMEOUT_S": "2.5", "KAGENT_COMPILE_MEMORY_MB": "1024", "KAGENT_MAX_SOURCE_KB": "64"}
    assert CompileLimits.from_env(env) == CompileLimits(timeout_s=2.5, memory_mb=1024, max_source_kb=64)
    assert CompileLimits.from_env({}) == CompileLimits()
    with pytest.raises(ValueError, match="KAGENT_COMPILE_MEMORY_MB='lots'"):
        CompileLimits.from_env({"KAGENT_COMPILE_MEMORY_MB": "lots"})
    with pytest.raises(ValueError, match="KAGENT_COMPILE_TIMEOUT_S='0' must be positive"):
        CompileLimits.from_env({"KAGENT_COMPILE_TIMEOUT_S": "0"})


def test_callers_in_several_threads_share_the_pool():
    from concurrent.futures import ThreadPoolExecutor

    def batch(t: int) -> list[bool]:
        jobs = [{"source": SMALL, "entries": ["k"], "knobs": {"SCALE": f"{t}.{i}5f"}} for i in range(3)]
        return [r.ok for r in compile_many(jobs)]

    with ThreadPoolExecutor(4) as threads:
        assert list(threads.map(batch, range(4))) == [[True] * 3] * 4


@needs_proc
def test_workers_do_not_inherit_secrets(monkeypatch):
    shutdown_compile_pool()
    monkeypatch.setenv("KAGENT_TEST_API_TOKEN", "tok-0123456789abcdef")
    assert compile_source(SMALL, ["k"], {"SCALE": "8.5f"}, use_cache=False).ok
    (worker,) = compile_workers()
    environ = Path(f"/proc/{worker}/environ").read_bytes()
    assert b"KAGENT_CACHE_DIR=" in environ and b"tok-0123456789abcdef" not in environ
    shutdown_compile_pool()

"""The long-lived GPU worker process: one per GPU, driven over a pipe by `client.GpuWorker`.

Messages to the parent: ("ready", device_info), ("beat", phase, seconds) before anything that may
hang, then ("done", reply) or ("error", traceback) for each request. After a sticky CUDA error the
worker exits: its context is lost for good, and the parent starts a new one.
"""

from __future__ import annotations

import os
import traceback

from .problem import Request

FMA_KERNEL = r"""
extern "C" __global__ void fma_peak(float* out, int iterations) {
    float a = threadIdx.x * 1e-3f, b = a + 1.f, c = a + 2.f, d = a + 3.f;
    float e = a + 4.f, f = a + 5.f, g = a + 6.f, h = a + 7.f;
    for (int i = 0; i < iterations; ++i) {
        a = fmaf(a, 0.999f, 0.001f); b = fmaf(b, 0.999f, 0.001f); c = fmaf(c, 0.999f, 0.001f);
        d = fmaf(d, 0.999f, 0.001f); e = fmaf(e, 0.999f, 0.001f); f = fmaf(f, 0.999f, 0.001f);
        g = fmaf(g, 0.999f, 0.001f); h = fmaf(h, 0.999f, 0.001f);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d + e + f + g + h;
}
"""


def main(conn, device: int) -> None:
    os.environ.setdefault("CUPY_CACHE_SAVE_CUDA_SOURCE", "0")
    try:
        import cupy as cp

        cp.cuda.Device(device).use()
        conn.send(("ready", device_info(cp)))
    except Exception:
        conn.send(("error", traceback.format_exc()))
        return

    def beat(phase: str, seconds: float) -> None:
        conn.send(("beat", phase, seconds))

    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if kind == "stop":
            return
        try:
            reply = HANDLERS[kind](payload, beat)
        except (Exception, SystemExit):  # SystemExit: a task's reference that calls sys.exit is the task's fault
            conn.send(("error", traceback.format_exc()))
            continue
        conn.send(("done", reply))
        if reply.get("sticky"):
            # The context is lost: leave at once, before CuPy's finalisers report the same error again.
            conn.close()
            os._exit(0)


def evaluate(payload: dict, beat) -> dict:
    from .evaluation import Evaluation

    return Evaluation(Request.model_validate(payload), beat).run().model_dump()


def device_info(cp) -> dict:
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    uuid = props.get("uuid", b"")
    return {
        "name": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        "arch": f"sm_{props['major']}{props['minor']}",
        "multiprocessors": props["multiProcessorCount"],
        "memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
        "l2_mib": round(props.get("l2CacheSize", 0) / 2**20, 1),
        "uuid": uuid.hex() if isinstance(uuid, bytes) else str(uuid),
        "driver": _version(cp.cuda.runtime.driverGetVersion()),
        "runtime": _version(cp.cuda.runtime.runtimeGetVersion()),
        "cupy": cp.__version__,
    }


def _version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


def calibrate(payload: dict, beat) -> dict:
    """Measure the roofline's two ceilings: device-to-device copy bandwidth and fp32 FMA rate."""
    import cupy as cp
    import numpy as np

    beat("calibrate", 120)
    nbytes = int(payload.get("copy_bytes", 1 << 30))
    src, dst = cp.ones(nbytes // 4, dtype=cp.float32), cp.empty(nbytes // 4, dtype=cp.float32)
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def timed(run) -> float:
        samples = []
        for _ in range(25):
            start.record()
            run()
            end.record()
            end.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, end))
        return float(np.median(samples[5:]))

    copy_ms = timed(lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, 3, 0))
    kernel = cp.RawKernel(FMA_KERNEL, "fma_peak")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads, iterations = sms * 8, 256, 4096
    out = cp.empty(blocks * threads, dtype=cp.float32)
    fma_ms = timed(lambda: kernel((blocks,), (threads,), (out, np.int32(iterations))))
    flops = 2.0 * 8 * iterations * blocks * threads
    return {
        "copy_gbps": 2 * nbytes / copy_ms / 1e6,
        "fma_gflops": flops / fma_ms / 1e6,
        "device": device_info(cp),
    }


HANDLERS = {"evaluate": evaluate, "calibrate": calibrate}

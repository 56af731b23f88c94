"""Where the commands that check many kernels (`repair`, `repair-bench`, `finetune grpo`) run them: one
GPU worker shared by all, or compile-only checks; and the context they run in."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

from sandbox import ToolchainError, detect_arch, emulator_unavailable

from ..render import console
from ..repair.checks import SharedGpu
from .app import fail, sigterm_as_interrupt

EXECUTORS = ("auto", "gpu", "compile-only", "emulate")
EXECUTOR = typer.Option("auto", help="Where kernels are checked: gpu, compile-only (no GPU: compile and plan "
                                     "the launches, run nothing), emulate (no GPU: compile, then run on the CPU "
                                     "emulator at the sizes small enough for it; nothing timed), or auto (the GPU "
                                     "if there is one).")


def shared_gpu(executor: str, device: int) -> SharedGpu | None:
    """The GPU the checks run on (None: compile-only checks), or exit 2/3 saying why not."""
    if executor not in EXECUTORS:
        fail(2, f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "emulate" and (reason := emulator_unavailable()):
        fail(3, f"--executor emulate: {reason}")
    has_gpu = executor not in ("compile-only", "emulate") and detect_arch(device) is not None
    if executor == "gpu" and not has_gpu:
        fail(3, "--executor gpu: no CUDA GPU found on this machine (compile-only checks need none)")
    return SharedGpu(device) if has_gpu else None


@contextlib.contextmanager
def gpu_session(gpu: SharedGpu | None, kept: str) -> Iterator[None]:
    """SIGTERM as Ctrl-C; a missing toolchain is exit 3, Ctrl-C exit 130 saying what is `kept`; the GPU
    worker closed either way."""
    try:
        with sigterm_as_interrupt():
            yield
    except ToolchainError as exc:
        fail(3, str(exc))
    except KeyboardInterrupt:
        console.print(f"interrupted: {kept}", markup=False)
        raise typer.Exit(130) from None
    finally:
        if gpu is not None:
            gpu.close()

"""Turn CUDA errors and worker replies into typed outcomes (no GPU needed: tested on the CPU)."""

from __future__ import annotations

import re

from .outcome import Outcome, Status
from .problem import Reply

# Errors after which the CUDA context is unusable for good: the worker must be replaced.
STICKY = (
    "ILLEGAL_ADDRESS", "IllegalAddress", "MISALIGNED_ADDRESS", "MisalignedAddress",
    "ILLEGAL_INSTRUCTION", "IllegalInstruction", "INVALID_PC", "InvalidPc", "HARDWARE_STACK_ERROR",
    "HardwareStackError", "LAUNCH_FAILED", "LaunchFailure", "ASSERT", "Assert", "TRAP", "Trap",
    "LAUNCH_TIMEOUT", "LaunchTimeout", "ECC_UNCORRECTABLE", "ECCUncorrectable",
)
RESOURCE = ("LAUNCH_OUT_OF_RESOURCES", "LaunchOutOfResources", "OUT_OF_MEMORY", "MemoryAllocation")
LAUNCH = (
    "INVALID_VALUE", "InvalidValue", "INVALID_CONFIGURATION", "InvalidConfiguration", "NOT_FOUND",
    "SymbolNotFound", "INVALID_IMAGE", "InvalidKernelImage", "NO_BINARY_FOR_GPU", "NoKernelImageForDevice",
    "INVALID_PTX", "InvalidPtx", "UNSUPPORTED_PTX_VERSION", "UnsupportedPtxVersion",
)


def classify_cuda_error(message: str) -> tuple[Status, bool]:
    """(status, sticky) for a CUDA error message such as 'CUDA_ERROR_ILLEGAL_ADDRESS: ...'."""
    code = _code(message)
    if any(name in code for name in STICKY):
        return Status.runtime_error, True
    if any(name in code for name in RESOURCE):
        return Status.resource_error, False
    if any(name in code for name in LAUNCH):
        return Status.launch_error, False
    return Status.runtime_error, True  # unknown: assume the context is gone


def _code(message: str) -> str:
    match = re.search(r"(CUDA_ERROR_\w+|cuda[A-Z]\w+)", message)
    return match.group(1) if match else message


def outcome_from_reply(reply: Reply) -> Outcome:
    """The Outcome of the worker's verdict (or the watchdog's): the first program's timing, and the
    baseline's when it was timed beside it."""
    timings = reply.timings
    return Outcome(
        status=Status(reply.status), message=reply.message, log=reply.log, mismatch=reply.mismatch,
        sizes_checked=reply.sizes_checked, timing=timings[0] if timings else None,
        baseline_timing=timings[1] if len(timings) > 1 else None, library_timing=reply.library_timing,
        deterministic=reply.deterministic, flags=reply.flags,
    )

"""Where NVRTC and its headers are, which versions, and which GPU architecture to target."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

DEFAULT_ARCH = "sm_90"


class ToolchainError(RuntimeError):
    """NVRTC (cuda-bindings) is missing or unusable; the message says what to install."""


def nvrtc():
    """The NVRTC module of cuda-bindings (imported lazily: the package works without it)."""
    try:
        from cuda.bindings import nvrtc as module
    except ImportError:
        raise ToolchainError(
            "NVRTC is not available: install the compile extra, e.g. "
            "`pip install -e .[compile13]` (cuda-bindings and nvidia-cuda-nvrtc)"
        ) from None
    return module


@functools.cache
def nvrtc_version() -> str:
    err, major, minor = nvrtc().nvrtcVersion()
    if int(err) != 0:
        raise ToolchainError(f"nvrtcVersion failed: {err}")
    return f"{major}.{minor}"


class UnsupportedArch(ToolchainError, ValueError):
    """An architecture this NVRTC cannot compile for; the message lists the ones it can."""


@functools.cache
def supported_archs() -> tuple[str, ...]:
    """The architectures this NVRTC compiles for, oldest first ('sm_75', ..., 'sm_120')."""
    err, numbers = nvrtc().nvrtcGetSupportedArchs()
    if int(err) != 0:
        raise ToolchainError(f"nvrtcGetSupportedArchs failed: {err}")
    return tuple(f"sm_{n}" for n in numbers)


def check_arch(arch: str | int) -> str:
    """`arch` normalised ('90' -> 'sm_90'); UnsupportedArch when this NVRTC cannot compile for it.
    A suffixed variant ('sm_90a') counts as its base architecture."""
    try:
        normal = normalise_arch(arch)
    except ValueError as exc:
        raise UnsupportedArch(f"{exc}; supported: {', '.join(supported_archs())}") from None
    if normal.rstrip("abcdefghijklmnopqrstuvwxyz") not in supported_archs():
        raise UnsupportedArch(f"architecture {normal} is not supported by NVRTC {nvrtc_version()}; "
                              f"supported: {', '.join(supported_archs())}")
    return normal


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """Folders holding cuda_fp16.h, cuda_bf16.h and mma.h (the runtime wheel's, else CUDA_HOME's)."""
    found: list[str] = []
    try:
        import cuda.pathfinder as pathfinder

        folder = pathfinder.find_nvidia_header_directory("cudart")
        if folder:
            found.append(folder)
    except (ImportError, AttributeError, RuntimeError):
        pass
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "include" / "cuda_fp16.h").exists():
            found.append(str(Path(home) / "include"))
    return tuple(dict.fromkeys(found))


def normalise_arch(arch: str | int) -> str:
    """Accept 'sm_90', '90', 'compute_90' or 9.0 and return 'sm_90'."""
    text = str(arch).strip().lower().replace(".", "")
    match = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3}[a-z]?)", text)
    if not match:
        raise ValueError(f"architecture {arch!r} is not like sm_90")
    return f"sm_{match.group(1)}"


@functools.cache
def detect_arch(device: int = 0) -> str | None:
    """The compute capability of GPU `device` through the driver API, or None with no GPU."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return None
        attrs = driver.CUdevice_attribute
        err, major = driver.cuDeviceGetAttribute(
            attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device
        )
        err2, minor = driver.cuDeviceGetAttribute(
            attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device
        )
        if int(err) != 0 or int(err2) != 0:
            return None
        return f"sm_{major}{minor}"
    except Exception:  # no driver library, no device: compile-only machine
        return None


def gpu_count() -> int:
    """CUDA devices visible to this process (0 without a driver or a GPU); creates no context."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return 0
        err, count = driver.cuDeviceGetCount()
        return int(count) if int(err) == 0 else 0
    except Exception:  # no driver library: compile-only machine
        return 0


def target_arch(requested: str | None = None) -> str:
    """The architecture to compile for: the one asked for (UnsupportedArch if NVRTC cannot compile for
    it), else the GPU's, else sm_90."""
    if not requested:
        return detect_arch() or DEFAULT_ARCH
    try:
        return check_arch(requested)
    except UnsupportedArch:
        raise
    except ToolchainError:  # no NVRTC to ask: take the name as given; a compile will say what is missing
        return normalise_arch(requested)

"""kagent's sandbox: compile kernels with NVRTC, run them in an isolated GPU worker, check, time.

This is the package's public API; `kernel_agent` imports nothing else from `sandbox`. Importing it
never needs a GPU or CuPy: only the worker process imports CuPy.
"""

from .calibration import ceilings, roofline
from .classify import outcome_from_reply
from .client import GpuWorker, Interrupted, SandboxError
from .compile_pool import shutdown_compile_pool
from .compiler import (
    CompileJob,
    CompileResult,
    check_flags,
    compile_many,
    compile_source,
    key_of,
)
from .directives import SPECIALISTS, DirectiveError, Directives, Knob
from .directives import parse as parse_directives
from .dtypes import DTYPES
from .emulate import unavailable as emulator_unavailable
from .evaluator import NOT_RUN, SUSPECT_FRACTION, BaselineFailed, Built, Evaluator
from .expr import ExprError, evaluate, evaluate_int
from .expr import names as expr_names
from .kernel import MAX_COMBINATIONS, Kernel, KernelError, load_kernel
from .launch import LaunchPlanError, plan, plan_program
from .limits import CompileLimits
from .outcome import (
    SUSPECT,
    BadValue,
    KernelResources,
    Mismatch,
    Outcome,
    Roofline,
    Status,
    Timing,
    trim_log,
)
from .probe import ProbeReport, probe_reference
from .problem import Buffer, Init, Problem, Program, Reply, Request, Settings, SizeCase
from .redact import redact, register_secret, strip_url_credentials
from .toolchain import (
    ToolchainError,
    UnsupportedArch,
    check_arch,
    detect_arch,
    gpu_count,
    include_dirs,
    nvrtc_version,
    supported_archs,
    target_arch,
)

__all__ = [
    "DTYPES",
    "MAX_COMBINATIONS",
    "NOT_RUN",
    "SPECIALISTS",
    "SUSPECT",
    "SUSPECT_FRACTION",
    "BadValue",
    "BaselineFailed",
    "Buffer",
    "Built",
    "CompileJob",
    "CompileLimits",
    "CompileResult",
    "DirectiveError",
    "Directives",
    "Evaluator",
    "ExprError",
    "GpuWorker",
    "Init",
    "Interrupted",
    "Kernel",
    "KernelError",
    "KernelResources",
    "Knob",
    "LaunchPlanError",
    "Mismatch",
    "Outcome",
    "ProbeReport",
    "Problem",
    "Program",
    "Reply",
    "Request",
    "Roofline",
    "SandboxError",
    "Settings",
    "SizeCase",
    "Status",
    "Timing",
    "ToolchainError",
    "UnsupportedArch",
    "ceilings",
    "check_arch",
    "check_flags",
    "compile_many",
    "compile_source",
    "detect_arch",
    "emulator_unavailable",
    "evaluate",
    "evaluate_int",
    "expr_names",
    "gpu_count",
    "include_dirs",
    "key_of",
    "load_kernel",
    "nvrtc_version",
    "outcome_from_reply",
    "parse_directives",
    "plan",
    "plan_program",
    "probe_reference",
    "redact",
    "register_secret",
    "roofline",
    "shutdown_compile_pool",
    "strip_url_credentials",
    "supported_archs",
    "target_arch",
    "trim_log",
]

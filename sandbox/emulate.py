"""Run a kernel on the CPU: its CUDA C built by the host's C++ compiler against kagent's emulator
(`emulator/`), each CUDA thread a fiber, in a process locked into seccomp's strict mode; checked at the
task's check sizes against the NumPy reference like a GPU check (poisoned outputs, guard bands, inputs
compared, two schedules compared). No timing: a kernel correct here is still `not_run` for speed.

This is how a machine without a GPU learns that a kernel is wrong, and how: the first wrong elements, an
out-of-bounds write, a changed input, a crash, a hang, threads at different barriers. What the emulator
cannot build (inline PTX, tensor-core fragments, cooperative groups) is said so, never judged."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import resource
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .compare import compare, differing, same_bytes
from .compile_cache import cache_dir
from .compiler import PRELUDE
from .dtypes import lookup
from .includes import Refusal, screen
from .inputs import draw, load_function, poison_word, run_reference
from .kernel import Kernel
from .limits import CompileLimits
from .outcome import Mismatch, Status
from .problem import Arg, Buffer, Launch, Problem, Program, SizeCase
from .redact import redact
from .toolchain import include_dirs

HERE = Path(__file__).with_name("emulator")
RUNTIME = (HERE / "kagent_emu.h").read_text() + (HERE / "kagent_emu_main.h").read_text()
GUARD = 4096  # canary bytes before and after each buffer
CANARY = 0xCD
MAX_SIZE_BYTES = 64 << 20  # a size whose buffers hold more is left to the GPU
RUN_TIMEOUT_S = 30.0
SLOW_MARGIN = 10  # a run over the time limit is a hang, unless the smaller size before took over 1/10 of it
BUILD_TIMEOUT_S = 120.0
MEMORY_BYTES = 6 << 30  # address space of one emulated run (the arena and the fibers' stacks are reserved)
# A misaligned access of a vector type traps (SIGILL) as the GPU's would fault; the x86 CPU would not care.
CXX_FLAGS = ("-std=c++17", "-O1", "-w", "-fno-strict-aliasing", "-fwrapv", "-fsanitize=alignment",
             "-fsanitize-undefined-trap-on-error", "-Wl,-z,now")
MAGIC, DONE = 0x4D45474B, 0x454E4F44
FORWARD, REVERSED = 0, 3  # schedules: threads and blocks in order, or both reversed
UNSUPPORTED = (
    (re.compile(r"\basm\b|\b__asm__\b"), "inline PTX (asm)"),
    (re.compile(r"\bwmma\b|\bnvcuda\b|<mma\.h>"), "tensor-core fragments (wmma)"),
    (re.compile(r"\b__pipeline|\bcp\.async|\bcuda::memcpy_async|\bcuda::pipeline"), "asynchronous copies"),
    (re.compile(r"cooperative_groups"), "cooperative groups"),
    (re.compile(r"\btex\d?D\w*|\bsurf\d?D\w*|\bcudaTextureObject_t"), "textures"),
)
EXIT_REASONS = {
    3: (Status.runtime_error, "threads of a block wait at different barriers"),
    4: (Status.runtime_error, "the kernel trapped"),
    5: (Status.runtime_error, "the kernel called a function the emulator does not have"),
    6: (Status.runtime_error, "the emulator refused the launch"),
    7: (Status.runtime_error, "the emulator's request was cut short"),
    8: (Status.runtime_error, "the emulator's reply could not be written"),
    10: (Status.runtime_error, "an illegal address: the kernel wrote to dynamic shared memory past the bytes its "
                               "launch asks for (the `// @kagent smem:` directive)"),
}


@dataclass
class Emulated:
    """The emulator's verdict on one kernel: a failure class with its evidence, or correct at the sizes
    it ran (`status` not_run: nothing was timed)."""

    status: Status
    message: str
    mismatch: Mismatch | None = None
    sizes_checked: list[str] = field(default_factory=list)
    log: str = ""


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why this machine cannot emulate kernels, or None."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"the CPU emulator needs Linux on x86-64 (this is {platform.system()} on {platform.machine()})"
    if _compiler() is None:
        return "the CPU emulator needs g++ on the PATH (or another GCC as CXX)"
    return None


def _compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++"))  # GCC: the alignment trap's flags are GCC's


def emulate(kernel: Kernel, program: Program, problem: Problem, seed: int = 0) -> Emulated:
    """Build `kernel` for the CPU and check it at every size of `problem` small enough for the CPU."""
    if reason := unavailable():
        return Emulated(Status.not_run, f"not emulated: {reason}")
    for pattern, what in UNSUPPORTED:
        if pattern.search(kernel.source):
            return Emulated(Status.not_run, f"not emulated: the CPU emulator does not run {what}")
    binary, log = _build(kernel)
    if binary is None:
        return Emulated(Status.not_run, "not emulated: the CPU emulator could not build this kernel (it "
                        "compiled for the GPU)", log=log)
    reference = load_function(problem.reference)
    checked: list[str] = []
    large: list[str] = []
    slow: list[str] = []
    last: float | None = None  # seconds the largest size done so far took
    for index in sorted(range(len(problem.sizes)), key=lambda i: _bytes(problem, program, i)):  # smallest first
        case, size_bytes = problem.sizes[index], _bytes(problem, program, index)
        if size_bytes > MAX_SIZE_BYTES:
            large.append(case.label)
            continue
        if slow:  # a larger size would take longer still
            slow.append(case.label)
            continue
        began = time.perf_counter()
        failure = _check_size(binary, program, index, case, [*case.buffers, *program.scratch[index]], problem,
                              reference, seed)
        if failure is not None and failure.status is Status.timeout and last is not None \
                and last * SLOW_MARGIN > RUN_TIMEOUT_S:
            slow.append(case.label)  # slow rather than hung: the size before already took a tenth of the limit
            continue
        if failure is not None:
            failure.sizes_checked = checked
            return failure
        checked.append(case.label)
        last = time.perf_counter() - began
    if not checked:
        return Emulated(Status.not_run, "not emulated: every size is too large for the CPU emulator")
    left = "".join(f"; not emulated at {', '.join(labels)} ({why})" for labels, why in
                   ((large, "too large for the CPU"), (slow, "too slow on the CPU")) if labels)
    return Emulated(Status.not_run, f"correct at {len(checked)} sizes on the CPU emulator{left}; not timed: "
                    "no GPU here", sizes_checked=checked)


def _bytes(problem: Problem, program: Program, index: int) -> int:
    case = problem.sizes[index]
    return sum(b.count * lookup(b.dtype).itemsize for b in [*case.buffers, *program.scratch[index]])


def _build(kernel: Kernel) -> tuple[Path | None, str]:
    """The kernel's emulator binary (cached by everything that goes into it), or None and the log."""
    headers = screen(kernel.source, kernel.path.name, kernel.include_roots, include_dirs(),
                     CompileLimits.from_env().max_source_bytes,
                     "\n".join(f"#define {k} {v}" for k, v in kernel.knobs.items()))
    if isinstance(headers, Refusal):
        return None, headers.message
    text = _translation_unit(kernel)
    local = sorted(headers.local.items())
    knobs = sorted(kernel.knobs.items())   # built in as -D definitions: one binary per combination
    key = hashlib.sha256(repr((text, local, knobs, RUNTIME, _compiler(), CXX_FLAGS)).encode()).hexdigest()[:24]
    folder = cache_dir() / "emulator"
    binary = folder / f"{key}.bin"
    if binary.exists():
        return binary, ""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kagent-emu-") as tmp:
        work = Path(tmp)
        (work / "shim").mkdir()
        for name in ("cuda_fp16.h", "cuda_bf16.h", "cuda_runtime.h", "cuda.h", "vector_types.h"):
            (work / "shim" / name).write_text("#pragma once\n")
        (work / "kagent_emu.h").write_text((HERE / "kagent_emu.h").read_text())
        (work / "kagent_emu_main.h").write_text((HERE / "kagent_emu_main.h").read_text())
        for name, content in local:
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        (work / "kernel.cpp").write_text(text)
        command = [str(_compiler()), *CXX_FLAGS, f"-I{work / 'shim'}", f"-I{work}", "-include", "kagent_emu.h",
                   *(f"-D{k}={v}" for k, v in knobs), "kernel.cpp", "-o", "kernel.bin"]
        try:
            done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                                  env=_clean_env())
        except subprocess.TimeoutExpired:
            return None, f"the C++ build took over {BUILD_TIMEOUT_S:.0f} s"
        if done.returncode != 0:
            return None, redact(_first_errors(done.stderr))
        staged = folder / f"{key}.{os.getpid()}.tmp"
        shutil.copyfile(work / "kernel.bin", staged)
        staged.chmod(0o700)
        staged.replace(binary)
    return binary, ""


def _translation_unit(kernel: Kernel) -> str:
    """The kernel's source as the host compiler sees it: the prelude, dynamic shared memory pointed at
    the emulator's arena (a sized `extern __shared__` array made static, as NVRTC makes it), and the list of
    its entries."""
    source = re.sub(
        r"extern\s+__shared__\s+((?:__align__\s*\(\s*\d+\s*\)\s*|alignas\s*\(\s*\d+\s*\)\s*)*)([\w:]+(?:\s+[\w:]+)*?)"
        r"\s+(\w+)\s*\[\s*\]\s*;",
        lambda m: f"{m.group(2)}* const {m.group(3)} = reinterpret_cast<{m.group(2)}*>(kg_dynamic_smem);",
        kernel.source)
    # A sized `extern __shared__ T name[N];` is a static definition to NVRTC (its warning 20044): here too.
    source = re.sub(r"\bextern\s+(__shared__\s[^;\[\]]*?\w\s*\[[^\]]*\S[^\]]*\])", r"\1", source)
    source = re.sub(r"__shared__\s+alignas\s*\(\s*(\d+)\s*\)", r"__shared__ __align__(\1)", source)
    entries = " ".join(f"X({name})" for name in kernel.entries)
    return (f'{PRELUDE}\n#line 1 "{kernel.path.name}"\n{source}\n#line 1 "kagent-emulator"\n'
            f"#define KG_ENTRIES {entries}\n#include \"kagent_emu_main.h\"\n")


def _first_errors(log: str, keep: int = 12) -> str:
    lines = [line for line in log.splitlines() if "error" in line or line.startswith(" ")]
    return "\n".join(lines[:keep]) or log[-2000:]


def _clean_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C"}


def _check_size(binary: Path, program: Program, index: int, case: SizeCase, buffers: list[Buffer],
                problem: Problem, reference, seed: int) -> Emulated | None:
    rng = np.random.default_rng([seed, index])
    inputs = {b.name: draw(b, rng) for b in case.buffers if b.role == "input"}
    initial = [_guarded(b, inputs.get(b.name)) for b in buffers]
    runs = []
    for schedule in (FORWARD, REVERSED):
        result = _run(binary, program.launches[index], buffers, initial, schedule)
        if isinstance(result, Emulated):
            result.message = f"{result.message} at {case.label} (CPU emulator)"
            return result
        if problem_found := _integrity(result, buffers, inputs, case.label):
            return problem_found
        runs.append({b.name: _interior(raw, b) for b, raw in zip(buffers, result) if b.role == "output"})
    expected = run_reference(reference, inputs, [b for b in case.buffers if b.role == "input"],
                             case.scalars, [b for b in case.buffers if b.role == "output"], case.dims)
    same = all(same_bytes(runs[0][n], runs[1][n]) for n in runs[0])
    for run, phase in zip(runs, ("check", "repeat")):
        for name, got in run.items():
            buffer = next(b for b in buffers if b.name == name)
            if mismatch := compare(buffer, got, expected[name]):
                mismatch.size, mismatch.phase = case.label, phase
                message = f"wrong {name} at {case.label} (CPU emulator)"
                if not same:  # right in one schedule of the threads and wrong in another
                    return Emulated(Status.nondeterministic, f"{message}; outputs differ between two schedules of "
                                    f"the threads (a race?): {differing(runs)}", mismatch)
                return Emulated(Status.wrong_result, message, mismatch)
    return None


def _guarded(buffer: Buffer, values: np.ndarray | None) -> bytes:
    """The buffer's bytes as the kernel finds them, between canary bands: its input, or poison."""
    width = lookup(buffer.dtype).itemsize
    if values is not None:
        body = np.ascontiguousarray(values).tobytes()
    else:
        word_type, word = poison_word(buffer)
        body = np.full(buffer.count, word, dtype=word_type).tobytes()
    assert len(body) == buffer.count * width
    band = bytes([CANARY]) * GUARD
    return band + body + band


def _interior(raw: bytes, buffer: Buffer) -> np.ndarray:
    dtype = lookup(buffer.dtype)
    return np.frombuffer(raw[GUARD:len(raw) - GUARD], dtype=dtype.storage).copy()


def _integrity(result: list[bytes], buffers: list[Buffer], inputs: dict[str, np.ndarray],
               label: str) -> Emulated | None:
    """A write outside a buffer (a guard band changed), or a changed input: the failure, else None."""
    for buffer, raw in zip(buffers, result):
        before, after = raw[:GUARD], raw[len(raw) - GUARD:]
        where = None
        if before != bytes([CANARY]) * GUARD:
            first = next(i for i, b in enumerate(before) if b != CANARY)
            where = f"{buffer.name}: bytes written before the buffer (up to {GUARD - first} bytes before it)"
        elif after != bytes([CANARY]) * GUARD:
            first = next(i for i, b in enumerate(after) if b != CANARY)
            count = sum(b != CANARY for b in after)
            where = f"{buffer.name}: {count} bytes written past the end (from byte {first} after it)"
        if where:
            return Emulated(Status.wrong_result, f"out-of-bounds write at {label}: {where} (CPU emulator)",
                            Mismatch(size=label, phase="guard", output=buffer.name, detail=where))
    for buffer, raw in zip(buffers, result):
        if buffer.name in inputs:
            now = np.frombuffer(raw[GUARD:len(raw) - GUARD], dtype=np.uint8)
            original = inputs[buffer.name].reshape(-1).view(np.uint8)
            changed = np.flatnonzero(now != original)
            if changed.size:
                detail = f"input {buffer.name} was modified ({changed.size} bytes changed, first at byte {changed[0]})"
                return Emulated(Status.wrong_result, f"{detail} at {label} (CPU emulator)",
                                Mismatch(size=label, phase="inputs", output=buffer.name, detail=detail))
    return None


def _request(launches: list[Launch], buffers: list[Buffer], initial: list[bytes], schedule: int) -> bytes:
    """The emulator's stdin: the buffers' bytes, then each launch (its entry by position) and its arguments."""
    index = {b.name: i for i, b in enumerate(buffers)}
    parts = [struct.pack("<4I", MAGIC, schedule, len(buffers), len(launches)),
             struct.pack(f"<{len(buffers)}Q", *(len(raw) for raw in initial)), *initial]
    for position, launch in enumerate(launches):
        parts.append(struct.pack("<8IQ", position, *launch.grid, *launch.block, len(launch.args), launch.smem))
        parts.extend(_arg(a, index) for a in launch.args)
    return b"".join(parts)


def _arg(arg: Arg, index: dict[str, int]) -> bytes:
    if arg.buffer is not None:
        return struct.pack("<3Q", 0, index[arg.buffer], GUARD)
    dtype = lookup(arg.dtype or "int32")
    value = np.array([arg.value], dtype=dtype.storage)
    return struct.pack("<3Q", dtype.itemsize, int.from_bytes(value.tobytes(), "little"), 0)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _run(binary: Path, launches: list[Launch], buffers: list[Buffer], initial: list[bytes],
         schedule: int) -> list[bytes] | Emulated:
    """One run of the program's launches at one size: each buffer's bytes afterwards, or the failure."""
    request = _request(launches, buffers, initial, schedule)
    try:
        done = subprocess.run([str(binary)], input=request, capture_output=True, timeout=RUN_TIMEOUT_S,
                              env={}, preexec_fn=_limit_memory, cwd="/")
    except subprocess.TimeoutExpired:
        return Emulated(Status.timeout, f"no end after {RUN_TIMEOUT_S:.0f} s on the CPU emulator (a kernel that "
                        "never ends, or waits for another block: blocks run one after another here)")
    log = redact(done.stderr.decode("utf-8", "replace")[-4000:])
    said = next((line.split(": ", 1)[1] for line in log.splitlines() if line.startswith("kagent-emulator: ")), "")
    if done.returncode == 9:
        return Emulated(Status.not_run, "not emulated: seccomp's strict mode is not available here", log=log)
    if done.returncode < 0:
        number = -done.returncode
        faults: dict[signal.Signals, str] = {
            signal.SIGSEGV: "an illegal memory access (segmentation fault)",
            signal.SIGBUS: "a misaligned or illegal memory access (bus error)",
            signal.SIGFPE: "an arithmetic fault (integer division by zero?)",
            signal.SIGILL: "a misaligned address: a load or store of a type wider than its address's alignment (a "
                           "vector access off its width)",
            signal.SIGKILL: "killed: a system call, or memory beyond the emulator's limit",
        }
        return Emulated(Status.runtime_error, faults.get(signal.Signals(number), f"signal {number}"), log=log)
    if done.returncode != 0:
        status, what = EXIT_REASONS.get(done.returncode, (Status.runtime_error, f"exit code {done.returncode}"))
        return Emulated(status, f"{what}: {said}" if said else what, log=log)
    out = done.stdout
    sizes = [len(raw) for raw in initial]
    if len(out) != sum(sizes) + 4 or struct.unpack("<I", out[-4:])[0] != DONE:
        return Emulated(Status.runtime_error, "the emulated kernel's reply is damaged (it wrote to its output?)",
                        log=log)
    result, at = [], 0
    for size in sizes:
        result.append(out[at:at + size])
        at += size
    return result

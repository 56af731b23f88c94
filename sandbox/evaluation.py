"""Check untrusted kernels against the reference and time them side by side (worker process only)."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

import cupy as cp
import numpy as np

from .classify import classify_cuda_error
from .compare import compare, same_bytes
from .dtypes import lookup, scalar_type, to_storage
from .gpu import GuardedBuffer, count_differences
from .inputs import draw, load_function, run_reference
from .outcome import Mismatch, Status
from .problem import Program, Reply, Request
from .timing import EventTimer, repetitions, summarise

Beat = Callable[[str, float], None]
EXTRA_RUNS_ON_MISMATCH = 3  # more identical runs, to tell a race from a plain wrong result
DEFAULT_SMEM_LIMIT = 48 * 1024
FRESH_SEED_OFFSET = 1_000_003
HOST_CACHE_ENTRIES = 24  # inputs and references of a task's sizes, two seeds each
_HOST_CACHE: OrderedDict = OrderedDict()


_pinned_pool_task: str | None = None  # the task (its reference) whose downloads the pinned pool holds


def _pinned_pool_for(reference: str) -> None:
    """Downloads reuse page-locked host memory across one task's candidates. When another task comes,
    the free blocks the last one left are handed back to the system: they fit its sizes, not these."""
    global _pinned_pool_task
    if _pinned_pool_task != reference:
        cp.get_default_pinned_memory_pool().free_all_blocks()
        _pinned_pool_task = reference


def _remember(key: tuple, value: dict) -> None:
    _HOST_CACHE[key] = value
    while len(_HOST_CACHE) > HOST_CACHE_ENTRIES:
        _HOST_CACHE.popitem(last=False)


class KernelFailure(Exception):
    """The kernel under evaluation failed; carries the outcome class and the evidence."""

    def __init__(self, status: Status, message: str, mismatch: Mismatch | None = None, sticky: bool = False):
        super().__init__(message)
        self.status, self.message, self.mismatch, self.sticky = status, message, mismatch, sticky


@dataclass
class SizeState:
    """One program's buffers at one size, with the inputs, reference and outputs that passed."""

    buffers: dict[str, GuardedBuffer]
    inputs: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]
    verified: dict[str, cp.ndarray] = field(default_factory=dict)
    verified_host: dict[str, np.ndarray] = field(default_factory=dict)


class Evaluation:
    def __init__(self, request: Request, beat: Beat):
        self.req, self.beat, self.s = request, beat, request.settings
        self.reference = load_function(request.reference)
        _pinned_pool_for(request.reference)
        self.program_label = ""
        self._functions: dict[str, list] = {}
        self.sizes_checked: list[str] = []
        self.deterministic = True
        optin = cp.cuda.Device().attributes.get("MaxSharedMemoryPerBlockOptin", DEFAULT_SMEM_LIMIT)
        self.smem_limit = int(optin)

    def run(self) -> Reply:
        try:
            timed_states = [self.check_program(p, trusted=i > 0) for i, p in enumerate(self.req.programs)]
            timings = self.time_programs(timed_states) if self.s.time_it else []
            library = self.time_library(timed_states[0]) if self.req.library and self.s.time_it else None
            self.fresh_check(self.req.programs[0], timed_states[0])
        except KernelFailure as failure:
            if failure.mismatch is not None:
                failure.mismatch.program = self.program_label
            return Reply(status=failure.status.value, message=failure.message, sticky=failure.sticky,
                         mismatch=failure.mismatch, failed_program=self.program_label,
                         sizes_checked=self.sizes_checked)
        return Reply(status="ok", message="correct on every size", sizes_checked=self.sizes_checked,
                     timings=list(timings), deterministic=self.deterministic,
                     library_timing=library[0] if library else None, flags=library[1] if library else [])

    # -- correctness -------------------------------------------------------------------------

    def check_program(self, program: Program, trusted: bool) -> SizeState:
        """Check every size (only the timed one for a trusted baseline); return the timed size's state."""
        self.program_label = program.label
        functions = self.load(program)
        timed = self.req.timed_index
        order = [timed] if trusted else [i for i in range(len(self.req.sizes)) if i != timed] + [timed]
        state = None
        for index in order:
            state = self.check_size(program, functions, index, seed=self.s.seed)
            if not trusted:
                self.sizes_checked.append(self.req.sizes[index].label)
        return state

    def load(self, program: Program) -> list:
        """The program's functions, loaded once: checks, timing and the fresh check share the module
        (and so any `__device__` state a cheating kernel keeps between launches)."""
        if program.label not in self._functions:
            with cuda_errors():
                module = cp.RawModule(path=program.cubin_path)
                names = [launch.entry for launch in program.launches[0]]
                self._functions[program.label] = [module.get_function(name) for name in names]
        return self._functions[program.label]

    def check_size(self, program: Program, functions: list, index: int, seed: int) -> SizeState:
        case = self.req.sizes[index]
        buffers = {b.name: GuardedBuffer(b) for b in [*case.buffers, *program.scratch[index]]}
        inputs = self.inputs(index, seed)
        for name, values in inputs.items():
            buffers[name].upload(values)
        self.check_resources(program, functions, index)
        run = lambda: self.run_once(program, functions, index, buffers, inputs)  # noqa: E731
        runs = [run(), run()]
        state = SizeState(buffers, inputs, self.reference_outputs(index, seed, inputs))
        mismatch = self.first_mismatch(index, runs[0], state.reference, "check")
        if mismatch is None and not _identical(runs[0], runs[1]):  # identical bytes need no second compare
            mismatch = self.first_mismatch(index, runs[1], state.reference, "repeat")
        if mismatch:
            runs += [run() for _ in range(EXTRA_RUNS_ON_MISMATCH)]
        same = all(_identical(runs[0], r) for r in runs[1:])
        self.deterministic &= same
        if mismatch:
            status, message = _failure_class(runs, same, f"wrong {mismatch.output} at {case.label}")
            raise KernelFailure(status, message, mismatch)
        state.verified_host = runs[0]
        state.verified = {name: cp.asarray(values) for name, values in runs[0].items()}
        return state

    def check_resources(self, program: Program, functions: list, index: int) -> None:
        for launch, function in zip(program.launches[index], functions):
            threads = launch.block[0] * launch.block[1] * launch.block[2]
            if threads > function.max_threads_per_block:
                raise KernelFailure(Status.resource_error, (
                    f"{launch.entry}: block of {threads} threads, but with {function.num_regs} registers "
                    f"per thread at most {function.max_threads_per_block} fit"))
            smem = function.shared_size_bytes + launch.smem
            if smem > self.smem_limit:
                raise KernelFailure(Status.resource_error, (
                    f"{launch.entry}: needs {smem} bytes of shared memory "
                    f"({function.shared_size_bytes} static + {launch.smem} dynamic), limit {self.smem_limit}"))
            if launch.smem > DEFAULT_SMEM_LIMIT:
                with cuda_errors():
                    function.max_dynamic_shared_size_bytes = launch.smem

    def run_once(self, program, functions, index, buffers, inputs) -> dict[str, np.ndarray]:
        for buffer in buffers.values():
            buffer.reset()
        self.launch_all(program, functions, index, buffers)
        self.check_integrity(index, buffers, inputs)
        return {n: b.download() for n, b in buffers.items() if b.spec.role == "output"}

    def launch_all(self, program, functions, index, buffers) -> None:
        self.beat("launch", self.s.launch_timeout_s)
        with cuda_errors():
            for launch, function in zip(program.launches[index], functions):
                args = tuple(
                    buffers[a.buffer].view if a.buffer else scalar_type(a.dtype).type(a.value)
                    for a in launch.args
                )
                function(launch.grid, launch.block, args, shared_mem=launch.smem)
            cp.cuda.Device().synchronize()

    def check_integrity(self, index, buffers, inputs) -> None:
        label = self.req.sizes[index].label
        for buffer in buffers.values():
            if violation := buffer.guard_violation():
                raise KernelFailure(Status.wrong_result, f"out-of-bounds write at {label}: {violation}",
                                    Mismatch(size=label, phase="guard", output=buffer.spec.name, detail=violation))
        for name, original in inputs.items():
            now = buffers[name].download()
            if same_bytes(now, original):
                continue
            changed = np.flatnonzero(now.view(np.uint8) != original.reshape(-1).view(np.uint8))
            if changed.size:
                detail = f"input {name} was modified ({changed.size} bytes changed, first at byte {changed[0]})"
                raise KernelFailure(Status.wrong_result, f"{detail} at {label}",
                                    Mismatch(size=label, phase="inputs", output=name, detail=detail))

    def inputs(self, index: int, seed: int) -> dict[str, np.ndarray]:
        """Host inputs of a size for a seed (drawn once per worker, then kept for later requests)."""
        case = self.req.sizes[index]
        key = ("inputs", self.req.reference, case.model_dump_json(), seed)
        if key not in _HOST_CACHE:
            self.beat("inputs", self.s.reference_timeout_s)
            rng = np.random.default_rng([seed, index])
            _remember(key, {b.name: draw(b, rng) for b in case.buffers if b.role == "input"})
        return _HOST_CACHE[key]

    def reference_outputs(self, index: int, seed: int, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Computed on the host, the first time only after a kernel has run: never on the GPU. Kept in
        host memory for later candidates of the same task (a sweep checks many against one reference)."""
        case = self.req.sizes[index]
        key = ("reference", self.req.reference, case.model_dump_json(), seed)
        if key not in _HOST_CACHE:
            self.beat("reference", self.s.reference_timeout_s)
            input_specs = [b for b in case.buffers if b.role == "input"]
            outputs = [b for b in case.buffers if b.role == "output"]
            _remember(key, run_reference(self.reference, inputs, input_specs, case.scalars, outputs))
        return _HOST_CACHE[key]

    def first_mismatch(self, index, got, reference, phase) -> Mismatch | None:
        case = self.req.sizes[index]
        for buffer in case.buffers:
            if buffer.role == "output" and (m := compare(buffer, got[buffer.name], reference[buffer.name])):
                m.size, m.phase = case.label, phase
                return m
        return None

    # -- timing ------------------------------------------------------------------------------

    def time_programs(self, states: list[SizeState]) -> list:
        timer, index = EventTimer(), self.req.timed_index
        programs = self.req.programs
        functions = [self.load(p) for p in programs]
        outputs = [[b for b in s.buffers.values() if b.spec.role != "input"] for s in states]

        def prepare(k):
            return lambda: [b.reset() for b in outputs[k]]

        def launch(k):
            return lambda: self.launch_all(programs[k], functions[k], index, states[k].buffers)

        estimates = [timer.estimate(prepare(k), launch(k), self.s.warmup_ms) for k in range(len(programs))]
        jitter = int(np.random.default_rng([self.s.seed, 7]).integers(0, 8))
        rounds = repetitions(estimates, self.s.budget_ms, self.s.min_reps, self.s.max_reps, jitter)
        samples: list[list[float]] = [[] for _ in programs]
        for r in range(rounds):
            for k in np.roll(np.arange(len(programs)), r):
                samples[k].append(timer.time(prepare(k), launch(k)))
                self.verify_timed_launch(programs[k].label, states[k], r, rounds)
        self.program_label = programs[0].label
        self.beat("compare", self.s.reference_timeout_s)
        last = {n: b.download() for n, b in states[0].buffers.items() if b.spec.role == "output"}
        # Compared on the host (the GPU-side checks above trust device memory the kernel could reach):
        # the same bytes as the verified run pass at once, anything else is compared with the reference.
        if not _identical(last, states[0].verified_host) and (
                mismatch := self.first_mismatch(index, last, states[0].reference, "timed")):
            raise KernelFailure(Status.wrong_result, "the last timed launch gave a wrong result", mismatch)
        return [summarise(s) for s in samples]

    def verify_timed_launch(self, label: str, state: SizeState, round_index: int, rounds: int) -> None:
        """Every timed launch must reproduce the verified output: no skipped work, no warm-up tricks."""
        for name, verified in state.verified.items():
            buffer = state.buffers[name]
            wrong = count_differences(buffer.spec, buffer.view, verified)
            if wrong:
                self.program_label = label
                detail = f"timed launch {round_index + 1} of {rounds}: {wrong} elements of {name} differ"
                raise KernelFailure(Status.wrong_result, f"output changed during timing ({detail})",
                                    Mismatch(size=self.req.sizes[self.req.timed_index].label, phase="timed",
                                             output=name, detail=detail))

    def fresh_check(self, program: Program, state: SizeState) -> None:
        """New inputs in the same buffers after timing: catches kernels that replay old results."""
        self.program_label = program.label
        index = self.req.timed_index
        seed = self.s.seed + FRESH_SEED_OFFSET
        inputs = self.inputs(index, seed)
        for name, values in inputs.items():
            state.buffers[name].upload(values)
        got = self.run_once(program, self.load(program), index, state.buffers, inputs)
        if mismatch := self.first_mismatch(index, got, self.reference_outputs(index, seed, inputs), "fresh"):
            raise KernelFailure(Status.wrong_result, "wrong result on fresh inputs after timing", mismatch)

    def time_library(self, state: SizeState):
        """Time the task's library function on the same device buffers; flag it if it disagrees.

        The library function is the task author's trusted code, but a failure in it must not cost the
        kernel's verdict: it becomes a flag."""
        self.beat("library", self.s.reference_timeout_s)  # importing torch alone can take seconds
        try:
            import torch

            return self._time_library(torch, state)
        except Exception as exc:  # noqa: BLE001 - reported, never fatal
            return None, [f"library baseline not timed: {type(exc).__name__}: {exc}"]

    def _time_library(self, torch, state: SizeState):
        function = load_function(self.req.library)
        case = self.req.sizes[self.req.timed_index]
        tensors = {}
        for b in case.buffers:
            if b.role == "input":
                tensor = torch.from_dlpack(state.buffers[b.name].view.reshape(b.shape))
                tensors[b.name] = tensor.view(torch.bfloat16) if b.dtype == "bfloat16" else tensor
        call = lambda: function(**tensors, **case.scalars)  # noqa: E731
        flags = []
        result = call()
        torch.cuda.synchronize()
        first_output = next(b for b in case.buffers if b.role == "output")
        got = (result[0] if isinstance(result, (tuple, list)) else result).float().cpu().numpy().reshape(-1)
        if compare(first_output, to_storage(got, lookup(first_output.dtype)), state.reference[first_output.name]):
            flags.append("library baseline disagrees with the reference")
        timer = EventTimer()
        estimate = timer.estimate(lambda: None, call, self.s.warmup_ms)
        reps = repetitions([estimate], self.s.budget_ms, self.s.min_reps, self.s.max_reps, 0)
        return summarise([timer.time(lambda: None, call) for _ in range(reps)]), flags


def _failure_class(runs: list[dict], same: bool, message: str) -> tuple[Status, str]:
    """A wrong result that varies from run to run is a race, unless only the first run differs."""
    if same:
        return Status.wrong_result, message
    if all(_identical(runs[1], r) for r in runs[2:]):
        return Status.wrong_result, f"{message}; the first launch differs from later ones (state kept between launches?)"
    return Status.nondeterministic, f"{message}; outputs differ between identical runs (a race?)"


def _identical(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(same_bytes(a[k], b[k]) for k in a)


@contextlib.contextmanager
def cuda_errors():
    """Turn a CUDA error into a KernelFailure with its class (and whether the context is lost)."""
    try:
        yield
    except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as exc:
        status, sticky = classify_cuda_error(str(exc))
        raise KernelFailure(status, str(exc), sticky=sticky) from None

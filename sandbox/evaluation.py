"""Check untrusted kernels against the reference and time them side by side (worker process only)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import cupy as cp
import numpy as np

from .compare import compare, same_bytes
from .dtypes import scalar_type
from .gpu import DEVICE_COMPARE_MIN, GuardedBuffer, bad_on_device, count_differences
from .host_cache import kept, page_locked, pinned_pool_for
from .inputs import draw, load_function, run_reference
from .kernel_failure import KernelFailure, cuda_errors, failure_class, identical
from .library import time_library
from .outcome import Mismatch, Status, Timing
from .problem import Program, Reply, Request
from .timing import EventTimer, precise, repetitions, summarise

Beat = Callable[[str, float], None]
EXTRA_RUNS_ON_MISMATCH = 3  # more identical runs, to tell a race from a plain wrong result
DEFAULT_SMEM_LIMIT = 48 * 1024
FRESH_SEED_OFFSET = 1_000_003
PRECISION_EVERY = 5  # timed rounds between checks of the medians' precision


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
        pinned_pool_for(request.reference)
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
        states = []
        for index in order:
            states.append(self.check_size(program, functions, index, seed=self.s.seed))
            if not trusted:
                self.sizes_checked.append(self.req.sizes[index].label)
        return states[-1]

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
        same = identical(runs[0], runs[1])  # then one compare judges both
        # The second run's outputs are still in the buffers: the device judges them (and the first
        # run's, when they are the same bytes) before the host compares anything.
        mismatch = self.first_mismatch(index, runs[0], state.reference, "check", buffers if same else None)
        if mismatch is None and not same:
            mismatch = self.first_mismatch(index, runs[1], state.reference, "repeat", buffers)
        if mismatch:
            runs += [run() for _ in range(EXTRA_RUNS_ON_MISMATCH)]
            same = all(identical(runs[0], r) for r in runs[1:])
        self.deterministic &= same
        if mismatch:
            status, message = failure_class(runs, same, f"wrong {mismatch.output} at {case.label}")
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

    def run_once(self, program, functions, index, buffers, inputs, download=True) -> dict[str, np.ndarray]:
        """Poison the outputs, launch, check guards and inputs; the outputs' host copies (none when
        `download` is False: they stay in the buffers)."""
        for buffer in buffers.values():
            buffer.reset()
        self.launch_all(program, functions, index, buffers)
        self.check_integrity(index, buffers, inputs)
        return {n: b.download() for n, b in buffers.items() if b.spec.role == "output" and download}

    def launch_all(self, program, functions, index, buffers, wait: bool = True) -> None:
        """Launch the program's kernels at a size and, with `wait`, wait for them (a timed launch waits on
        its end event instead, once its timing gate is open)."""
        self.beat(f"the launch at {self.req.sizes[index].label}", self.s.launch_timeout_s)  # a hang names its size
        with cuda_errors():
            for launch, function in zip(program.launches[index], functions):
                args = tuple(
                    buffers[a.buffer].view if a.buffer else scalar_type(a.dtype).type(a.value)
                    for a in launch.args
                )
                function(launch.grid, launch.block, args, shared_mem=launch.smem)
            if wait:
                cp.cuda.Device().synchronize()

    def check_integrity(self, index, buffers, inputs) -> None:
        label = self.req.sizes[index].label
        for buffer in buffers.values():
            if violation := buffer.guard_violation():
                raise KernelFailure(Status.wrong_result, f"out-of-bounds write at {label}: {violation}",
                                    Mismatch(size=label, phase="guard", output=buffer.spec.name, detail=violation))
        for name, original in inputs.items():
            if not buffers[name].modified():  # a checksum on the device; the bytes come back only if it changed
                continue
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
        def draw_them() -> dict[str, np.ndarray]:
            self.beat("inputs", self.s.reference_timeout_s)
            rng = np.random.default_rng([seed, index])
            return page_locked({b.name: draw(b, rng) for b in case.buffers if b.role == "input"})

        return kept(("inputs", self.req.reference, case.model_dump_json(), seed), draw_them)

    def reference_outputs(self, index: int, seed: int, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Computed on the host, the first time only after a kernel has run: never on the GPU. Kept in
        host memory for later candidates of the same task (a sweep checks many against one reference)."""
        case = self.req.sizes[index]
        def compute() -> dict[str, np.ndarray]:
            self.beat("reference", self.s.reference_timeout_s)
            input_specs = [b for b in case.buffers if b.role == "input"]
            outputs = [b for b in case.buffers if b.role == "output"]
            return page_locked(run_reference(self.reference, inputs, input_specs, case.scalars, outputs, case.dims))

        return kept(("reference", self.req.reference, case.model_dump_json(), seed), compute)

    def first_mismatch(self, index: int, got: dict[str, np.ndarray], reference: dict[str, np.ndarray],
                       phase: str, on_device: dict[str, GuardedBuffer] | None = None) -> Mismatch | None:
        """The first output that differs from the reference. `got` holds the host copies (downloaded
        here where missing); `on_device`, the buffers still holding these same outputs: a large output
        is then judged on the device first, and only one it does not pass is compared on the host."""
        case = self.req.sizes[index]
        for buffer in case.buffers:
            if buffer.role != "output":
                continue
            expected = reference[buffer.name]
            if on_device is not None and buffer.count >= DEVICE_COMPARE_MIN:
                self.beat("compare", self.s.reference_timeout_s)
                if bad_on_device(buffer, on_device[buffer.name].view, expected) == 0:
                    continue
            host = got.get(buffer.name)
            if host is None:
                assert on_device is not None, "an output neither downloaded nor on the device"
                host = on_device[buffer.name].download()
            if m := compare(buffer, host, expected):
                m.size, m.phase = case.label, phase
                return m
        return None

    # -- timing ------------------------------------------------------------------------------

    def time_programs(self, states: list[SizeState]) -> list:
        timer, index = EventTimer(self.s.timing_gate), self.req.timed_index
        programs = self.req.programs
        functions = [self.load(p) for p in programs]
        outputs = [[b for b in s.buffers.values() if b.spec.role != "input"] for s in states]

        def prepare(k):
            return lambda: [b.reset() for b in outputs[k]]

        def launch(k):
            return lambda: self.launch_all(programs[k], functions[k], index, states[k].buffers, wait=False)

        with cuda_errors():  # the timer waits for the launches: errors they raise on the device come up there
            estimates = [timer.estimate(prepare(k), launch(k), self.s.warmup_ms) for k in range(len(programs))]
        jitter = int(np.random.default_rng([self.s.seed, 7]).integers(0, 8))
        rounds = repetitions(estimates, self.s.budget_ms, self.s.min_reps, self.s.max_reps, jitter)
        samples: list[list[float]] = [[] for _ in programs]
        r = 0
        while r < rounds:
            for k in np.roll(np.arange(len(programs)), r):
                with cuda_errors():
                    samples[k].append(timer.time(prepare(k), launch(k)))
                self.verify_timed_launch(programs[k].label, states[k], r, rounds)
            r += 1
            # Sized to the noise: once every median is pinned down, the jitter's rounds and no more
            # (the last launch stays as unpredictable to the kernel as with a fixed count).
            if r >= self.s.min_reps and r % PRECISION_EVERY == 0 and rounds > r + jitter \
                    and precise(samples, self.s.precision):
                rounds = r + jitter
        self.program_label = programs[0].label
        self.beat("compare", self.s.reference_timeout_s)
        last = {n: b.download() for n, b in states[0].buffers.items() if b.spec.role == "output"}
        # Compared on the host (the GPU-side checks above trust device memory the kernel could reach):
        # the same bytes as the verified run pass at once, anything else is compared with the reference.
        if not identical(last, states[0].verified_host) and (
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
        got = self.run_once(program, self.load(program), index, state.buffers, inputs, download=False)
        reference = self.reference_outputs(index, seed, inputs)
        if mismatch := self.first_mismatch(index, got, reference, "fresh", state.buffers):
            raise KernelFailure(Status.wrong_result, "wrong result on fresh inputs after timing", mismatch)

    def time_library(self, state: SizeState) -> tuple[Timing | None, list[str]]:
        """Time the task's library function on the same device buffers (`library.py`)."""
        self.beat("library", self.s.reference_timeout_s)  # importing torch alone can take seconds
        assert self.req.library is not None
        inputs = {name: buffer.view for name, buffer in state.buffers.items() if buffer.spec.role == "input"}
        return time_library(self.req.library, self.req.sizes[self.req.timed_index], inputs, state.reference, self.s)



"""Other tuners' recordings: kernel_tuner's JSON cache files, read as recorded spaces that kagent's
strategies search without a GPU (`kagent replay-bench --cache FILE`).

A kernel_tuner cache names the device, the kernel, the problem size, the tunable parameters with their
values in order (`tune_params`, `tune_params_keys`) and one result per configuration it evaluated,
keyed by the values joined with commas. A result's objective ("time", in ms) is a number, or the name
of a failure: `CompilationFailedConfig`, `RuntimeFailedConfig`, `InvalidConfig` (the launch was
refused), `ErrorConfig`. Configurations of the parameters' product that the cache lacks were left out
by the tuner's restrictions: they are not part of the space, so no search is offered them.

kagent has no kernel source for such a space, so it is one kernel without a file, labelled
`baseline`: its default configuration is the first of the product (in kernel_tuner's order) that ran,
and its knobs go to the specialist whose area their name says (block sizes: launch; tiles, padding,
caches: memory; reductions; everything else: compute).
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from sandbox import Knob, Outcome, Status, Timing

from .seams import Candidate

FAILURES = {  # kernel_tuner's failure names -> kagent's failure classes
    "CompilationFailedConfig": Status.compile_error,
    "RuntimeFailedConfig": Status.runtime_error,
    "InvalidConfig": Status.launch_error,
    "ErrorConfig": Status.runtime_error,
}
LABEL = "baseline"  # the one kernel of a foreign space: its default configuration is the run's baseline

# Which specialist tunes a parameter, by the words in its name (first match wins; the rest: compute).
SPECIALIST_WORDS = (
    ("reduction", ("reduce", "reduction", "split_k", "atomic")),
    ("launch", ("block_size", "threads", "warps", "num_blocks", "grid", "wpt", "block_per")),
    ("memory", ("tile", "padding", "read_only", "shmem", "smem", "cmem", "shared", "cache", "vector", "vec",
                "stride", "prefetch", "buffer", "ldg")),
)


class ForeignCacheError(ValueError):
    """A file that is not a kernel_tuner cache kagent can search (say which part is wrong)."""


def specialist_of(parameter: str) -> str:
    name = parameter.lower()
    for specialist, words in SPECIALIST_WORDS:
        if any(word in name for word in words):
            return specialist
    return "compute"


@dataclass
class ForeignCache:
    path: Path
    device: str
    kernel: str
    problem_size: object
    raw: dict  # the cache as read (trimmed of nothing): what kernel_tuner's simulation mode is given
    params: dict[str, list[str]]  # parameter -> its values as text, in the cache's order
    results: dict[tuple[str, ...], float | Status]  # configuration -> time in ms, or why it failed

    @property
    def size(self) -> int:
        return len(self.results)

    @property
    def product_size(self) -> int:
        return math.prod(len(v) for v in self.params.values())

    @property
    def failures(self) -> int:
        return sum(isinstance(r, Status) for r in self.results.values())

    @property
    def best_ms(self) -> float:
        return min(r for r in self.results.values() if isinstance(r, float))

    def default(self) -> tuple[str, ...]:
        """The first configuration of the product, in the parameters' order, that ran: where a user who
        lists each parameter's usual value first would start."""
        for values in itertools.product(*self.params.values()):
            if isinstance(self.results.get(values), float):
                return values
        raise ForeignCacheError(f"{self.path}: no configuration ran")  # load() refuses such a file first

    def candidate(self, values: tuple[str, ...]) -> Candidate:
        return Candidate.make(LABEL, dict(zip(self.params, values)))

    def values_of(self, candidate: Candidate) -> tuple[str, ...]:
        chosen = candidate.values
        return tuple(chosen.get(name, "") for name in self.params)

    def knobs(self) -> dict[str, Knob]:
        """The parameters as knobs, each with the default configuration's value first."""
        default = dict(zip(self.params, self.default()))
        return {name: Knob(name=name, specialist=specialist_of(name),
                           values=[default[name], *(v for v in values if v != default[name])])
                for name, values in self.params.items()}

    def outcome(self, candidate: Candidate) -> Outcome:
        """The recorded result as an outcome; a configuration the cache lacks is outside the space."""
        result = self.results.get(self.values_of(candidate)) if candidate.kernel == LABEL else None
        label = candidate.label()
        if result is None:
            return Outcome(status=Status.launch_error, candidate_id=label,
                           message=f"not in the recorded space of {self.path.name} (its tuner's restrictions "
                                   "left this configuration out)")
        if isinstance(result, Status):
            return Outcome(status=result, candidate_id=label,
                           message=f"{result.value} as recorded by kernel_tuner on {self.device}")
        timing = Timing(median_ms=result, p10_ms=result, p90_ms=result, min_ms=result, max_ms=result, repetitions=1)
        return Outcome(status=Status.ok, candidate_id=label, timing=timing,
                       message=f"as recorded by kernel_tuner on {self.device}")


def _text(value: object) -> str:
    """A parameter value as kernel_tuner writes it in a cache key (str() of the JSON value)."""
    return str(value)


def load_foreign(path: Path) -> ForeignCache:
    """Read a kernel_tuner cache file (`.json`, or `.json.gz`), or a kagent sweep recording as one
    (`kernel_tuner_form`). Raises ForeignCacheError when it is neither, when its objective is not a
    time, or when nothing in it ran."""
    try:
        data = path.read_bytes()
        raw = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    except (OSError, ValueError, EOFError) as exc:
        raise ForeignCacheError(f"cannot read {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ForeignCacheError(f"{path} is not a kernel_tuner cache (a JSON object)")
    if str(raw.get("format", "")).startswith("kagent-sweep/"):
        raw = kernel_tuner_form(raw, path)
    missing = [k for k in ("tune_params_keys", "tune_params", "cache") if k not in raw]
    if missing:
        raise ForeignCacheError(f"{path} is not a kernel_tuner cache: it has no {', '.join(missing)}")
    objective = raw.get("objective", "time")
    if objective != "time" or raw.get("objective_higher_is_better"):
        raise ForeignCacheError(f"{path} was tuned for {objective!r}; kagent replays caches tuned for time")
    keys = list(raw["tune_params_keys"])
    if sorted(keys) != sorted(raw["tune_params"]):
        raise ForeignCacheError(f"{path}: tune_params_keys {keys} do not name the tune_params")
    params = {k: [_text(v) for v in raw["tune_params"][k]] for k in keys}
    results: dict[tuple[str, ...], float | Status] = {}
    for key, entry in raw["cache"].items():
        values = tuple(key.split(","))
        if len(values) != len(keys) or any(v not in params[k] for k, v in zip(keys, values)):
            raise ForeignCacheError(f"{path}: entry {key!r} is not a configuration of {keys}")
        value = entry.get("time") if isinstance(entry, dict) else None
        if isinstance(value, str) and value in FAILURES:
            results[values] = FAILURES[value]
        elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
            results[values] = float(value)
        else:
            raise ForeignCacheError(f"{path}: entry {key!r} has no time and no known failure ({value!r})")
    if not any(isinstance(r, float) for r in results.values()):
        raise ForeignCacheError(f"{path}: no configuration in it ran")
    return ForeignCache(path=path, device=str(raw.get("device_name", "unknown device")),
                        kernel=str(raw.get("kernel_name", path.stem)), problem_size=raw.get("problem_size"),
                        raw=raw, params=params, results=results)


KAGENT_FAILURES = {"compile_error": "CompilationFailedConfig", "resource_error": "InvalidConfig",
                   "launch_error": "InvalidConfig"}  # any other failure ran and failed: RuntimeFailedConfig


def kernel_tuner_form(sweep: dict, path: Path) -> dict:
    """A kagent sweep recording (`kagent sweep`'s file) as a kernel_tuner cache of its variant: one
    configuration per recorded combination of the variant's knobs, its median time in ms or the failure
    (compile errors as `CompilationFailedConfig`; resource and launch errors, found before anything ran,
    as `InvalidConfig`; a kernel that ran and failed as `RuntimeFailedConfig`), and kagent's own verdict
    as `kagent_status`. Parameter values keep the order the sweep met them in, which is the kernel's
    declared order (its default first), so a search starts where kagent's does. The baseline, a
    different kernel, is left out. A sweep of several variants is refused: it is several spaces."""
    records = [r for r in sweep.get("records", []) if r.get("kernel") != LABEL]
    variants = sorted({r.get("kernel") for r in records})
    if len(variants) != 1:
        named = ", ".join(map(str, variants))
        raise ForeignCacheError(f"{path}: a kagent sweep of {len(variants)} variants ({named}); sweep one variant "
                                "(kagent sweep --variant) to search it as a space")
    keys = list(records[0]["knobs"])
    params: dict[str, list[str]] = {k: [] for k in keys}
    cache = {}
    for record in records:
        knobs, outcome = record["knobs"], record["outcome"]
        if list(knobs) != keys:
            raise ForeignCacheError(f"{path}: records name different knobs ({list(knobs)} and {keys})")
        for k in keys:
            if knobs[k] not in params[k]:
                params[k].append(knobs[k])
        timing, status = outcome.get("timing"), outcome.get("status")
        time = timing["median_ms"] if status == "ok" and timing else KAGENT_FAILURES.get(status, "RuntimeFailedConfig")
        cache[",".join(knobs[k] for k in keys)] = {**{k: _number(knobs[k]) for k in keys}, "time": time,
                                                   "kagent_status": status}
    gpu = sweep.get("gpu") or {}
    timed = next((r["outcome"]["sizes_checked"][-1] for r in records if r["outcome"].get("sizes_checked")), "")
    dims = [int(word.split("=")[1]) for word in timed.split() if word.split("=")[-1].isdigit()]  # N=32 C=64 ...
    return {"device_name": gpu.get("name", "unknown device"), "kernel_name": f"{sweep.get('task')}:{variants[0]}",
            "problem_size": dims or [1], "tune_params_keys": keys,
            "tune_params": {k: [_number(v) for v in params[k]] for k in keys}, "objective": "time", "cache": cache}


def _number(text: str) -> int | float | str:
    """A knob value as kernel_tuner would hold it: a number where it reads as one and writes back the same
    (cache keys are the values as written)."""
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value if _text(value) == text else text
    return text

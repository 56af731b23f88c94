"""Distil NVRTC/ptxas messages into short "do not ..." rules a model can follow next time.

Each pattern matches the compiler's real wording (see tests/llm/test_answers.py, which compiles
broken kernels to get it). A rule's key is stable (the same mistake gives the same key, with the
offending name appended where there is one), so callers can count how often a rule was hit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

PRELUDE_MACROS = "INFINITY, NAN, FLT_MAX, FLT_MIN, FLT_EPSILON, DBL_MAX, INT_MAX, INT_MIN and M_PI"
ALLOWED_HEADERS = "cuda_fp16.h, cuda_bf16.h and mma.h"


@dataclass(frozen=True)
class ErrorRule:
    """One distilled rule: a stable id (e.g. "shared-array-runtime-size") and its "do not ..." text."""

    key: str
    text: str


@dataclass(frozen=True)
class _Pattern:
    key: str
    regex: re.Pattern
    text: Callable[[re.Match], str]
    named: bool = False  # the first group names the culprit and goes into the key
    when: Callable[[re.Match], bool] | None = None  # a match counts only when this holds


def _pattern(
    key: str, regex: str, text: str | Callable[[re.Match], str], named: bool = False,
    when: Callable[[re.Match], bool] | None = None,
) -> _Pattern:
    render = text if callable(text) else (lambda _match, fixed=text: fixed)
    return _Pattern(key, re.compile(regex, re.MULTILINE), render, named, when)


def _undefined_text(match: re.Match) -> str:
    name = match.group(1)
    if re.fullmatch(r"u?int(8|16|32|64)_t|u?intptr_t", name):
        return (f"do not use {name}: NVRTC has no <stdint.h>; use int, unsigned int, long long or "
                "unsigned long long")
    if re.fullmatch(r"__half2?|half2?|__float2half\w*|__half2float|__hadd2?|__hmul2?|__hfma2?", name):
        return f"do not use {name} without #include <cuda_fp16.h> at the top of the file"
    if "bfloat16" in name or "bf16" in name:
        return f"do not use {name} without #include <cuda_bf16.h> at the top of the file"
    if re.fullmatch(r"__(shfl|shfl_up|shfl_down|shfl_xor|any|all|ballot)", name):
        return f"do not use {name}: use the warp-synchronous form {name}_sync(0xffffffffu, ...)"
    if name.startswith("cuda"):
        return (f"do not call the CUDA runtime ({name}) in the kernel file: it is device code only; "
                "kagent allocates the buffers and launches the entries")
    if name == "__syncthread":
        return "do not misspell the barrier: it is __syncthreads()"
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
        return (f"do not use {name} without defining it: declare a tunable as a knob (// @kagent knob {name} "
                f"[...]: values, with an #ifndef {name} default), #define it, or use the prelude's macros "
                f"({PRELUDE_MACROS}); NVRTC has no standard headers")
    return (f'do not use "{name}" where it is not declared: declare it before use, in the same or an '
            "enclosing scope (a missing `;` or brace on an earlier line can hide its declaration); NVRTC "
            "has no standard headers, so library names must be CUDA device functions")


def _spill_text(match: re.Match) -> str:
    amount = f" ({match.group(1)} bytes of spill stores)" if match.groups() else ""
    return (f"do not keep so many values live in each thread: registers spill to slow local memory{amount}; "
            "use smaller per-thread arrays or unroll factors, less work per thread, or allow more registers "
            "(a smaller BLOCK, or __launch_bounds__ with fewer blocks per SM)")


def _spills(match: re.Match) -> bool:
    return int(match.group(1)) + int(match.group(2)) > 0


def _shared_text(match: re.Match) -> str:
    used, limit = int(match.group(1), 0), int(match.group(2), 0)
    return (f"do not declare {used} bytes of static __shared__ memory (the limit is {limit} bytes per block): "
            "use smaller tiles, or dynamic shared memory (extern __shared__ float buf[]; sized by the "
            "`smem:` directive, up to 227 KiB on sm_90)")


PATTERNS: tuple[_Pattern, ...] = (
    _pattern("host-header-include", r'cannot open source file "([^"]+)"',
             lambda m: (f"do not #include <{m.group(1)}> (or a header that includes it): NVRTC has no C/C++ "
                        f"standard or host headers, only {ALLOWED_HEADERS} can be included; the prelude "
                        f"already defines {PRELUDE_MACROS}"), named=True),
    _pattern("shared-array-runtime-size", r"error: expression must have a constant value",
             "do not size a __shared__ array (or a register array, or a template argument) with a runtime "
             "value such as a kernel parameter; use a knob (compile-time macro), a constexpr, or dynamic "
             "shared memory (extern __shared__ float buf[]; with the `smem:` directive)"),
    _pattern("warpsize-not-constant", r'the value of variable "warpSize".* cannot be used as a constant',
             "do not use warpSize where a compile-time constant is needed: write 32"),
    _pattern("undefined-identifier", r'identifier "(\w+)" is undefined', _undefined_text, named=True),
    _pattern("host-function",
             r"calling a __host__ function.* from a __(?:global|device)__ function.* is not allowed"
             r"|A function explicitly marked as a __host__ function is not allowed in JIT mode",
             "do not write or call __host__ functions (no host code, no main): everything in the file is "
             "device code; mark helpers __device__ or leave them unannotated (-default-device)"),
    _pattern("shared-memory-too-large", r"uses too much shared data \((0x[0-9a-fA-F]+) bytes, (0x[0-9a-fA-F]+) max\)",
             _shared_text),
    _pattern("shared-memory-too-large", r"needs (\d+) bytes of shared memory .*limit (\d+)", _shared_text),
    _pattern("too-many-resources",
             r"too many resources requested for launch|LAUNCH_OUT_OF_RESOURCES|registers per thread at most \d+ fit",
             "do not launch a block whose threads need more registers than the SM has (BLOCK x registers "
             "per thread <= 65536): use a smaller BLOCK, or add __launch_bounds__(BLOCK) so the compiler "
             "caps registers per thread"),
    _pattern("global-void-return", r"a __global__ function must have a void return type",
             "do not return a value from a __global__ function: it must return void; write results into "
             "an output buffer"),
    _pattern("overload-no-match",
             r'no instance of (?:overloaded function|function template) "([\w:]+)" matches the argument list'
             r"(?:\s*argument types are: \(([^)\n]*)\))?",
             lambda m: (f"do not call {m.group(1)} with arguments of types ({m.group(2) or '...'}): no overload "
                        "takes them; convert the arguments explicitly (shuffle or load a vector one scalar "
                        "component at a time, cast to the parameter type)"), named=True),
    _pattern("overload-ambiguous",
             r'more than one instance of overloaded function "([\w:]+)" matches the argument list:'
             r"(?:[^\n]*\n(?:\s+function [^\n]*\n)*\s*argument types are: \(([^)\n]*)\))?",
             lambda m: (f"do not call {m.group(1)} with mixed argument types ({m.group(2) or '...'}): the call "
                        "is ambiguous; cast the arguments to one type, or use the float functions (sqrtf, "
                        "fmaxf, fminf, expf, ...)"), named=True),
    _pattern("missing-semicolon", r'error: expected a ";"',
             "do not leave out a `;` after a statement, a struct/class definition (`};`) or a declaration; "
             "check the line before the one reported and any macro used there"),
    _pattern("unbalanced-brackets", r'error: expected a "[)}\]]"|error: expected a declaration',
             "do not leave brackets unbalanced: every (, { and [ needs its partner, and an extra } closes "
             "the file scope early"),
    _pattern("not-a-template",
             r'"?([\w:]+)"? is not a template|(?:class|type|struct) "([\w:]+)" may not have a template argument list',
             lambda m: (f"do not write {m.group(1) or m.group(2)}<...>: it is not a template; declare it with "
                        "template <...> first, or drop the template arguments"), named=True),
    _pattern("register-spill", r"(\d+) bytes spill stores, (\d+) bytes spill loads", _spill_text, when=_spills),
    _pattern("register-spill", r"Registers are spilled to local memory", _spill_text),
    _pattern("static-assert", r'static assertion failed with "([^"\n]*)"',
             lambda m: (f'do not choose knob values or constants that fail the kernel\'s static_assert '
                        f'("{m.group(1)}"): keep every knob value list inside what the asserts allow')),
    _pattern("const-write", r"expression must be a modifiable lvalue",
             "do not write through a const pointer or to a const variable: inputs are read-only, write "
             "results only into output buffers"),
    _pattern("entry-linkage",
             r"linkage specification is not allowed|cannot determine which instance of function template",
             'do not make an entry a template or put extern "C" on a template: each `entry:` must name a '
             "plain (non-template) __global__ function; put templated code into __device__ helpers"),
    _pattern("shared-initializer", r"initializer not allowed for __shared__ variable",
             "do not initialise a __shared__ variable in its declaration: assign it in the kernel (one "
             "thread, or a loop over threadIdx.x), then __syncthreads()"),
    _pattern("redefinition", r'"(\w+)" has already been (?:defined|declared)',
             lambda m: f"do not define {m.group(1)} twice in the same scope: rename one or remove the duplicate",
             named=True),
    _pattern("macro-redefinition", r'incompatible redefinition of macro "(\w+)"',
             lambda m: (f"do not #define {m.group(1)} without an #ifndef {m.group(1)} guard: knobs arrive as "
                        f"-D {m.group(1)}=value and an unguarded #define silently replaces the tuned value"),
             named=True),
    _pattern("std-library", r'namespace "std" has no member "(\w+)"',
             lambda m: (f"do not use std::{m.group(1)}: NVRTC has no C++ standard library; use CUDA's device "
                        "functions (fmaxf, fminf, max, min, sqrtf, ...) or write the helper yourself"), named=True),
    _pattern("type-conversion",
             r'a value of type "([^"]+)" cannot be (?:used to initialize|assigned to) an entity of type "([^"]+)"'
             r'|no suitable constructor exists to convert from "([^"]+)" to "([^"]+)"',
             "do not convert between pointer or vector types implicitly: cast pointers with "
             "reinterpret_cast<const float4*>(p) (only on addresses aligned for the vector) and build "
             "vectors with make_float4(...)"),
    _pattern("no-member", r'(?:class|struct|union) "([^"]+)" has no member "(\w+)"',
             lambda m: (f"do not use .{m.group(2)} on {m.group(1)}: it has no such member (vector types "
                        "such as float4 have x, y, z, w)"), named=True),
    _pattern("argument-count", r"too (?:few|many) arguments in function call",
             "do not call a function with the wrong number of arguments: check its signature"),
    _pattern("unknown-namespace", r'name followed by "::" must be a class or namespace name',
             f"do not use a namespace whose header is missing: only {ALLOWED_HEADERS} (nvcuda::wmma) can "
             "be included; cooperative_groups and the C++ standard library are unavailable"),
)


def rules_from_compile_log(log: str) -> list[ErrorRule]:
    """The rules the log's messages call for, in the order they first appear, each key once."""
    log = log.replace("\r\n", "\n")
    found: list[tuple[int, ErrorRule]] = []
    seen: set[str] = set()
    for pattern in PATTERNS:
        for match in pattern.regex.finditer(log):
            if pattern.when is not None and not pattern.when(match):
                continue
            key = _key(pattern, match)
            if key not in seen:
                seen.add(key)
                found.append((match.start(), ErrorRule(key, pattern.text(match))))
    return [rule for _, rule in sorted(found, key=lambda item: item[0])]


def _key(pattern: _Pattern, match: re.Match) -> str:
    if not pattern.named:
        return pattern.key
    name = next((g for g in match.groups() if g), "")
    return f"{pattern.key}:{name}" if name else pattern.key

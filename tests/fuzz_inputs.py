"""Seeded generators of broken inputs for the fuzz test: task files, kernel files and LLM replies, each
a valid one damaged the way a careless or hostile user (or model) would damage it."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import yaml

from tests.llm.fake_server import Step, answer, empty, json_reply, raw, truncated
from tests.paths import LAYERNORM, ROOT

KERNEL_FILES = ROOT / "tasks" / "level1" / "layernorm"
NAIVE = (KERNEL_FILES / "naive.cu").read_text()
ROWBLOCK = (KERNEL_FILES / "rowblock.cu").read_text()

NASTY_VALUES: list[Any] = [
    None, "", "[/x]", "[rows] :x: root:x:0", "rows / (cols - 64)", "9**9**9", "1e200 ** 2", "(0 - 8) ** 0.5",
    -1, 0, 2**31, 2**64, 1.5, float("nan"), float("inf"), -0.0, [], {}, [[]], {"a": {"b": 1}}, "x" * 5000,
    "\u202e\u0000", "../../etc/passwd", "/dev/stdin", "reference.py:nope", True, "open('x')",
    "__import__('os')", "ceil_div(rows, 0)", "rows ** rows", ["rows", -3], "float17", "int32",
]
NASTY_EXPRESSIONS = [
    "1e200 ** 2", "9**9**9", "0", "-1", "rows / 0", "2**40", "ceil_div(rows, 0)", "BLOCK // 3 + 0.5",
    "max()", "rows if cols else", "1024 * 8 // 1MB", "nan", "rows * cols * 1e30", "(0 - 1) ** 0.5", "abs",
]
TASK_PATHS: list[tuple] = [
    ("dims", "rows"), ("dims", "cols"), ("inputs", "x", "shape", 0), ("inputs", "x", "shape"),
    ("inputs", "x", "dtype"), ("inputs", "x", "init", "kind"), ("inputs", "x", "init", "std"),
    ("outputs", "y", "atol"), ("outputs", "y", "rtol"), ("outputs", "y", "shape", 1), ("outputs", "y", "dtype"),
    ("outputs", "y", "exact"), ("cost", "bytes"), ("cost", "flops"), ("scalars", "eps", "value"),
    ("scalars", "eps", "dtype"), ("params", 0), ("params",), ("check_sizes", 0, "rows"), ("check_sizes",),
    ("baseline",), ("reference",), ("library",), ("variants", "rowblock"), ("index_dtype",), ("name",),
    ("family",), ("outputs",), ("inputs",), ("description",),
]
INCLUDES = ['#include "/etc/passwd"', '#include "../../reference.py"', "#include </dev/stdin>",
            "#include <stdio.h>", "#define H <cuda_fp16.h>\n#include H", '# /**/ include "/etc/hostname"',
            '#inc\\\nlude "/etc/hostname"', '%:include "/proc/self/environ"', "#include <cuda_fp16.h>"]
DIRECTIVES = ["// @kagent grid: {e}", "// @kagent block: {e}", "// @kagent smem: {e}", "// @kagent entry: nope",
              "// @kagent knob K [memory]: 1 1", "// @kagent knob K [nobody]: 1 2", "// @kagent knob K [launch]:",
              "// @kagent scratch s: {e} float32", "// @kagent scratch s: 4 float99", "// @kagent flags: -I/etc",
              "// @kagent flags: --include-path=/etc", "// @kagent params: x,,y", "// @kagent unknown: 1",
              "// @kagent block: 2048, 8", "// @kagent grid: 1, 2, 3, 4"]


def small_task_data() -> dict:
    """The layernorm task at small sizes (a quick reference probe), as YAML data."""
    data = yaml.safe_load(LAYERNORM.read_text())
    data["dims"] = {"rows": 64, "cols": 256}
    data["check_sizes"] = [{"rows": 3, "cols": 33}, {"rows": 5, "cols": 64}]
    data.pop("library", None)
    return data


def broken_task(rng: random.Random, base: dict) -> bytes:
    """A task file with one to three structural mutations, sometimes damaged as text too."""
    data = copy.deepcopy(base)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(TASK_PATHS)
        if rng.random() < 0.3:
            _drop(data, path)
        else:
            _set(data, path, copy.deepcopy(rng.choice(NASTY_VALUES)))
    text = yaml.safe_dump(data, allow_unicode=True).encode()
    roll = rng.random()
    if roll < 0.1:
        lines = text.split(b"\n")
        line = rng.randrange(len(lines))
        lines.insert(line, lines[line])  # a key given twice
        text = b"\n".join(lines)
    elif roll < 0.2:
        text = text[: rng.randrange(len(text))]  # cut short
    elif roll < 0.3:
        at = rng.randrange(len(text))
        text = text[:at] + bytes(rng.randrange(128, 256) for _ in range(3)) + text[at:]  # not UTF-8
    elif roll < 0.33:
        text = b"a: &a [" + b"*a, " * 50 + b"]\n" + text  # aliases
    return text


def broken_kernel(rng: random.Random) -> bytes:
    """A kernel file damaged in its directives, its includes, its bytes or its length."""
    source = rng.choice([NAIVE, ROWBLOCK])
    lines = source.split("\n")
    for _ in range(rng.randint(1, 3)):
        lines = lines or [""]
        roll = rng.random()
        at = rng.randrange(len(lines))
        if roll < 0.4:
            lines.insert(at, rng.choice(DIRECTIVES).format(e=rng.choice(NASTY_EXPRESSIONS)))
        elif roll < 0.6:
            lines.insert(rng.randrange(min(8, len(lines))), rng.choice(INCLUDES))
        elif roll < 0.75:
            del lines[at]
        elif roll < 0.9:
            line = lines[at]
            if line:
                cut = rng.randrange(len(line))
                lines[at] = line[:cut] + rng.choice(["", ";", "}", "{", "\\", "//", "/*", '"', "\t"]) + line[cut:]
        else:
            lines = lines[: at + 1]
    data = "\n".join(lines).encode()
    if data and rng.random() < 0.1:
        at = rng.randrange(len(data))
        data = data[:at] + b"\xff\xfe" + data[at:]
    return data


def broken_reply(rng: random.Random) -> Step:
    """What a model or a broken server may send: unusable code, broken edits, or a broken body."""
    roll = rng.random()
    kernel = broken_kernel(rng).decode(errors="replace")
    if roll < 0.3:
        return answer(f"Here is the kernel:\n```cuda\n{kernel}\n```\n")
    if roll < 0.45:
        search = rng.choice(ROWBLOCK.split("\n")[5:40] + ["no such line", "", "```"])
        return answer(f"<<<<<<< SEARCH\n{search}\n=======\n{rng.choice(NASTY_EXPRESSIONS)}\n>>>>>>> REPLACE\n")
    if roll < 0.5:
        return answer("<<<<<<< SEARCH\n" + ROWBLOCK[: rng.randrange(200)])  # no REPLACE line
    if roll < 0.55:
        return truncated(f"```cuda\n{kernel[: rng.randrange(1, 400)]}")
    if roll < 0.6:
        return answer(rng.choice(["", "[/x] :x: [rows]", "```\n```", "```cuda\n```", "\u0000" * 10, "x" * 20000]))
    if roll < 0.65:
        return empty()
    if roll < 0.75:
        return raw(rng.choice([b"\xff\xfe{}", b"{", b"null", b"[]", b'"text"', b"<html>", b"", b"\x00" * 64]))
    broken = {"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
    where = rng.choice(["content", "choices", "message", "usage", "finish_reason"])
    value = rng.choice([5, None, [], {}, "x", -1, [1, 2]])
    if where == "content":
        broken["choices"][0]["message"]["content"] = value
    elif where == "message":
        broken["choices"][0]["message"] = value
    elif where == "finish_reason":
        broken["choices"][0]["finish_reason"] = value
    elif where == "usage":
        broken["usage"] = {"prompt_tokens": value, "completion_tokens": "many"}
    else:
        broken["choices"] = value
    return json_reply(broken)


def _set(data: Any, path: tuple, value: Any) -> None:
    target = data
    for key in path[:-1]:
        if isinstance(target, dict):
            target = target.setdefault(key, {})
        elif isinstance(target, list) and isinstance(key, int) and key < len(target):
            target = target[key]
        else:
            return
    last = path[-1]
    if isinstance(target, dict) or (isinstance(target, list) and isinstance(last, int) and last < len(target)):
        target[last] = value


def _drop(data: Any, path: tuple) -> None:
    target = data
    for key in path[:-1]:
        if (isinstance(target, dict) and key in target) or (isinstance(target, list) and isinstance(key, int) and key < len(target)):
            target = target[key]
        else:
            return
    if isinstance(target, dict):
        target.pop(path[-1], None)
    elif isinstance(target, list) and isinstance(path[-1], int) and path[-1] < len(target):
        del target[path[-1]]


def as_json(value: Any) -> str:
    return json.dumps(value, default=str)

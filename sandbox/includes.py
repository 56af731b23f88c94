"""The include screen: which files a kernel may include, read here so that NVRTC never opens a named path."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .cpp_scan import PROBES, Inclusion, inclusions

# One plain relative name: no absolute path, no `.` or `..` component, no character a header name
# could hide a comment, an escape or a space in.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)*")
ALLOWED = ("kernels may #include the CUDA headers kagent ships (<cuda_fp16.h>, <cuda_bf16.h>, <mma.h>, ...) "
           "and files beside the task's kernel files, by a plain relative name (no absolute path, no '..')")


@dataclass
class Headers:
    """What a kernel includes, checked: its own files (handed to NVRTC from memory) and the shipped headers."""

    local: dict[str, str] = field(default_factory=dict)  # include name -> text
    shipped: dict[str, str] = field(default_factory=dict)  # path -> fingerprint (for the cache key)
    size: int = 0  # bytes of source plus local files


@dataclass
class Refusal:
    """A kernel the screen will not hand to NVRTC; `limit` is "source_size" when it is only too large."""

    message: str
    limit: str = ""


class _Refused(Exception):
    def __init__(self, message: str, limit: str = ""):
        super().__init__(message)
        self.limit = limit


def screen(
    source: str, filename: str, roots: Sequence[str | Path], shipped_dirs: Sequence[str], max_bytes: int,
    extra: str = "",
) -> Headers | Refusal:
    """Check every file `source` names, recursively through the local ones, before NVRTC sees any.

    `extra` is more text to check the same way (the knob definitions, which a macro could probe with)."""
    headers = Headers(size=len(source.encode()))
    problems: list[str] = []
    try:
        _within(headers.size, max_bytes, "the source")
        real_roots = [os.path.realpath(r) for r in roots]
        todo = [(filename, source), ("knob definitions", extra)]
        while todo:
            label, text = todo.pop()
            for inc in inclusions(text):
                try:
                    _check(inc, headers, todo, real_roots, shipped_dirs, max_bytes)
                except _Refused as refused:
                    if refused.limit:
                        raise
                    problems.append(f"{label}({inc.line}): error: {_written(inc)} refused: {refused}")
    except _Refused as refused:
        return Refusal(str(refused), refused.limit)
    if problems:
        return Refusal("\n".join([*problems, f"note: {ALLOWED}"]))
    return headers


def _check(inc: Inclusion, headers: Headers, todo: list, roots: Sequence[str], shipped_dirs: Sequence[str],
           max_bytes: int) -> None:
    """Refuse `inc`, or note what it includes. A safe name found nowhere passes: NVRTC can look for it
    only in memory, in the worker's empty folder and among the CUDA headers, and it may sit in an
    inactive `#if` branch (`#include <cstdio>` for host builds)."""
    if problem := _name_problem(inc):
        raise _Refused(problem)
    local = _read_local(inc.name, roots, max_bytes)
    if local is not None:
        if inc.name not in headers.local:
            headers.local[inc.name] = local
            headers.size += len(local.encode())
            _within(headers.size, max_bytes, "the source with its included files")
            todo.append((inc.name, local))
    elif path := _shipped_path(inc.name, shipped_dirs):
        headers.shipped.update(_closure(path, shipped_dirs))


def fingerprint(headers: Headers) -> dict[str, object]:
    """What the cache key needs of the included files: local contents and shipped versions."""
    local = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(headers.local.items())}
    return {"local": local, "shipped": sorted(headers.shipped.items())}


def _written(inc: Inclusion) -> str:
    name = {'"': f'"{inc.name}"', "<": f"<{inc.name}>"}.get(inc.form, inc.name)
    return f"{inc.kind}({name})" if inc.kind in PROBES else f"#{inc.kind} {name}"


def _name_problem(inc: Inclusion) -> str | None:
    if inc.kind in ("import", "embed", "include_next"):
        return f"#{inc.kind} is not allowed (use #include)"
    if not inc.form:
        return "the file name is computed (a macro) or malformed, so it cannot be checked; write it literally"
    if inc.name.startswith("/"):
        return "an absolute path"
    if any(part in (".", "..") for part in inc.name.split("/")):
        return "a '.' or '..' path component"
    if len(inc.name) > 255 or not _SAFE_NAME.fullmatch(inc.name):
        return "the name has characters other than letters, digits and _ . + - /"
    return None


def _within(size: int, max_bytes: int, what: str) -> None:
    if size > max_bytes:
        raise _Refused(
            f"error: compile limit: {what} is {size / 1024:.0f} KiB, over the limit of {max_bytes // 1024} KiB "
            "(set KAGENT_MAX_SOURCE_KB to allow more)", limit="source_size")


def _read_local(name: str, roots: Sequence[str], max_bytes: int) -> str | None:
    """The text of `name` in the first root holding it; None when no root does. Only a regular file
    whose real path stays inside its root is read (a symlink out of the folder is refused), without
    blocking (a FIFO is refused, not waited on) and no more than the size limit."""
    for root in roots:
        candidate = os.path.join(root, name)
        if not os.path.lexists(candidate):
            continue
        real = os.path.realpath(candidate)
        if os.path.commonpath([real, root]) != root:
            raise _Refused(f"it leads outside the kernel folder {root} (a symbolic link)")
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise _Refused(f"it cannot be read ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _Refused("it is not a regular file")
            data = file.read(max_bytes + 1)
        _within(len(data), max_bytes, f'"{name}"')
        return data.decode("utf-8", errors="replace")
    return None


def _shipped_path(name: str, dirs: Sequence[str], beside: str | None = None) -> str | None:
    """Where NVRTC finds a shipped header: beside the including header (quoted names), then the -I folders."""
    for folder in ([beside] if beside else []) + list(dirs):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return os.path.realpath(path)
    return None


_closures: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}  # the shipped headers do not change under us


def _closure(top: str, dirs: Sequence[str]) -> dict[str, str]:
    """Every shipped header `top` reaches (path -> size and mtime). A shipped header that includes a
    computed name is refused: the kernel could define that macro as any path on the host."""
    key = (top, tuple(dirs))
    if key not in _closures:
        seen: dict[str, str] = {}
        todo = [top]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            info = os.stat(path)
            seen[path] = f"{info.st_size}:{info.st_mtime_ns}"
            with open(path, encoding="utf-8", errors="replace") as file:
                for inc in inclusions(file.read()):
                    if inc.kind in PROBES:
                        continue
                    if not inc.form:
                        raise _Refused(f"the CUDA header {path} includes a computed name ({inc.name}, line "
                                       f"{inc.line}), which a kernel's macro could point anywhere")
                    beside = os.path.dirname(path) if inc.form == '"' else None
                    if found := _shipped_path(inc.name, dirs, beside):
                        todo.append(found)
        _closures[key] = seen
    return _closures[key]

"""A kernel file as the sandbox builds it: source, directives, chosen knob values, flags, include roots."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .compiler import CompileJob, CompileResult, compile_many
from .directives import DirectiveError, Directives
from .directives import parse as parse_directives

MAX_KERNEL_FILE_BYTES = 16 << 20  # read no bigger file (the compiler's own source cap is smaller still)
MAX_COMBINATIONS = 10_000  # commands that enumerate every knob combination refuse more (--max-combinations)


class KernelError(ValueError):
    """A kernel file that cannot be used (missing, unreadable, no entry, a bad knob value...)."""


@dataclass
class Kernel:
    path: Path
    source: str
    directives: Directives
    knobs: dict[str, str]
    flags: list[str] = field(default_factory=list)
    include_roots: tuple[Path, ...] = ()  # folders whose files it may #include: the task's kernel folders

    @property
    def entries(self) -> list[str]:
        return [e.name for e in self.directives.entries]

    def with_knobs(self, knobs: Mapping[str, str]) -> Kernel:
        """The same file with other knob values (defaults for those not given); no re-reading."""
        try:
            chosen = self.directives.resolve_knobs(knobs)
        except DirectiveError as exc:
            raise KernelError(f"{self.path}: {exc}") from None
        return Kernel(path=self.path, source=self.source, directives=self.directives, knobs=chosen,
                      flags=list(self.flags), include_roots=self.include_roots)

    @property
    def combinations(self) -> int:
        """How many knob combinations `knob_space` yields (counted, not enumerated)."""
        return math.prod(len(k.values) for k in self.directives.knobs.values())

    def knob_space(self) -> Iterator[dict[str, str]]:
        """Every combination of the declared knob values (one empty combination if none)."""
        knobs = list(self.directives.knobs.values())
        for values in itertools.product(*(k.values for k in knobs)):
            yield {k.name: v for k, v in zip(knobs, values)}

    def compile_job(self, arch: str) -> CompileJob:
        """What compile_many needs to build this kernel."""
        return CompileJob(source=self.source, entries=self.entries, knobs=self.knobs, flags=self.flags, arch=arch,
                          filename=self.path.name, include_roots=self.include_roots)

    def compile(self, arch: str) -> CompileResult:
        (result,) = compile_many([self.compile_job(arch)])
        return result


def load_kernel(path: str | Path, knobs: Mapping[str, str] | None = None, flags: list[str] | None = None,
                include_roots: tuple[Path, ...] | None = None) -> Kernel:
    """A kernel file with its directives read; `include_roots` (default: the file's own folder) are the
    folders it may include files from. Raises KernelError for a file that cannot be used."""
    path = Path(path)
    if not path.is_file():
        raise KernelError(f"{path}: no such kernel file")
    if path.stat().st_size > MAX_KERNEL_FILE_BYTES:
        raise KernelError(f"{path}: {path.stat().st_size:,} bytes; a kernel file may have at most "
                          f"{MAX_KERNEL_FILE_BYTES:,}")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KernelError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise KernelError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        directives = parse_directives(source)
    except DirectiveError as exc:
        raise KernelError(f"{path}: {exc}") from None
    own = [f for f in directives.flags if f not in (flags or [])]
    roots = include_roots if include_roots is not None else (path.parent.resolve(),)
    kernel = Kernel(path=path, source=source, directives=directives, knobs={}, flags=own + list(flags or []),
                    include_roots=roots)
    return kernel.with_knobs(knobs or {})

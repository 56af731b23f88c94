"""The repair corpus (tests/data/repair): broken copies of the suite's kernels, one bug each, with the
failure class each should get. Read by the CPU test here and the GPU test in tests/gpu."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.paths import ROOT

CORPUS = ROOT / "tests" / "data" / "repair"
FIELDS = ("task", "from", "expect", "bug", "fix")
_META = re.compile(r"^// @repair (\w+): (\S.*)$")


@dataclass
class Entry:
    path: Path
    meta: dict[str, str]
    kernel: str  # the file without its metadata lines: what a repair agent would be given

    @property
    def task_path(self) -> Path:
        return ROOT / self.meta["task"]

    @property
    def from_path(self) -> Path:
        return ROOT / self.meta["from"]

    @property
    def expect(self) -> str:
        return self.meta["expect"]


def read_entry(path: Path) -> Entry:
    """A corpus file: its first lines are the metadata, in FIELDS order; ValueError when they are not."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    meta: dict[str, str] = {}
    for number, field in enumerate(FIELDS):
        match = _META.match(lines[number].rstrip("\n")) if number < len(lines) else None
        if match is None or match.group(1) != field:
            raise ValueError(f"{path.name}: line {number + 1} should be '// @repair {field}: ...'")
        meta[field] = match.group(2).strip()
    return Entry(path=path, meta=meta, kernel="".join(lines[len(FIELDS):]))


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*.cu"))

"""A repair corpus: broken kernel files, each with its task, the working kernel it was copied from, the
failure class it should get, the bug and the fix, in five `// @repair FIELD: value` lines at its top
(tests/data/repair/README.md). The lines give the answer away: a session gets `Entry.kernel`, the
file without them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FIELDS = ("task", "from", "expect", "bug", "fix")
_META = re.compile(r"^// @repair (\w+): (\S.*)$")


class CorpusError(ValueError):
    """A corpus file without its metadata lines, or naming a task that is not there."""


@dataclass
class Entry:
    path: Path
    meta: dict[str, str]
    kernel: str  # the file without its metadata lines: what a repair agent is given
    root: Path  # the folder the metadata's paths are relative to

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def task_path(self) -> Path:
        return self.root / self.meta["task"]

    @property
    def from_path(self) -> Path:
        return self.root / self.meta["from"]

    @property
    def expect(self) -> str:
        return self.meta["expect"]


def read_entry(path: Path, root: Path | None = None) -> Entry:
    """A corpus file; its paths are relative to `root`, else to the nearest folder above the file (or
    the working directory) where its task file exists. CorpusError when the metadata is malformed."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    meta: dict[str, str] = {}
    for number, field in enumerate(FIELDS):
        match = _META.match(lines[number].rstrip("\n")) if number < len(lines) else None
        if match is None or match.group(1) != field:
            raise CorpusError(f"{path.name}: line {number + 1} should be '// @repair {field}: ...'")
        meta[field] = match.group(2).strip()
    if root is None:
        here = path.resolve().parent
        root = next((p for p in [*here.parents, Path.cwd()] if (p / meta["task"]).is_file()), Path.cwd())
    return Entry(path=path, meta=meta, kernel="".join(lines[len(FIELDS):]), root=root)


def corpus_files(folder: Path) -> list[Path]:
    """The corpus files of a folder (or the one file given)."""
    return [folder] if folder.is_file() else sorted(folder.glob("*.cu"))

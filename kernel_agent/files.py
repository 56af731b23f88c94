"""Files kagent writes that must never be seen half-written, and folders that must not overwrite a run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, then move it into place in one step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def new_folder(parent: Path, name: str) -> Path:
    """A new, writable folder `parent/name` (`name-2`, `name-3`... when taken). Raises OSError."""
    folder, suffix = parent / name, 1
    while folder.exists():
        suffix += 1
        folder = parent / f"{name}-{suffix}"
    folder.mkdir(parents=True)
    probe = folder / ".write-test"
    probe.write_text("")
    probe.unlink()
    return folder

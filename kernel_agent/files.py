"""Files kagent writes that must never be seen half-written, and folders that must not overwrite a run."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, then move it into place in one step. The file
    gets the permissions any new file gets (the umask's), not a private temporary file's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def new_folder(parent: Path, name: str) -> Path:
    """A new, writable folder `parent/name` (`name-2`, `name-3`... when taken). Raises OSError."""
    parent.mkdir(parents=True, exist_ok=True)
    folder, suffix = parent / name, 1
    while True:
        try:
            folder.mkdir()  # atomic: of two runs that want the same name, one gets it, the other the next
            break
        except FileExistsError:
            suffix += 1
            folder = parent / f"{name}-{suffix}"
    probe = folder / ".write-test"
    probe.write_text("")
    probe.unlink()
    return folder

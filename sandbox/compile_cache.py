"""The on-disk compile cache: a JSON record and a cubin per key; a folder that cannot be written means no cache."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import warnings
from pathlib import Path

_warned: set[str] = set()
_scratch: Path | None = None


def cache_dir() -> Path:
    root = Path(os.environ.get("KAGENT_CACHE_DIR", Path.home() / ".cache" / "kagent"))
    return root / "cubins"


def load(key: str) -> tuple[str, Path] | None:
    """The stored record of `key` and where its cubin would be; None when there is none to read."""
    folder = cache_dir()
    try:
        return (folder / f"{key}.json").read_text(), folder / f"{key}.cubin"
    except (OSError, UnicodeDecodeError):
        return None


def store_cubin(key: str, cubin: bytes) -> str:
    """Where the cubin now is: in the cache, or (when the cache cannot be written) a private folder
    that lives as long as this process."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return str(_atomic_write(folder / f"{key}.cubin", cubin))
    except OSError as exc:
        _warn_once(folder, exc)
    return str(_atomic_write(_scratch_dir() / f"{key}.cubin", cubin))


def store_record(key: str, record: str) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _atomic_write(folder / f"{key}.json", record.encode())
    except OSError as exc:
        _warn_once(folder, exc)


def _warn_once(folder: Path, exc: OSError) -> None:
    if str(folder) not in _warned:
        _warned.add(str(folder))
        warnings.warn(f"the compile cache {folder} cannot be written ({exc.strerror or exc}): compiling without "
                      "a cache; set KAGENT_CACHE_DIR to a writable folder", RuntimeWarning, stacklevel=3)


def _scratch_dir() -> Path:
    global _scratch
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="kagent-cubins-"))
        atexit.register(shutil.rmtree, _scratch, ignore_errors=True)
    return _scratch


def _atomic_write(path: Path, data: bytes) -> Path:
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
        try:
            tmp.write(data)
        except OSError:
            os.unlink(tmp.name)
            raise
    os.replace(tmp.name, path)
    return path

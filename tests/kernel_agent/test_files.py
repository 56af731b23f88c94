"""Atomic writes: whole files only, with the permissions any new file gets; run folders never reused."""

import os
import stat

import pytest

from kernel_agent.files import new_folder, write_atomic


def test_an_atomic_write_replaces_the_whole_file_and_leaves_no_temporary_behind(tmp_path):
    path = tmp_path / "sub" / "report.md"
    write_atomic(path, b"first")
    write_atomic(path, b"second")
    assert path.read_bytes() == b"second"
    assert [p.name for p in path.parent.iterdir()] == ["report.md"]


def test_an_atomic_write_has_the_permissions_of_a_plain_new_file(tmp_path):
    """A shared results folder must stay readable: not the 0600 of a private temporary file."""
    previous = os.umask(0o022)
    try:
        (tmp_path / "plain.txt").write_bytes(b"x")
        write_atomic(tmp_path / "atomic.txt", b"x")
    finally:
        os.umask(previous)
    mode = lambda name: stat.S_IMODE((tmp_path / name).stat().st_mode)  # noqa: E731
    assert mode("atomic.txt") == mode("plain.txt") == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    write_atomic(path, b"old")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, b"new")
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_a_new_folder_never_reuses_a_taken_name(tmp_path):
    first, second = new_folder(tmp_path, "run"), new_folder(tmp_path, "run")
    assert (first.name, second.name) == ("run", "run-2") and first.is_dir() and second.is_dir()

"""The repair corpus is well formed and its compile-side classes hold on the CPU: every file names an
existing task and the task's kernel it was copied from, differs from that kernel by a few lines (one
bug), and builds as its expected class says (`compile_error`, `launch_error` and `resource_error` are
found without a GPU, by the project's own compile and launch planning; every other file must compile
and plan at every size). The runtime classes are checked on the GPU by tests/gpu/test_repair_corpus.py."""

from __future__ import annotations

import difflib
import importlib.util
import re
from collections import defaultdict

import pytest

from kernel_agent.task import load_task
from sandbox import Evaluator, Status, load_kernel
from tests.repair.corpus import CORPUS, corpus_files, read_entry

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
FILES = corpus_files()
BUG_CLASSES = {s.value for s in Status} - {Status.ok.value, Status.not_run.value}
CPU_CLASSES = {Status.compile_error.value, Status.launch_error.value, Status.resource_error.value}
MUST_APPEAR = {"compile_error", "launch_error", "wrong_result", "runtime_error", "timeout"}
MAX_TOUCHED_LINES = 12  # lines removed plus lines added against the `from` kernel
ARCH = "sm_90"  # the H200's: what the GPU test will run on


def test_the_corpus_is_large_and_varied():
    entries = [read_entry(p) for p in FILES]
    assert len(entries) >= 26, f"only {len(entries)} corpus files"
    tasks = {e.meta["task"] for e in entries}
    assert len(tasks) >= 10, f"only {len(tasks)} tasks: {sorted(tasks)}"
    missing = MUST_APPEAR - {e.expect for e in entries}
    assert not missing, f"no corpus file expects {sorted(missing)}"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_metadata_names_a_task_its_kernel_and_a_failure_class(path):
    entry = read_entry(path)
    assert path.stem.startswith(entry.task_path.stem + "__"), "the file is named TASK__BUG.cu"
    assert entry.task_path.is_file(), f"no task file {entry.meta['task']}"
    task = load_task(entry.task_path)
    assert entry.from_path.resolve() in {p.resolve() for p in task.kernel_paths().values()}, (
        f"{entry.meta['from']} is none of {task.name}'s kernels")
    assert entry.expect in BUG_CLASSES, f"expect: {entry.expect!r} is not one of {sorted(BUG_CLASSES)}"
    assert entry.meta["bug"] and entry.meta["fix"]
    assert "@repair" not in entry.kernel, "metadata lines only at the top"


def test_the_readme_table_lists_every_file_with_its_class():
    rows = re.findall(r"^\| `([^`]+\.cu)` \| (\w+) \| (\w+) \|", (CORPUS / "README.md").read_text(), re.M)
    table = {name: (task, expect) for name, task, expect in rows}
    entries = {p.name: read_entry(p) for p in FILES}
    assert set(table) == set(entries), f"README lists {sorted(set(table) ^ set(entries))} wrongly"
    for name, entry in entries.items():
        assert table[name] == (entry.task_path.stem, entry.expect), name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_kernel_is_its_source_with_one_small_change(path):
    entry = read_entry(path)
    original = entry.from_path.read_text(encoding="utf-8").splitlines()
    broken = entry.kernel.splitlines()
    changed = [line for line in difflib.unified_diff(original, broken, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed, "identical to its source: no bug"
    assert len(changed) <= MAX_TOUCHED_LINES, "\n".join(["more than one small change:", *changed])


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-python)")
def test_the_compile_side_classes_hold_without_a_gpu():
    """One build per task, every file at once (compiles on every core): compile errors are real NVRTC
    errors, launch and resource errors come from planning every size and from ptxas's figures; every
    file expected to fail only at run time compiles and plans (`ok` before it is run)."""
    by_task = defaultdict(list)
    for path in FILES:
        entry = read_entry(path)
        by_task[entry.meta["task"]].append(entry)
    wrong = []
    for entries in by_task.values():
        task = load_task(entries[0].task_path)
        # as `kagent check` loads a file: it may include from its own folder and the task's kernel folders
        kernels = [load_kernel(e.path, include_roots=(e.path.parent.resolve(), *task.kernel_folders()))
                   for e in entries]
        for entry, built in zip(entries, Evaluator(task.problem(), None, ARCH).build(kernels)):
            got = built.outcome.status.value
            want = entry.expect if entry.expect in CPU_CLASSES else Status.ok.value
            if got != want:
                wrong.append(f"{entry.path.name}: expected {want}, got {got}: {built.outcome.message}")
    assert not wrong, "\n".join(wrong)

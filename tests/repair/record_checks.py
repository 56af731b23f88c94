"""Record H200 checks of repair-corpus kernels and of the versions a session makes of their fixes, as
test data for the CPU test of the terminal session (tests/data/repair_checks/h200.jsonl). On a GPU:

    python3 -m tests.repair.record_checks OUT layernorm__unbiased_variance add__off_by_one_bound
"""

from __future__ import annotations

import sys
from pathlib import Path

from kernel_agent.check import size_labels
from kernel_agent.repair.auto import check_current
from kernel_agent.repair.checks import Checker, SharedGpu
from kernel_agent.repair.session import RepairSession
from tests.repair.repl_driver import entry, fixed_source


def record(out: Path, names: list[str]) -> None:
    gpu = SharedGpu(0)
    lines: list[str] = []
    try:
        for name in names:
            e = entry(name)
            folder = out / name
            folder.mkdir(parents=True)
            (folder / "given.cu").write_text(e.kernel)
            session = RepairSession.start(folder, e.task_path, folder / "given.cu")
            checker = Checker(session.task, session.recorded, gpu)
            for size in (None, size_labels(session.task)[1]):
                outcome, _ = check_current(session, checker, size)
                print(name, "broken", size or "every size", outcome.status.value, outcome.message)
            session.add(fixed_source(e), "fix")
            outcome, _ = check_current(session, checker)
            print(name, "fixed", outcome.status.value, outcome.message)
            lines += (folder / "checks.jsonl").read_text().splitlines()
    finally:
        gpu.close()
    (out / "h200.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":  # the GPU worker is spawned: the module must not run again when imported
    record(Path(sys.argv[1]), sys.argv[2:])

"""Compare a GPU `kagent measure` log with the CPU runs it measured, one task at a time. A round's
measure_runs.sh can be cut off before agreement.py runs. This script still reads the per-run
"failures:" line of each measured run. It compares that line with the same run's failure counts on the
CPU emulator (attempts.compile-only.jsonl). When the two match class for class, no kernel the emulator
passed failed on the GPU.

    python3 tests/data/llm/emulated_loop/failure_counts.py MEASURE.log RESULTS
"""

from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path


def main(log: Path, results: Path) -> None:
    text = log.read_text()
    runs = re.findall(r"failures: (.*?)\nwrote (\S+?)/attempts\.jsonl", text, re.S)
    same = 0
    for failures, run in runs:
        gpu = {} if failures.strip() == "none" else {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", failures)}
        folder = results / Path(run).relative_to(Path(run).parts[0], Path(run).parts[1])
        journal = folder / "attempts.compile-only.jsonl"
        if not journal.exists():
            journal = folder / "attempts.jsonl"
        cpu: collections.Counter[str] = collections.Counter()
        for line in journal.read_text().splitlines():
            status = json.loads(line).get("status")
            if status not in ("ok", "not_run", None):
                cpu[status] += 1
        agree = dict(cpu) == gpu
        same += agree
        print(f"{folder.parent.name}: emulator {dict(cpu) or 'none'}, GPU {gpu or 'none'}"
              f"{'' if agree else '  <- differ'}")
    print(f"{same} of {len(runs)} measured runs: the same failures on the GPU as on the emulator")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

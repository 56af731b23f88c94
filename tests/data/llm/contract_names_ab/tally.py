"""Per arm: answers, read into a kernel, compiled, correct on the CPU emulator; and the tasks with a
correct kernel. `python3 tests/data/llm/contract_names_ab/tally.py results.jsonl`"""
import json
import sys
from collections import defaultdict

rows = [json.loads(line) for line in open(sys.argv[1])]
arms: dict = defaultdict(lambda: defaultdict(int))
tasks: dict = defaultdict(set)
for r in rows:
    a = arms[r["arm"]]
    a["answers"] += 1
    a["kernels"] += r["verdict"] != "unparsed"
    a["compiled"] += r["verdict"] not in ("unparsed", "compile_error")
    correct = r["verdict"] == "not_run" and r["message"].startswith("correct")
    a["correct"] += correct
    if correct:
        tasks[r["arm"]].add(r["task"])
for arm, a in arms.items():
    n = a["answers"]
    print(f"{arm}: {n} answers, {a['kernels']} kernels, {a['compiled']} compiled ({a['compiled'] / n:.0%}), "
          f"{a['correct']} correct on the emulator; tasks with a correct kernel: {len(tasks[arm])} "
          f"({', '.join(sorted(tasks[arm]))})")

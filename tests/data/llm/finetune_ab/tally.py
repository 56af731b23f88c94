"""The table of the fine-tuning experiment: per arm (base, tuned) and split (held-out, train), the first port
answers, read, compiled, and, from the H200 bench runs of their kernels (measured.json, copied from the
bench's output), correct and faster than the naive kernel and than torch.
`python3 tests/data/llm/finetune_ab/tally.py answers.jsonl measured.json`"""
import json, sys
from collections import defaultdict
from pathlib import Path

HELD = {"avgpool2d", "conv1d", "kl_div_loss", "log_softmax", "mean_dim"}
answers = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()]
measured = {}
for run, tasks in json.loads(Path(sys.argv[2]).read_text()).items():
    if run.startswith("_"):
        continue
    arm, seed = run.rsplit("_s", 1)
    for task, (status, over_naive, over_torch) in tasks.items():
        measured[(arm, int(seed), task)] = {"status": status, "naive": over_naive, "torch": over_torch}
rows = defaultdict(lambda: defaultdict(int))
for a in answers:
    key = (a["arm"], "held-out" if a["task"] in HELD else "train")
    row = rows[key]
    row["answers"] += 1
    row["read"] += a["verdict"] != "unparsed"
    row["compiled"] += a["verdict"] in ("not_run", "ok")
    m = measured.get((a["arm"], a["seed"], a["task"]))
    if m and m["status"] == "ok":
        row["correct"] += 1
        row["faster_naive"] += m["naive"] > 1
        row["faster_torch"] += m["torch"] > 1
cols = ["answers", "read", "compiled", "correct", "faster_naive", "faster_torch"]
print("| arm | tasks | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for (arm, split), row in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"| {arm} | {split} | " + " | ".join(str(row[c]) for c in cols) + " |")
print()
for a in sorted(answers, key=lambda a: (a["task"], a["seed"], a["arm"])):
    m = measured.get((a["arm"], a["seed"], a["task"]))
    gpu = m["status"] if m else "-"
    print(f"{a['task']:22} s{a['seed']} {a['arm']:5} {a['verdict']:14} {gpu:14} {a['message'][:90]!r}")

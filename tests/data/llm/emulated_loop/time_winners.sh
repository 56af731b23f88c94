#!/usr/bin/env bash
# On a GPU machine, after measure_runs.sh: each model kernel correct on the GPU (ANSWERS.jsonl, written by
# tally.py) checked again and timed beside the naive kernel and the task's library function (torch), one
# JSON line each. From the repository root:
#   tests/data/llm/emulated_loop/time_winners.sh RESULTS ANSWERS.jsonl > WINNERS.jsonl
set -uo pipefail
results=$1; answers=$2
python3 - "$answers" <<'PY' | while read -r task kernel; do
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    if (row.get("gpu") or {}).get("status") == "ok":
        print(row["task"], row["kernel"])
PY
  for file in "$results/$task"/*/llm_kernels/"$kernel.cu"; do
    python3 -m kernel_agent check "tasks/naive/$task.yaml" "$file" --json 2>/dev/null | python3 -c "
import json, sys
o = json.load(sys.stdin)
print(json.dumps({'task': '$task', 'kernel': '$kernel', 'status': o['status'], 'speedup': o.get('speedup'),
                  'library_speedup': o.get('library_speedup'), 'message': o.get('message')}))"
  done
done

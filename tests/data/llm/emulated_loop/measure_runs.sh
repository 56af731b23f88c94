#!/usr/bin/env bash
# On a GPU machine: measure every optimize run under RESULTS (kagent measure), check the emulator's
# verdicts on the GPU (agreement.py), then tally (tally.py). From the repository root:
#   tests/data/llm/emulated_loop/measure_runs.sh RESULTS AGREEMENT.jsonl ANSWERS.jsonl
set -uo pipefail
results=$1; agreement=$2; answers=$3
here=tests/data/llm/emulated_loop
runs=()
for f in "$results"/*/*/run.json; do runs+=("$(dirname "$f")"); done  # run folders only (not policies/)
for run in "${runs[@]}"; do
  python3 -m kernel_agent measure "$run" --budget-ms 50 2>&1 | tail -4
done
python3 "$here/agreement.py" "$agreement" "${runs[@]}" 2>&1 | tail -40
python3 "$here/tally.py" "$results" "$answers"

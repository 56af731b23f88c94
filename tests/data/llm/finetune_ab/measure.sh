#!/usr/bin/env bash
# On the H200: every compiled first answer of the experiment, benched as a ready-made kernel beside the naive
# kernel and torch. kernels/ARM_sSEED/TASK.cu -> $OUT/ARM_sSEED/RUN/tasks/TASK.json (tally.py reads them).
set -u
for d in tests/data/llm/finetune_ab/kernels/*/; do
  name=$(basename "$d")
  tasks=$(for f in "$d"*.cu; do echo "tasks/naive/$(basename "$f" .cu).yaml"; done)
  python3 -m kernel_agent bench $tasks --kernels "$d" --budget-ms 20 --out "$OUT/$name"
done

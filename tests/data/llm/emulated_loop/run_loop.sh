#!/usr/bin/env bash
# The local model's optimize runs on naive-only tasks, compile-only with the CPU emulator (README.md).
#   OUT=DIR [BUDGET=8] [TL=180] [SEED=0] tests/data/llm/emulated_loop/run_loop.sh TASK...   (a llama.cpp server on 127.0.0.1:8765)
cd "$(dirname "$0")/../../../.."
for t in "$@"; do
  echo "=== $t $(date +%T)"
  timeout 1500 python3 -m kernel_agent optimize "tasks/naive/$t.yaml" --executor compile-only --emulate --llm qwen \
    --llm-base-url http://127.0.0.1:8765/v1 --seed ${SEED:-0} --no-warm-start --llm-grammar llama.cpp --budget ${BUDGET:-8} \
    --time-limit ${TL:-180} --out "${OUT:-results}" 2>&1 | tail -25
done
echo "=== end $(date +%T)"

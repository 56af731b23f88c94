"""`kagent optimize`: a planner and four specialists search a task's kernels and knobs.

Modules: space (candidates), generic (edits every kernel can take), executors (GPU or replayed
sweep), rewards (rank rewards), knowledge (failure rules), policy (learned preferences),
specialists, planner, strategies/ (agent, random, exhaustive, evolutionary), store (SQLite +
journal), runner (the loop), report (run outputs), session (setting a run up, resuming it),
replay_bench (`kagent replay-bench`: the strategies compared on recorded sweeps).
"""

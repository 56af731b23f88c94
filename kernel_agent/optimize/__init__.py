"""`kagent optimize`: a planner and four specialists search a task's kernels and knobs.

The modules are listed in this folder's README.md; the records they share are in `kernel_agent/seams.py`.
"""

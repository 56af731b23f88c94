"""`kagent bench`: one result per task of a suite, KernelBench-style metrics, and the report files."""

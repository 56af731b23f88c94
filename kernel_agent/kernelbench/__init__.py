"""`kagent import kernelbench`: KernelBench problem files (a PyTorch `Model`, `get_inputs`,
`get_init_inputs`, size constants) as kagent tasks. Needs PyTorch on the importing machine.

Modules: problem (executing a problem at a setting of its constants, on the meta device or for real),
shapes (naming tensor axes by the constants), analyze (a problem as a task's parts, or why not),
write (the task files), runtime (what an imported task's reference calls), importer (a folder of them).
"""

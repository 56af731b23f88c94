"""kagent's agent side: tasks, kernels bound to tasks, checks, and the command line."""

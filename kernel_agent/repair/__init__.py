"""Repair sessions: one broken kernel checked, explained, fixed by a person or a model, version by
version (`kagent repair`), and the repair benchmark over a corpus of broken kernels (`kagent repair-bench`)."""

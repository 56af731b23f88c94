"""One GPU worker shared by the GPU tests (as a user's session would share it)."""

import pytest


@pytest.fixture(scope="session")
def worker():
    from sandbox import GpuWorker

    with GpuWorker(0) as w:
        w.start()
        yield w

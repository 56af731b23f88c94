"""The sandbox's own device kernels: the input checksum that tells a modified input, the byte comparison
behind every timed launch's check, and the poison an output holds before a launch."""

import numpy as np
import pytest

from sandbox.problem import Buffer

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


@pytest.mark.parametrize("nbytes", [3, 4, 4099, 1 << 26])  # tail only, one word, words and a tail, 64 MiB
def test_checksum_tells_any_changed_byte(nbytes):
    from sandbox.gpu import checksum

    data = cp.asarray(np.random.default_rng(0).integers(0, 256, nbytes, dtype=np.uint8))
    before = checksum(data)
    assert checksum(data.copy()) == before  # the content, not the allocation
    for where in {0, nbytes // 2, nbytes - 1}:
        changed = data.copy()
        changed[where] ^= 1
        assert checksum(changed) != before, where


def test_checksum_depends_on_where_each_word_is():
    from sandbox.gpu import checksum

    words = cp.arange(1024, dtype=cp.uint32)
    swapped = words.copy()
    swapped[[3, 700]] = swapped[[700, 3]]
    assert checksum(words) != checksum(swapped)


def test_same_bits_compares_every_byte():
    from sandbox.gpu import same_bits

    a = cp.asarray(np.random.default_rng(1).standard_normal(1_000_003).astype(np.float32))
    assert same_bits(a, a.copy())
    for where in (0, 500_000, 1_000_002):
        b = a.copy()
        b.view(cp.uint32)[where] ^= 1
        assert not same_bits(a, b)
    odd = cp.arange(7, dtype=cp.uint8)
    other = odd.copy()
    other[6] = 0
    assert not same_bits(odd, other)


def test_a_modified_input_is_told_and_the_poison_is_written_on_the_device():
    from sandbox.gpu import GuardedBuffer

    x = GuardedBuffer(Buffer(name="x", role="input", dtype="float16", shape=[5, 7]))
    x.upload(np.ones(35, dtype=np.float16))
    assert not x.modified()
    x.view[34] = 2
    assert x.modified()
    y = GuardedBuffer(Buffer(name="y", role="output", dtype="float32", shape=[1000]))
    y.reset()
    assert bool(cp.isnan(y.view).all())
    n = GuardedBuffer(Buffer(name="n", role="output", dtype="int64", shape=[9]))
    n.reset()
    assert (n.view.get() == 0x5A5A5A5A5A5A5A5B).all()
    z = GuardedBuffer(Buffer(name="z", role="output", dtype="bfloat16", shape=[3], zeroed=True))
    z.reset()
    assert (z.view.get() == 0).all()

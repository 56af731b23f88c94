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


def _tricky(dtype: str, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Kernel-like outputs (storage form) and a float64 reference with the cases a rule gets wrong:
    NaN on either side, infinities, -0.0, and errors on either side of the tolerance by one ulp."""
    from sandbox.dtypes import lookup, to_storage, to_values

    ref = rng.standard_normal(n) * 10
    ref[:12] = [np.nan, np.nan, np.inf, -np.inf, np.inf, 0.0, -0.0, 1.0, 1.0, 1.0, 2.0, -3.0]
    got_values = ref.copy()
    got_values[:12] = [np.nan, 1.0, np.inf, np.inf, np.nan, -0.0, 0.0, np.nan, 1.0 + 1e-3, 1.0 - 2e-3, 2.0, 0.0]
    flip = rng.random(n) < 0.01
    got_values[flip] += rng.standard_normal(int(flip.sum())) * 1e-2
    got_values[100:130] = np.abs(got_values[100:130])
    got = to_storage(got_values, lookup(dtype))
    # References on the edge of atol = rtol = 1e-3 from the stored values, r - g = 1e-3 + 1e-3 * r, and
    # one ulp to either side: a fused multiply-add or another order of operations rounds these otherwise.
    stored = to_values(got[100:130], lookup(dtype)).astype(np.float64)
    ref[100:130] = (stored + 1e-3) / (1 - 1e-3)
    ref[110:120] = np.nextafter(ref[110:120], np.inf)
    ref[120:130] = np.nextafter(ref[120:130], -np.inf)
    return got, ref


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("n", [1000, (1 << 20) + 3])
def test_the_device_judges_an_output_exactly_as_the_host_does(dtype, n):
    from sandbox.compare import _count_bad
    from sandbox.gpu import bad_on_device

    rng = np.random.default_rng(5)
    got, ref = _tricky(dtype, n, rng)
    for atol, rtol in [(1e-3, 1e-3), (0.0, 0.0), (1e-5, 0.0)]:
        buffer = Buffer(name="y", role="output", dtype=dtype, shape=[n], atol=atol, rtol=rtol)
        for expected in (ref, ref.astype(np.float32)):
            host = _count_bad(buffer, got, expected)
            assert host > 0  # the tricky head alone has wrong elements
            assert bad_on_device(buffer, cp.asarray(got), expected) == host, (atol, rtol, expected.dtype)
        assert bad_on_device(buffer, cp.asarray(got), to_right(got, dtype)) == 0


def to_right(got: np.ndarray, dtype: str) -> np.ndarray:
    from sandbox.dtypes import lookup, to_values

    return to_values(got, lookup(dtype)).astype(np.float64)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool", "float32"])
def test_exact_outputs_are_judged_on_the_device_by_value_as_on_the_host(dtype):
    from sandbox.compare import _count_bad
    from sandbox.dtypes import lookup
    from sandbox.gpu import bad_on_device

    storage = lookup(dtype).storage
    rng = np.random.default_rng(6)
    expected = rng.integers(0, 2 if dtype == "bool" else 100, 5000).astype(storage)
    got = expected.copy()
    got[[3, 4000]] = 1 - got[[3, 4000]]
    if dtype == "float32":  # NaN is never equal to NaN, and -0.0 equals 0.0, by value
        expected[[10, 11]], got[[10, 11]] = [np.nan, 0.0], [np.nan, -0.0]
    buffer = Buffer(name="y", role="output", dtype=dtype, shape=[5000], exact=True)
    host = _count_bad(buffer, got, expected)
    assert host == (3 if dtype == "float32" else 2)
    assert bad_on_device(buffer, cp.asarray(got), expected) == host
    assert bad_on_device(buffer, cp.asarray(expected), expected) == (1 if dtype == "float32" else 0)


def test_the_device_leaves_what_it_cannot_judge_to_the_host():
    from sandbox.gpu import bad_on_device

    buffer = Buffer(name="y", role="output", dtype="float32", shape=[4], atol=1e-3)
    assert bad_on_device(buffer, cp.zeros(4, cp.float32), np.zeros(4, np.complex64)) is None
    assert bad_on_device(buffer, cp.zeros(4, cp.float32), np.zeros(5)) is None

"""Host-side pieces of the checks: inputs, poison, comparison, bf16, timing statistics, log trimming."""

import numpy as np

from sandbox.compare import CHUNK, compare, differing, same_bytes
from sandbox.dtypes import DTYPES, from_bf16_bits, to_bf16_bits
from sandbox.inputs import draw, poison_word
from sandbox.outcome import trim_log
from sandbox.problem import Buffer, Init
from sandbox.timing import repetitions, summarise


def out(**kw):
    return Buffer(**{"name": "y", "role": "output", "dtype": "float32", "shape": [2, 3],
                     "atol": 1e-3, "rtol": 1e-3, **kw})


def test_inputs_are_seeded_and_shaped():
    spec = Buffer(name="x", role="input", dtype="float16", shape=[4, 5], init=Init(kind="normal"))
    a, b = draw(spec, np.random.default_rng(1)), draw(spec, np.random.default_rng(1))
    assert a.dtype == np.float16 and a.shape == (4, 5) and np.array_equal(a, b)
    ints = draw(Buffer(name="i", role="input", dtype="int32", shape=[100], init=Init(kind="randint", low=0, high=3)),
                np.random.default_rng(0))
    assert set(np.unique(ints)) == {0, 1, 2}


def test_large_inputs_are_drawn_in_seeded_pieces_whatever_the_cores(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    import sandbox.inputs as inputs

    monkeypatch.setattr(inputs, "PIECE", 1000)
    spec = Buffer(name="x", role="input", dtype="float32", shape=[7, 1001], init=Init(kind="normal"))
    many = draw(spec, np.random.default_rng(5))
    monkeypatch.setattr(inputs, "_POOL", ThreadPoolExecutor(max_workers=1))
    one = draw(spec, np.random.default_rng(5))
    assert many.shape == (7, 1001) and many.dtype == np.float32 and np.array_equal(many, one)
    flat = many.reshape(-1)
    assert not np.array_equal(flat[:1000], flat[1000:2000])  # each piece has its own stream
    assert abs(flat.mean()) < 0.05 and abs(flat.std() - 1) < 0.05
    assert not np.array_equal(many, draw(spec, np.random.default_rng(6)))
    ramp = draw(Buffer(name="r", role="input", dtype="int32", shape=[2500], init=Init(kind="arange", std=1.0)),
                np.random.default_rng(0))
    assert np.array_equal(ramp, np.arange(2500))  # pieces continue where the last stopped


def test_the_host_cache_is_bounded_by_bytes_and_keeps_the_newest(monkeypatch):
    import sandbox.host_cache as cache

    monkeypatch.setattr(cache, "_kept", cache.OrderedDict())
    monkeypatch.setattr(cache, "MAX_BYTES", 3000)
    for key in "abc":
        cache.kept((key,), lambda: {"v": np.zeros(1000, np.uint8)})
    cache.kept(("a",), lambda: {"v": np.ones(1, np.uint8)})  # still kept: made once, and now the newest
    cache.kept(("d",), lambda: {"v": np.zeros(1000, np.uint8)})
    assert list(cache._kept) == [("c",), ("a",), ("d",)]
    cache.kept(("huge",), lambda: {"v": np.zeros(10_000, np.uint8)})
    assert list(cache._kept) == [("huge",)]


def test_kept_arrays_are_page_locked_up_to_a_total(monkeypatch):
    """Locked memory is taken from the host for good: what is kept locked stays under PIN_MAX_BYTES, and
    the rest stays in ordinary memory (a stand-in for CuPy's page-locked allocator, which needs CUDA)."""
    import sys
    import types

    import sandbox.host_cache as cache

    allocated = []
    fake = types.ModuleType("cupyx")
    fake.empty_pinned = lambda shape, dtype: allocated.append(shape) or np.empty(shape, dtype)
    monkeypatch.setitem(sys.modules, "cupyx", fake)
    monkeypatch.setattr(cache, "_kept", cache.OrderedDict())
    monkeypatch.setattr(cache, "PIN_MAX_BYTES", 2500)
    first = cache.kept(("a",), lambda: cache.page_locked({"v": np.arange(1000, dtype=np.uint8)}))
    assert isinstance(first, cache.Locked) and (first["v"] == np.arange(1000, dtype=np.uint8)).all()
    second = cache.kept(("b",), lambda: cache.page_locked({"v": np.ones(1000, np.uint8)}))
    assert isinstance(second, cache.Locked)
    third = cache.kept(("c",), lambda: cache.page_locked({"v": np.ones(1000, np.uint8)}))
    assert not isinstance(third, cache.Locked)  # 3000 bytes would be locked: this one stays ordinary
    assert allocated == [(1000,), (1000,)]

    def refused(shape, dtype):
        raise MemoryError("no locked memory")

    fake.empty_pinned = refused
    monkeypatch.setattr(cache, "_kept", cache.OrderedDict())
    assert not isinstance(cache.page_locked({"v": np.ones(10, np.uint8)}), cache.Locked)


def poison(buffer):
    word, bits = poison_word(buffer)
    return np.full(buffer.count, bits, dtype=word).view(DTYPES[buffer.dtype].storage)


def test_poison_is_nan_for_floats_and_a_pattern_for_integers():
    assert np.isnan(poison(out())).all()
    assert (poison(out(dtype="int32")) == 0x5A5A5A5B).all()
    assert (poison(out(zeroed=True)) == 0).all()
    assert np.isnan(from_bf16_bits(poison(out(dtype="bfloat16")))).all()


def test_compare_within_tolerance_and_first_bad_index():
    ref = np.arange(6, dtype=np.float64)
    assert compare(out(), ref.astype(np.float32), ref) is None
    got = ref.astype(np.float32)
    got[4] += 0.5
    m = compare(out(), got, ref)
    assert m.first_bad_index == [1, 1] and m.mismatch_fraction == 1 / 6 and m.max_abs_error == 0.5


def test_a_mismatch_lists_the_first_wrong_elements_in_order_with_their_values():
    ref = np.arange(6, dtype=np.float64)
    got = ref.astype(np.float32)
    got[[1, 3, 5]] = -1
    m = compare(out(), got, ref)
    assert [(b.index, b.expected, b.got) for b in m.first_bad] == [([0, 1], 1.0, -1.0), ([1, 0], 3.0, -1.0),
                                                                   ([1, 2], 5.0, -1.0)]


def test_a_race_is_shown_as_the_elements_that_differ_between_identical_runs():
    first = {"a": np.zeros(4, np.float32), "y": np.arange(10, dtype=np.float32)}
    same, later = {k: v.copy() for k, v in first.items()}, {k: v.copy() for k, v in first.items()}
    later["y"][[3, 7]] = 0
    assert differing([first, same, later]) == "2 of 10 elements of y (flat index 3, 7)"
    later["y"][:] = -1
    assert differing([first, later], shown=2) == "10 of 10 elements of y (flat index 0, 1, ...)"


def test_unwritten_output_is_reported_as_nan():
    m = compare(out(), poison(out()), np.zeros(6))
    assert m.mismatch_fraction == 1.0 and "never written" in m.detail


def test_exact_outputs_must_match_bit_for_bit():
    spec = out(dtype="int32", exact=True)
    ref = np.array([1, 2, 3, 4, 5, 6], dtype=np.int32)
    assert compare(spec, ref.copy(), ref) is None
    assert compare(spec, ref + np.array([0, 0, 0, 0, 0, 1], dtype=np.int32), ref).first_bad_index == [1, 2]


def test_bf16_round_trip():
    values = np.array([1.0, -2.5, 3.14159, 1e-3], dtype=np.float32)
    back = from_bf16_bits(to_bf16_bits(values))
    assert np.allclose(back, values, rtol=1 / 128) and back[0] == 1.0
    assert DTYPES["bfloat16"].storage == np.uint16


def test_timing_statistics_and_repetitions():
    t = summarise([1.0, 2.0, 3.0, 4.0, 100.0])
    assert t.median_ms == 3.0 and t.min_ms == 1.0 and t.max_ms == 100.0 and t.repetitions == 5
    assert repetitions([1.0, 1.0], budget_ms=100, min_reps=10, max_reps=500, jitter=3) == 53
    assert repetitions([100.0], budget_ms=100, min_reps=10, max_reps=500, jitter=0) == 10


def test_trim_log_keeps_first_error_and_tail():
    lines = [f"note {i}" for i in range(100)] + ["x.cu(7): error: boom"] + [f"tail {i}" for i in range(100)]
    trimmed = trim_log("\n".join(lines))
    assert "x.cu(7): error: boom" in trimmed and "tail 99" in trimmed and "lines omitted" in trimmed


def test_large_outputs_take_the_parallel_pass_and_still_find_one_bad_element():
    n = 3 * CHUNK + 17  # several pieces plus a ragged end
    out = Buffer(name="y", role="output", dtype="float16", shape=[n], atol=1e-3, rtol=1e-3)
    ref = np.linspace(-2, 2, n).astype(np.float16)
    assert compare(out, ref.copy(), ref) is None
    for index in (0, CHUNK, n - 1):
        got = ref.copy()
        got[index] = np.float16(7.0)
        mismatch = compare(out, got, ref)
        assert mismatch is not None and mismatch.first_bad_index == [index]
        assert mismatch.detail.startswith("1 of")
    exact = Buffer(name="i", role="output", dtype="int32", shape=[n], exact=True)
    ints = np.arange(n, dtype=np.int32)
    assert compare(exact, ints.copy(), ints) is None
    wrong = ints.copy()
    wrong[-1] += 1
    assert compare(exact, wrong, ints).first_bad_index == [n - 1]


def test_same_bytes_sees_a_difference_anywhere_including_the_ragged_tail():
    a = np.arange(1003, dtype=np.uint8)
    assert same_bytes(a, a.copy())
    for index in (0, 500, 1002):
        b = a.copy()
        b[index] ^= 1
        assert not same_bytes(a, b)
    assert not same_bytes(a, a[:-1])
    nan = np.array([np.nan], dtype=np.float32)
    assert same_bytes(nan, nan.copy())  # bits, not values: NaN equals itself


def test_same_bytes_on_an_array_checked_in_pieces():
    """Larger than one piece: the difference is found in the first, a middle and the last piece."""
    a = np.arange(CHUNK * 3 + 5, dtype=np.float64)
    assert same_bytes(a, a.copy())
    for index in (0, CHUNK + 7, CHUNK * 3 - 1):
        b = a.copy()
        b[index] = -b[index] - 1
        assert not same_bytes(a, b)

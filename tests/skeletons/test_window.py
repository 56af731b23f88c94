"""The window and transpose skeletons (window2d, window1d, transpose): every fixture and example fill
instantiates into its task, and compiles with NVRTC at a sample of knob combinations that holds
every value of every knob (one compile_many call)."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

from kernel_agent.check import check
from kernel_agent.skeletons import LIBRARY, instantiate, library, parse_fills
from kernel_agent.task import load_task
from sandbox import emulator_unavailable, parse_directives
from sandbox.compiler import CompileJob, compile_many
from sandbox.expr import evaluate_int
from tests.paths import ROOT

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
SKELETONS = ("window2d", "window1d", "transpose")
PORTS = ROOT / "tests" / "data" / "ports"
FILLS = [p for p in sorted(PORTS.glob("*.md")) + sorted((LIBRARY / "examples").glob("*.md"))
         if re.match(r"skeleton:\s*(\w+)", p.read_text()).group(1) in SKELETONS]


def instance_of(path):
    text = path.read_text()
    name = re.match(r"skeleton:\s*(\w+)", text).group(1)
    task = load_task(next((ROOT / "tasks").glob(f"*/{path.stem}.yaml")))
    skeleton = library()[name]
    return task, instantiate(skeleton, task, parse_fills(text, skeleton).values)


def sample(knobs: dict[str, list[str]]) -> list[dict[str, str]]:
    """The defaults, each other value of each knob alone, and every knob at its last value together."""
    default = {name: values[0] for name, values in knobs.items()}
    combos = [default, {name: values[-1] for name, values in knobs.items()}]
    for name, values in knobs.items():
        combos += [{**default, name: value} for value in values[1:]]
    unique = {tuple(sorted(c.items())): c for c in combos}
    return list(unique.values())


def test_the_skeletons_are_in_the_library():
    assert set(SKELETONS) <= set(library())


@pytest.mark.parametrize("path", FILLS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_fill_instantiates_with_the_tasks_signature(path):
    task, instance = instance_of(path)
    signature = ", ".join(task.c_parameters(restrict=True))
    assert f"({signature})" in instance.source
    assert "{{" not in instance.source


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")
def test_every_fill_compiles_at_a_sample_of_knob_combinations_holding_every_value():
    jobs, names = [], []
    for path in FILLS:
        _, instance = instance_of(path)
        directives = parse_directives(instance.source)
        entries = [e.name for e in directives.entries]
        knobs = {k.name: list(k.values) for k in directives.knobs.values()}
        for combo in sample(knobs):
            jobs.append(CompileJob(instance.source, entries, combo, [], "sm_90"))
            names.append(f"{path.stem} {combo}")
    results = compile_many(jobs)
    failed = [(name, r.log) for name, r in zip(names, results) if not r.ok]
    assert not failed, failed[0]


def test_the_sample_holds_every_value():
    knobs = {"A": ["1", "2", "3"], "B": ["x", "y"]}
    combos = sample(knobs)
    for name, values in knobs.items():
        assert {c[name] for c in combos} == set(values)
    assert len(combos) == len({tuple(sorted(c.items())) for c in combos})


# --- window2d, STAGE=0 (registers and the cache), emulated index by index in NumPy -----------------
# The kernel's index arithmetic for every thread of the grid the directive launches, at every check
# size of each window2d fill and every value of OUT_W, OUT_H and VEC: each load lies inside the plane
# (and a float4/float2 at an aligned address), no register is read that no load wrote, every output
# is written exactly once, and the outputs agree with a direct pooling/convolution.

WINDOW2D_FILLS = [p for p in FILLS if re.match(r"skeleton:\s*window2d", p.read_text())]


def _window2d_reference(x, g, fold, identity):
    n, c, h, w = x.shape
    ho, wo = g["HO"], g["WO"]
    acc = np.full((n, c, ho, wo), identity, dtype=np.float64)
    oy, ox = np.meshgrid(np.arange(ho), np.arange(wo), indexing="ij")
    for ky in range(g["KH"]):
        for kx in range(g["KW"]):
            iy, ix = oy * g["SH"] - g["PH"] + ky * g["DH"], ox * g["SW"] - g["PW"] + kx * g["DW"]
            inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
            v = np.full((n, c, ho, wo), identity)
            v[:, :, inside] = x[:, :, iy[inside], ix[inside]]
            acc = fold(acc, v, np.arange(c)[None, :, None, None], ky, kx)
    return acc


def _window2d_emulate(x, g, fold, identity, out_w, out_h, vec, threads):
    """The STAGE=0 path of window2d.cu for `threads` threads (the grid times BLOCK)."""
    n, c, h, w = x.shape
    ho, wo = g["HO"], g["WO"]
    kh, kw, sh, sw, ph, pw, dh, dw = (g[k] for k in ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW"))
    gw, gh = -(-wo // out_w), -(-ho // out_h)
    assert threads >= n * c * gh * gw, "the grid leaves patches out"
    idx = np.arange(n * c * gh * gw)
    px, t = idx % gw, idx // gw
    py, plane = t % gh, t // gh
    ch = plane % c
    span_rows, span = (out_h - 1) * sh + (kh - 1) * dh + 1, (out_w - 1) * sw + (kw - 1) * dw + 1
    vec_ok = vec == 4 and (out_w * sw) % 4 == 0
    lead = (4 - pw % 4) % 4 if vec_ok else 0
    nq = (lead + span + 3) // 4
    nv = 4 * nq if vec_ok else span
    oy0, ox0 = py * out_h, px * out_w
    iy0, a0 = oy0 * sh - ph, ox0 * sw - pw - lead
    use_vec = vec_ok and w % 4 == 0   # the harness's buffers are aligned
    if vec_ok:
        assert (a0 % 4 == 0).all()
    flat = x.reshape(n * c, h, w)
    acc = np.full((len(idx), out_h, out_w), identity, dtype=np.float64)

    def load(v, ok, s):
        col = a0 + s
        assert ((col[ok] >= 0) & (col[ok] < w)).all(), "a load outside the row"
        v[ok, s] = flat[plane[ok], iy[ok], col[ok]]

    for r in range(span_rows):
        iy = iy0 + r
        row = (iy >= 0) & (iy < h)
        v = np.full((len(idx), nv), np.nan)
        if use_vec:
            for q in range(nv // 4):
                lo, hi = max(4 * q, lead), min(4 * q + 4, lead + span)
                cols = [lo] if hi - lo == 1 else [lo, lo + 1] if hi - lo == 2 and lo % 2 == 0 else range(4 * q, 4 * q + 4)
                start = a0 + cols[0]
                assert (start % len(cols) == 0).all(), "a misaligned vector load"
                inside = (a0 + 4 * q >= 0) & (a0 + 4 * q < w)   # all four inside or none (W % 4 == 0)
                for s in cols:
                    load(v, row & inside, s)
                    v[row & ~inside, s] = identity
                    assert not ((a0 + s >= 0) & (a0 + s < w) & row & ~inside).any()
        else:
            for s in range(lead, lead + span):
                inside = (a0 + s >= 0) & (a0 + s < w)
                load(v, row & inside, s)
                v[row & ~inside, s] = identity
        for i in range(out_h):
            d = r - i * sh
            if d < 0 or d % dh or d // dh >= kh:
                continue
            ky = d // dh
            for j in range(out_w):
                for kx in range(kw):
                    val = v[row, lead + j * sw + kx * dw]
                    assert not np.isnan(val).any(), "a register read that no load wrote"
                    acc[row, i, j] = fold(acc[row, i, j], val, ch[row], ky, kx)
    out = np.full((n * c, ho, wo), np.nan)
    writes = np.zeros((n * c, ho, wo), dtype=int)
    for i in range(out_h):
        for j in range(out_w):
            oy, ox = oy0 + i, ox0 + j
            ok = (oy < ho) & (ox < wo)
            out[plane[ok], oy[ok], ox[ok]] = acc[ok, i, j]
            np.add.at(writes, (plane[ok], oy[ok], ox[ok]), 1)
    assert (writes == 1).all(), "an output written twice or never"
    if out_w % 2 == 0:   # the float2/float4 stores of a whole patch with WO even (a multiple of 4)
        step = 4 if out_w % 4 == 0 else 2
        if wo % step == 0:
            whole = ox0 + out_w <= wo
            assert ((((plane * ho) * wo + ox0) % step)[whole] == 0).all()
    return out.reshape(n, c, ho, wo)


def _window2d_math(path, fills):
    """The fold and identity of a window2d fill (the three of the suite)."""
    if path.stem == "maxpool2d":
        return (lambda a, v, c, ky, kx: np.maximum(a, v)), -np.inf, None
    if path.stem == "avgpool2d":
        return (lambda a, v, c, ky, kx: a + v), 0.0, None
    if path.stem == "depthwise_conv2d":
        return (lambda a, v, c, ky, kx: a + WEIGHTS[np.asarray(c) % len(WEIGHTS), ky, kx] * v), 0.0, None
    raise AssertionError(f"no emulation for {path.stem}")


WEIGHTS = np.arange(1, 1 + 8 * 9, dtype=np.float64).reshape(8, 3, 3) / 7.0


@pytest.mark.parametrize("path", WINDOW2D_FILLS, ids=lambda p: p.stem)
def test_window2d_registers_path_is_correct_at_every_check_size(path):
    task, instance = instance_of(path)
    skeleton = library()["window2d"]
    fills = parse_fills(path.read_text(), skeleton).values
    geometry = {k: int(fills[k].strip()) for k in ("KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW")}
    fold, identity, _ = _window2d_math(path, fills)
    directives = parse_directives(instance.source)
    entry = directives.entries[0]
    knobs = {k.name: list(k.values) for k in directives.knobs.values()}
    assert knobs["STAGE"][0] == "0"
    rng = np.random.default_rng(0)
    for dims in task.check_sizes:
        dims = dict(dims)
        x = rng.standard_normal((dims["N"], dims["C"], dims["H"], dims["W"]))
        g = {**geometry, "HO": dims["HO"], "WO": dims["WO"]}
        want = _window2d_reference(x, g, fold, identity)
        for out_w in map(int, knobs["OUT_W"]):
            for out_h in map(int, knobs["OUT_H"]):
                for vec in map(int, knobs["VEC"]):
                    for block in map(int, knobs["BLOCK"]):
                        for stage in (0, 1, 2):   # STAGE=1 and 2 fall back to this path on their grids
                            scope = {**dims, "BLOCK": block, "OUT_W": out_w, "OUT_H": out_h, "VEC": vec, "STAGE": stage}
                            threads = evaluate_int(entry.grid[0], scope) * evaluate_int(entry.block[0], scope)
                            patches = dims["N"] * dims["C"] * -(-dims["HO"] // out_h) * -(-dims["WO"] // out_w)
                            assert threads >= patches, f"the grid leaves patches out: {dims} {scope}"
                    # Each thread's patch depends on its index only; threads past the last patch return.
                    got = _window2d_emulate(x, g, fold, identity, out_w, out_h, vec, patches)
                    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                               err_msg=f"{path.stem} {dims} OUT_W={out_w} OUT_H={out_h} VEC={vec}")


# --- window2d, STAGE=2 (a shared row a warp), run on the CPU emulator ----------------------------------
# Every window2d fill at STAGE=2 with every value of the other knobs, each at every check size small
# enough for the emulator: correct (on the H100 all 72 combinations of BLOCK 256/128, OUT_W, OUT_H,
# VEC and STAGE of the three fills were correct too, 2026-12-06).


@pytest.mark.skipif(emulator_unavailable() is not None, reason=str(emulator_unavailable()))
@pytest.mark.parametrize("path", WINDOW2D_FILLS, ids=lambda p: p.stem)
def test_window2d_warp_rows_path_is_correct_on_the_emulator(path, tmp_path):
    task, instance = instance_of(path)
    kernel = tmp_path / f"{task.name}.cu"
    kernel.write_text(instance.source)
    knobs = {k.name: list(k.values) for k in parse_directives(instance.source).knobs.values()}
    assert "2" in knobs.pop("STAGE")
    for combo in sample(knobs):
        outcome = check(task, kernel, {**combo, "STAGE": "2"}, emulate=True)
        assert outcome.message.startswith("correct at"), f"{path.stem} {combo}: {outcome.status.value}: {outcome.message}"

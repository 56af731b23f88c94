"""`progress.png`: a valid PNG read back by a tiny reader here, with the line, failures and edge cases drawn."""

from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from kernel_agent.plot import (
    _FONT,
    BLUE,
    BOTTOM,
    HEIGHT,
    LEFT,
    RED,
    RIGHT,
    TOP,
    WIDTH,
    _text_mask,
    progress_png,
)


def read_png(path: Path) -> np.ndarray:
    """Parse an 8-bit RGB PNG with filter-0 scanlines, checking every CRC; returns (height, width, 3) uint8."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF, tag
        chunks.append((tag, body))
        pos += 12 + length
    assert pos == len(data)
    tags = [tag for tag, _ in chunks]
    assert tags[0] == b"IHDR" and tags[-1] == b"IEND" and b"IDAT" in tags
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(body for tag, body in chunks if tag == b"IDAT"))
    assert len(raw) == height * (1 + 3 * width)
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert (rows[:, 0] == 0).all()  # filter type 0 on every scanline
    return rows[:, 1:].reshape(height, width, 3)


def pixels(img: np.ndarray, color: tuple[int, int, int]) -> np.ndarray:
    """A boolean map of the pixels exactly `color`."""
    return (img == np.array(color, dtype=np.uint8)).all(axis=2)


def draw(tmp_path: Path, best: list[float | None], failures: list[bool], title: str = "") -> np.ndarray:
    path = tmp_path / "progress.png"
    progress_png(path, best, failures, title)
    return read_png(path)


def test_a_run_draws_a_blue_line_and_a_red_cross_per_failure(tmp_path):
    best = [None, 1.2, 1.2, 1.2, 1.5, 1.5, 2.0, 2.0]
    failures = [True, False, False, True, False, False, False, True]
    img = draw(tmp_path, best, failures, title="layernorm")
    assert img.shape == (HEIGHT, WIDTH, 3) and 700 <= WIDTH <= 900 and 300 <= HEIGHT <= 500
    assert (img[0, 0] == 255).all() and (img[-1, -1] == 255).all()  # white background
    blue = pixels(img, BLUE)
    assert blue.sum() > 2 * (RIGHT - LEFT) // 2  # a 2 px line across most of the width
    ys, xs = np.nonzero(blue)
    assert LEFT <= xs.min() and xs.max() <= RIGHT and TOP <= ys.min() and ys.max() <= BOTTOM
    # The line rises (rows grow downwards): the right end sits higher than the left end.
    assert ys[xs == xs.max()].min() < ys[xs == xs.min()].min()
    # Three separate crosses, each in the bottom strip of the plot, at evaluations 1, 4 and 8.
    red = pixels(img, RED)
    ry, rx = np.nonzero(red)
    assert ry.min() > BOTTOM - 20 and ry.max() < BOTTOM
    columns = np.unique(rx)
    groups = np.split(columns, np.nonzero(np.diff(columns) > 1)[0] + 1)
    centres = [round(LEFT + (RIGHT - LEFT) * i / len(best)) for i in (1, 4, 8)]
    assert len(groups) == 3
    for group, centre in zip(groups, centres):
        assert group.min() <= centre <= group.max()


def test_red_appears_only_when_a_failure_is_marked(tmp_path):
    img = draw(tmp_path, [1.1, 1.3, 1.3], [False, False, False])
    assert pixels(img, BLUE).any() and not pixels(img, RED).any()
    img = draw(tmp_path, [1.1, 1.3, 1.3], [False, True, False])
    assert pixels(img, RED).any()


@pytest.mark.parametrize("best, failures", [([], []), ([None] * 6, [True, False] * 3)])
def test_empty_and_all_none_runs_draw_axes_only(tmp_path, best, failures):
    img = draw(tmp_path, best, failures)
    assert not pixels(img, BLUE).any()
    assert pixels(img, RED).any() == any(failures)
    assert (img != 255).any(axis=2).sum() > 1000  # axes, grid and labels are there
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was moved into place


@pytest.mark.parametrize("best", [[1.7], [0.8] * 20, [1.0] * 5, [None, None, 3.0]])
def test_one_point_and_flat_runs_still_show_the_value(tmp_path, best):
    img = draw(tmp_path, best, [False] * len(best))
    assert pixels(img, BLUE).sum() >= 16


def test_the_title_is_drawn_above_the_plot(tmp_path):
    plain = draw(tmp_path, [1.0, 2.0], [False, False])
    titled = draw(tmp_path, [1.0, 2.0], [False, False], title="Softmax ~ run 3")  # '~' is unknown: blank
    assert (plain[:TOP] == 255).all()
    assert (titled[:TOP] != 255).any() and (titled[TOP:] == plain[TOP:]).all()


def test_a_ten_thousand_point_run_is_quick(tmp_path):
    n = 10_000
    best = [None] * 10 + [1.0 + i / 1000 for i in range(n - 10)]
    start = time.perf_counter()
    img = draw(tmp_path, best, [i % 3 == 0 for i in range(n)], title="long run")
    assert time.perf_counter() - start < 2.0
    assert pixels(img, BLUE).any() and pixels(img, RED).any()


def test_the_font_covers_the_labels_and_fits_five_by_seven():
    for text in ("evaluations", "best speedup", "0123456789.x-", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
        assert set(text) - {" "} <= set(_FONT)
    assert all(len(bits) == 14 and all(int(bits[i:i + 2], 16) < 32 for i in range(0, 14, 2))
               for bits in _FONT.values())
    assert len({bits for ch, bits in _FONT.items() if ch.isdigit()}) == 10  # every digit looks different
    mask = _text_mask("1.5x", 2)
    assert mask.shape == (18, 2 * (4 * 6 - 1)) and mask.any()
    assert not _text_mask("~", 1).any()

"""Charts drawn with numpy and written as a PNG by hand (no matplotlib); text uses a built-in 5x7 font.

`progress.png` (an optimisation run): x = evaluation number, y = best speedup so far (a blue step line), a
dashed grey baseline at 1.0x, and a small red cross along the bottom for every failed evaluation.
`speedups.png` (a bench suite): one bar per task on a log scale from 1x, suspect bars orange, a red cross
for every failed task.
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

import numpy as np

from .files import write_atomic

WIDTH, HEIGHT = 800, 400
LEFT, RIGHT, TOP, BOTTOM = 100, 780, 40, 340  # the plot area, in pixels
DATA_HIGH, DATA_LOW = TOP + 12, BOTTOM - 22  # rows of the highest and lowest speedup; failures go below
WHITE = (255, 255, 255)
GRID = (232, 232, 232)
AXIS = (170, 170, 170)
BASELINE = (140, 140, 140)
TEXT = (60, 60, 60)
BLUE = (31, 119, 180)
RED = (214, 39, 40)
ORANGE = (255, 127, 14)

# 5x7 glyphs: seven rows of five bits each (0x10 = leftmost pixel), as 14 hex digits. Unknown = blank.
# Each sits in a cell 9 rows high; those in _DESCENDERS sit two rows lower, below the baseline.
_FONT = {
    "0": "0E11131519110E", "1": "040C040404040E", "2": "0E11010204081F", "3": "1F02040201110E",
    "4": "02060A121F0202", "5": "1F101E0101110E", "6": "0608101E11110E", "7": "1F010204080808",
    "8": "0E11110E11110E", "9": "0E11110F01020C", ".": "000000000C0C00", "-": "0000001F000000",
    ":": "000C0C000C0C00", "/": "01010204081010", "(": "02040808080402", ")": "08040202020408",
    "_": "0000000000001F", "=": "00001F001F0000", "+": "0004041F040400", ",": "000000000C0408",
    "%": "18190204081303", "A": "0E11111F111111", "B": "1E11111E11111E", "C": "0E11101010110E",
    "D": "1C12111111121C", "E": "1F10101E10101F", "F": "1F10101E101010", "G": "0E11101711110F",
    "H": "1111111F111111", "I": "0E04040404040E", "J": "0702020202120C", "K": "11121418141211",
    "L": "1010101010101F", "M": "111B1515111111", "N": "11111915131111", "O": "0E11111111110E",
    "P": "1E11111E101010", "Q": "0E11111115120D", "R": "1E11111E141211", "S": "0F10100E01011E",
    "T": "1F040404040404", "U": "1111111111110E", "V": "11111111110A04", "W": "1111111515150A",
    "X": "11110A040A1111", "Y": "11110A04040404", "Z": "1F01020408101F", "a": "00000E010F110F",
    "b": "1010161911111E", "c": "00000E1010110E", "d": "01010D1311110F", "e": "00000E111F100E",
    "f": "0609081C080808", "g": "0F1111110F010E", "h": "10101619111111", "i": "04000C0404040E",
    "j": "0200060202120C", "k": "10101214181412", "l": "0C04040404040E", "m": "00001A15151111",
    "n": "00001619111111", "o": "00000E1111110E", "p": "1E1111111E1010", "q": "0F1111110F0101",
    "r": "00001619101010", "s": "00000E100E011E", "t": "08081C08080906", "u": "0000111111130D",
    "v": "00001111110A04", "w": "0000111115150A", "x": "0000110A040A11", "y": "111111110F010E",
    "z": "00001F0204081F",
}


_DESCENDERS = "gpqy"


def _glyph(ch: str) -> np.ndarray:
    """The 9x5 boolean bitmap of one character's cell (blank when the font lacks it)."""
    bits = _FONT.get(ch, "00" * 7)
    rows = [int(bits[i:i + 2], 16) for i in range(0, 14, 2)]
    rows = [0, 0] + rows if ch in _DESCENDERS else rows + [0, 0]
    return np.array([[(r >> (4 - c)) & 1 for c in range(5)] for r in rows], dtype=bool)


def _text_mask(text: str, scale: int = 1) -> np.ndarray:
    """A boolean bitmap of `text`: 5x9 glyph cells one pixel apart, each pixel blown up to scale x scale."""
    if not text:
        return np.zeros((9 * scale, 0), dtype=bool)
    parts = []
    for ch in text:
        parts += [_glyph(ch), np.zeros((9, 1), dtype=bool)]
    mask = np.hstack(parts[:-1])
    return np.kron(mask, np.ones((scale, scale), dtype=bool)).astype(bool)


def _blit(img: np.ndarray, mask: np.ndarray, x: int, y: int, color: tuple[int, int, int]) -> None:
    """Paint `color` where `mask` is set, with its top-left corner at (x, y); parts off the image are cut."""
    h, w = mask.shape
    x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, img.shape[1]), min(y + h, img.shape[0])
    if x0 < x1 and y0 < y1:
        img[y0:y1, x0:x1][mask[y0 - y:y1 - y, x0 - x:x1 - x]] = color


def _label(v: float) -> str:
    """A speedup as a short tick label: 1.00x, 12.3x, 150x."""
    return f"{v:.2f}x" if abs(v) < 10 else f"{v:.1f}x" if abs(v) < 100 else f"{v:.0f}x"


def _png_bytes(img: np.ndarray) -> bytes:
    """An RGB uint8 image (height, width, 3) as PNG bytes: every scanline with filter type 0 (none)."""
    h, w, _ = img.shape
    raw = np.hstack([np.zeros((h, 1), dtype=np.uint8), img.reshape(h, w * 3)]).tobytes()

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8 bits, truecolour, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def _crosses(img: np.ndarray, xs: list[int], bottom: int) -> None:
    """A 7x7 red cross at each column in `xs`, its lowest row just above row `bottom`."""
    xs = np.array(xs, dtype=int)
    if xs.size:
        d = np.arange(-3, 4)
        rows = np.broadcast_to(bottom - 7 + d, (xs.size, d.size))
        for cols in (xs[:, None] + d, xs[:, None] - d, xs[:, None] + d + 1, xs[:, None] - d + 1):
            img[rows, np.clip(cols, 0, img.shape[1] - 1)] = RED


def _title(img: np.ndarray, title: str, top: int) -> None:
    """`title` centred in the band above row `top`: scale 2 when it fits, else scale 1, cut to the width."""
    if title:
        width = img.shape[1]
        scale = 2 if len(title) * 12 <= width - 20 else 1
        mask = _text_mask(title[: (width - 20) // (6 * scale)], scale)
        _blit(img, mask, (width - mask.shape[1]) // 2, (top - mask.shape[0]) // 2, TEXT)


def _axis_names(img: np.ndarray, x_name: str, y_name: str, left: int, right: int, top: int, bottom: int,
                x_row: int) -> None:
    """The x axis name centred under the plot at row `x_row`, the y axis name rotated at the left edge."""
    if x_name:
        mask = _text_mask(x_name, 2)
        _blit(img, mask, (left + right - mask.shape[1]) // 2, x_row, TEXT)
    mask = np.rot90(_text_mask(y_name, 2))
    _blit(img, mask, 8, (top + bottom - mask.shape[0]) // 2, TEXT)


def _speedup_axis(img: np.ndarray, ticks, py, top: int, bottom: int, right: int) -> None:
    """Labelled grid lines at the tick values, a dashed line at 1x, and the two axes."""
    for v in ticks:
        img[py(v), LEFT:right] = GRID
        scale = 2 if len(_label(v)) <= 5 else 1
        mask = _text_mask(_label(v), scale)
        _blit(img, mask, LEFT - 6 - mask.shape[1], py(v) - 7 * scale // 2, TEXT)
    dashes = np.arange(LEFT, right)
    img[py(1.0), dashes[(dashes - LEFT) % 8 < 4]] = BASELINE
    img[top:bottom + 1, LEFT] = AXIS
    img[bottom, LEFT:right + 1] = AXIS


def render(best_speedups: list[float | None], failures: list[bool], title: str = "") -> np.ndarray:
    """The chart as an RGB uint8 array of HEIGHT x WIDTH (see `progress_png`)."""
    img = np.full((HEIGHT, WIDTH, 3), WHITE, dtype=np.uint8)
    n = max(len(best_speedups), len(failures))
    vals = [v for v in best_speedups if v is not None and math.isfinite(v)]
    lo, hi = (min(1.0, *vals), max(1.0, *vals)) if vals else (0.0, 2.0)
    ylo, yhi = (lo, hi) if hi > lo else (lo - 0.1, hi + 0.1)

    def px(i: float) -> int:  # evaluation number -> column
        return round(LEFT + (RIGHT - LEFT) * i / max(n, 1))

    def py(v: float) -> int:  # speedup -> row
        return round(DATA_LOW - (v - ylo) / (yhi - ylo) * (DATA_LOW - DATA_HIGH))

    # Grid, ticks and their labels.
    xticks = sorted({0, n // 2, n})
    yticks = [1.0]
    if vals and py(1.0) - py(max(vals)) >= 16:
        yticks.append(max(vals))
    if vals and py(min(vals)) - py(1.0) >= 16:  # the lowest is labelled only when below the baseline
        yticks.append(min(vals))
    for i in xticks:
        img[TOP:BOTTOM, px(i)] = GRID
        mask = _text_mask(str(i), 2)
        _blit(img, mask, min(px(i) - mask.shape[1] // 2, WIDTH - 4 - mask.shape[1]), BOTTOM + 8, TEXT)
    _speedup_axis(img, yticks, py, TOP, BOTTOM, RIGHT)

    # The best-so-far step line, 2 px thick; a point with no drawn neighbour gets a small square.
    drawn = [v is not None and math.isfinite(v) for v in best_speedups]
    points = [(px(i + 1), py(v) if ok else 0) for i, (v, ok) in enumerate(zip(best_speedups, drawn))]
    for i, (x, y) in enumerate(points):
        if not drawn[i]:
            continue
        if i + 1 < len(points) and drawn[i + 1]:
            x2, y2 = points[i + 1]
            img[y - 1:y + 1, x - 1:x2 + 1] = BLUE
            img[min(y, y2) - 1:max(y, y2) + 1, x2 - 1:x2 + 1] = BLUE
        elif i == 0 or not drawn[i - 1]:
            img[y - 3:y + 3, x - 3:x + 3] = BLUE

    # Failures: a 7x7 red cross each, along the bottom of the plot.
    _crosses(img, [px(i + 1) for i, failed in enumerate(failures) if failed], BOTTOM)

    # Axis names, the title, and a note when nothing is correct yet.
    _axis_names(img, "evaluations", "best speedup", LEFT, RIGHT, TOP, BOTTOM, BOTTOM + 32)
    _title(img, title, TOP)
    if not vals:
        mask = _text_mask("no correct kernel yet", 2)
        _blit(img, mask, (LEFT + RIGHT - mask.shape[1]) // 2, (TOP + BOTTOM) // 2 - 40, AXIS)
    return img


def progress_png(path: Path, best_speedups: list[float | None], failures: list[bool], title: str = "") -> None:
    """Write a PNG line chart: x = evaluation number (1..N), y = best speedup so far (None = nothing correct yet, not drawn).
    A failed evaluation (failures[i] True) is marked with a small red cross at the bottom of the plot at its x.
    """
    write_atomic(Path(path), _png_bytes(render(best_speedups, failures, title)))


# speedups.png: the plot area's left edge, top and bottom; the width grows so every bar gets BAR_SLOT px.
BARS_HEIGHT, BARS_TOP, BARS_BOTTOM, BAR_SLOT = 480, 40, 330, 14
BAR_LABEL_CHARS = (BARS_HEIGHT - BARS_BOTTOM - 10) // 6  # a task name is cut to what fits below the plot


def render_bars(labels: list[str], speedups: list[float | None], failed: list[bool], suspect: list[bool],
                title: str = "") -> np.ndarray:
    """The bar chart as an RGB uint8 array (see `speedup_bars_png`); at least WIDTH wide."""
    n = len(labels)
    right = max(RIGHT, LEFT + n * BAR_SLOT)
    img = np.full((BARS_HEIGHT, right + WIDTH - RIGHT, 3), WHITE, dtype=np.uint8)
    top, bottom, high, low = BARS_TOP, BARS_BOTTOM, BARS_TOP + 12, BARS_BOTTOM - 22
    vals = [v for v in speedups if v is not None and math.isfinite(v) and v > 0]
    lo = math.log10(min(1.0, *vals)) if vals else 0.0
    hi = max(math.log10(max(1.0, *vals)) if vals else 0.0, lo + math.log10(2))  # at least a 2x span

    def py(v: float) -> int:  # speedup -> row, log scale
        return round(low - (math.log10(v) - lo) / (hi - lo) * (low - high))

    slot = (right - LEFT) / max(n, 1)
    centres = [round(LEFT + slot * (i + 0.5)) for i in range(n)]

    # Decade grid lines (and the extreme values, when clear of them), a dashed 1x line, the axes.
    ticks = [10.0 ** k for k in range(math.ceil(lo - 1e-9), math.floor(hi + 1e-9) + 1)]
    for v in (max(vals, default=1.0), min(vals, default=1.0)):
        if all(abs(py(v) - py(t)) >= 16 for t in ticks):
            ticks.append(v)
    _speedup_axis(img, ticks, py, top, bottom, right)

    # Bars from 1x up (or down) to the speedup, at least 2 px tall; suspect ones orange.
    half = max(1, round(slot * 0.3))
    for x, v, odd in zip(centres, speedups, suspect):
        if v is not None and math.isfinite(v) and v > 0:
            y0, y1 = sorted((py(1.0), py(v)))
            img[y0 - 1:max(y1, y0 + 1), x - half:x + half] = ORANGE if odd else BLUE
    _crosses(img, [x for x, f in zip(centres, failed) if f], bottom)

    # Task names, rotated, ending just under the axis; axis name, title, a note when nothing was timed.
    for x, label in zip(centres, labels):
        mask = np.rot90(_text_mask(label[:BAR_LABEL_CHARS]))
        _blit(img, mask, x - 4, bottom + 6, TEXT)
    _axis_names(img, "", "speedup (log)", LEFT, right, top, bottom, 0)
    _title(img, title, top)
    if any(suspect):
        mask = _text_mask("orange: suspect, faster than the roofline")
        _blit(img, mask, right - mask.shape[1], top - 12, ORANGE)
    if not vals:
        mask = _text_mask("no correct timed task", 2)
        _blit(img, mask, (LEFT + right - mask.shape[1]) // 2, (top + bottom) // 2 - 40, AXIS)
    return img


def speedup_bars_png(path: Path, labels: list[str], speedups: list[float | None], failed: list[bool],
                     suspect: list[bool], title: str = "") -> None:
    """Write a PNG bar chart: one bar per task (labels[i]) from 1x to speedups[i] on a log scale (None: no bar).
    A failed task (failed[i]) gets a red cross at the bottom; a suspect one (suspect[i]) an orange bar.
    """
    write_atomic(Path(path), _png_bytes(render_bars(labels, speedups, failed, suspect, title)))

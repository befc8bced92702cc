"""Inline SVG charts for the campaign report, written as text (no plotting library, no script).

What belongs here: the chart primitives the report draws (line chart, stacked bars vertical and
horizontal, heat map, scatter with log axes) and their axes, ticks and legends. Each returns one
``<svg class="plot">`` element whose marks carry a ``<title>`` (the browser's tooltip). Inputs are
small aggregated tables; nothing here knows about campaigns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

__all__ = ["PALETTE", "color", "line_chart", "stacked_bars", "hbars", "heatmap", "scatter", "legend", "nice_ticks"]

#: colour-blind-safe categorical colours (Okabe and Ito), then a few more
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#999999",
           "#882255", "#44AA99", "#117733")
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12"'


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    if a >= 1:
        return f"{v:g}"
    return f"{v:.2g}"


def nice_ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """About ``n`` round tick values covering [lo, hi] (whole numbers only with ``integer``)."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    if integer and step < 1:
        step = 1
    start = math.floor(lo / step) * step
    ticks, v = [], start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(v, 10))
    return ticks


def _open(width: int, height: int, label: str) -> list[str]:
    return [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" {FONT}>']


def _text(x: float, y: float, s: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{escape(s)}</text>'


def legend(names: Sequence[str], colors: Sequence[str] | None = None) -> str:
    """An HTML legend (swatches and names) to put beside a chart."""
    cs = colors or [color(i) for i in range(len(names))]
    items = "".join(f'<span class="key"><i style="background:{c}"></i>{escape(n)}</span>' for n, c in zip(names, cs,
                                                                                                          strict=True))
    return f'<div class="legend">{items}</div>'


def _y_axis(out: list[str], ticks: list[float], y: Callable[[float], float], x0: float, x1: float, label: str,
            fmt: Callable[[float], str] = _fmt) -> None:
    for t in ticks:
        yy = y(t)
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#e5e5e5"/>')
        out.append(_text(x0 - 6, yy + 4, fmt(t), "end"))
    if label:
        out.append(_text(14, (y(ticks[0]) + y(ticks[-1])) / 2, label, "middle",
                         f'transform="rotate(-90 14 {(y(ticks[0]) + y(ticks[-1])) / 2:.1f})"'))


def line_chart(series: dict[str, list[tuple[float, float]]], *, xlabel: str, ylabel: str, width: int = 760,
               height: int = 260, xticks: Sequence[tuple[float, str]] | None = None) -> str:
    """One polyline per series over a shared linear x and y axis from 0; ``xticks`` (position, label) replace
    the numeric ticks of x."""
    pts = [p for s in series.values() for p in s]
    xmax = max((x for x, _ in pts), default=1) or 1
    ymax = max((y for _, y in pts), default=1) or 1
    ml, mr, mt, mb = 56, 16, 12, 40
    xt, yt = nice_ticks(0, xmax), nice_ticks(0, ymax, integer=all(float(y).is_integer() for _, y in pts))
    x0, x1 = 0.0, xt[-1]
    if xticks is not None:         # categorical positions: half a step of room either side
        x0, x1 = min(p for p, _ in xticks) - 0.5, max(p for p, _ in xticks) + 0.5

    def X(v: float) -> float:
        return ml + (width - ml - mr) * (v - x0) / (x1 - x0)

    def Y(v: float) -> float:
        return height - mb - (height - mt - mb) * v / yt[-1]

    out = _open(width, height, f"{ylabel} against {xlabel}")
    _y_axis(out, yt, Y, ml, width - mr, ylabel)
    for p, lab in xticks if xticks is not None else [(t, _fmt(t)) for t in xt]:
        out.append(_text(X(p), height - mb + 16, lab))
    out.append(_text((ml + width - mr) / 2, height - 6, xlabel))
    for i, (name, s) in enumerate(series.items()):
        path = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in sorted(s))
        out.append(f'<polyline fill="none" stroke="{color(i)}" stroke-width="2" points="{path}">'
                   f'<title>{escape(name)}</title></polyline>')
        for x, y in s if len(s) <= 120 else ():
            out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="2.5" fill="{color(i)}">'
                       f'<title>{escape(name)}: {_fmt(y)} at {_fmt(x)}</title></circle>')
    out.append("</svg>")
    return "".join(out)


def stacked_bars(categories: Sequence[str], stacks: Sequence[tuple[str, Sequence[float]]], *, ylabel: str,
                 notes: Sequence[str] | None = None, width: int = 760, height: int = 280,
                 colors: Sequence[str] | None = None, label: str | None = None) -> str:
    """Vertical bars, one per category, each stacked from the series in ``stacks``; ``notes`` (one per
    category) are written above the bars."""
    cs = colors or [color(i) for i in range(len(stacks))]
    tot = [sum(s[1][i] for s in stacks) for i in range(len(categories))]
    ml, mr, mt, mb = 56, 12, 18, 52
    yt = nice_ticks(0, max(tot, default=1) or 1, integer=all(float(v).is_integer() for v in tot))
    band = (width - ml - mr) / max(len(categories), 1)

    def Y(v: float) -> float:
        return height - mb - (height - mt - mb) * v / yt[-1]

    out = _open(width, height, label or ylabel)
    _y_axis(out, yt, Y, ml, width - mr, ylabel)
    for i, cat in enumerate(categories):
        x = ml + i * band + band * 0.15
        w = band * 0.7
        acc = 0.0
        for k, (name, vals) in enumerate(stacks):
            v = vals[i]
            if v <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{Y(acc + v):.1f}" width="{w:.1f}" height="{Y(acc) - Y(acc + v):.1f}" '
                       f'fill="{cs[k]}"><title>{escape(cat)}: {escape(name)} {_fmt(v)}</title></rect>')
            acc += v
        out.append(_text(x + w / 2, height - mb + 15, cat))
        if notes:
            out.append(_text(x + w / 2, Y(acc) - 4, notes[i], extra='fill="#555" font-size="10"'))
    out.append("</svg>")
    return "".join(out)


def hbars(categories: Sequence[str], stacks: Sequence[tuple[str, Sequence[float]]], *, xlabel: str,
          width: int = 760, colors: Sequence[str] | None = None, label: str | None = None) -> str:
    """Horizontal stacked bars, one row per category, each row's total written at its end."""
    cs = colors or [color(i) for i in range(len(stacks))]
    row = 26
    ml, mr, mt, mb = 16 + 7 * max((len(c) for c in categories), default=4), 60, 8, 34
    height = mt + mb + row * max(len(categories), 1)
    tot = [sum(s[1][i] for s in stacks) for i in range(len(categories))]
    xt = nice_ticks(0, max(tot, default=1) or 1, integer=all(float(v).is_integer() for v in tot))

    def X(v: float) -> float:
        return ml + (width - ml - mr) * v / xt[-1]

    out = _open(width, height, label or xlabel)
    for t in xt:
        out.append(f'<line x1="{X(t):.1f}" x2="{X(t):.1f}" y1="{mt}" y2="{height - mb}" stroke="#e5e5e5"/>')
        out.append(_text(X(t), height - mb + 14, _fmt(t)))
    out.append(_text((ml + width - mr) / 2, height - 4, xlabel))
    for i, cat in enumerate(categories):
        y = mt + i * row + 4
        acc = 0.0
        for k, (name, vals) in enumerate(stacks):
            v = vals[i]
            if v <= 0:
                continue
            out.append(f'<rect x="{X(acc):.1f}" y="{y}" width="{X(acc + v) - X(acc):.1f}" height="{row - 8}" '
                       f'fill="{cs[k]}"><title>{escape(cat)}: {escape(name)} {_fmt(v)}</title></rect>')
            acc += v
        out.append(_text(ml - 8, y + row / 2, cat, "end"))
        out.append(_text(X(acc) + 4, y + row / 2, _fmt(acc), "start", 'fill="#555"'))
    out.append("</svg>")
    return "".join(out)


def heatmap(rows: Sequence[str], cols: Sequence[str], values: dict[tuple[str, str], float], *, label: str,
            cell: int = 22) -> str:
    """A grid of ``rows`` x ``cols`` cells shaded by value (log scale; an empty cell is blank), the count in each."""
    ml, mt = 8 + 7 * max((len(r) for r in rows), default=4), 12 + 7 * max((len(c) for c in cols), default=4)
    cw = max(cell, 8 + 7 * max((len(_fmt(v)) for v in values.values()), default=1))
    width, height = ml + cw * len(cols) + 8, mt + cell * len(rows) + 8
    vmax = max(values.values(), default=1) or 1
    out = _open(width, height, label)
    for j, c in enumerate(cols):
        x = ml + j * cw + cw / 2
        out.append(_text(x, mt - 6, c, "start", f'transform="rotate(-60 {x:.1f} {mt - 6})"'))
    for i, r in enumerate(rows):
        y = mt + i * cell
        out.append(_text(ml - 6, y + cell / 2 + 4, r, "end"))
        for j, c in enumerate(cols):
            v = values.get((r, c), 0)
            x = ml + j * cw
            if not v:
                out.append(f'<rect x="{x}" y="{y}" width="{cw - 1}" height="{cell - 1}" fill="#f6f6f6"/>')
                continue
            f = math.log1p(v) / math.log1p(vmax)
            light = 92 - 55 * f
            out.append(f'<rect x="{x}" y="{y}" width="{cw - 1}" height="{cell - 1}" fill="hsl(205,70%,{light:.0f}%)">'
                       f'<title>{escape(r)} {escape(c)}: {_fmt(v)}</title></rect>')
            out.append(_text(x + cw / 2, y + cell / 2 + 4, _fmt(v), extra=f'font-size="10" fill="{"#fff" if light < 60 else "#222"}"'))
    out.append("</svg>")
    return "".join(out)


def scatter(series: dict[str, list[tuple[float, float]]], *, xlabel: str, ylabel: str, width: int = 460,
            height: int = 360, diagonal: bool = True) -> str:
    """Points on log-log axes (values below 1 drawn at 1), with the line y = x when ``diagonal``."""
    pts = [p for s in series.values() for p in s]
    hi = max((max(x, y) for x, y in pts), default=10)
    top = 10 ** math.ceil(math.log10(max(hi, 10)))
    ml, mr, mt, mb = 56, 12, 12, 40

    def X(v: float) -> float:
        return ml + (width - ml - mr) * math.log10(max(v, 1)) / math.log10(top)

    def Y(v: float) -> float:
        return height - mb - (height - mt - mb) * math.log10(max(v, 1)) / math.log10(top)

    ticks = [10 ** k for k in range(int(math.log10(top)) + 1)]
    out = _open(width, height, f"{ylabel} against {xlabel}")
    _y_axis(out, ticks, Y, ml, width - mr, ylabel)
    for t in ticks:
        out.append(_text(X(t), height - mb + 16, _fmt(t)))
    out.append(_text((ml + width - mr) / 2, height - 6, xlabel))
    if diagonal:
        out.append(f'<line x1="{X(1):.1f}" y1="{Y(1):.1f}" x2="{X(top):.1f}" y2="{Y(top):.1f}" stroke="#bbb" '
                   'stroke-dasharray="4 3"><title>y = x</title></line>')
    for i, (name, s) in enumerate(series.items()):
        for x, y in s:
            out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{color(i)}" fill-opacity="0.6">'
                       f'<title>{escape(name)}: {_fmt(x)}, {_fmt(y)}</title></circle>')
    out.append("</svg>")
    return "".join(out)

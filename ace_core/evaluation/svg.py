"""A line chart as a standalone SVG string: learning curves without a plotting library.

matplotlib is not a dependency (the web app draws with plotly.js in the browser); reports written
by the CLI still want a picture that opens anywhere, so this draws axes, ticks, one polyline per
series and a legend in plain SVG.
"""

from __future__ import annotations

import math
from html import escape

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def line_chart(
    series: dict[str, list[tuple[float, float]]],
    title: str,
    x_label: str,
    y_label: str,
    width: int = 760,
    height: int = 420,
) -> str:
    """One polyline per named series of (x, y) points, on shared axes with a legend on the right."""
    points = [p for values in series.values() for p in values if math.isfinite(p[1])]
    left, right, top, bottom = 64, 190, 36, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    x_min, x_max = _span([p[0] for p in points])
    y_min, y_max = _span([p[1] for p in points])

    def sx(x: float) -> float:
        return left + (x - x_min) / (x_max - x_min) * plot_w

    def sy(y: float) -> float:
        return top + (1 - (y - y_min) / (y_max - y_min)) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left + plot_w / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>',
    ]
    for tick in _ticks(x_min, x_max):
        x = sx(tick)
        out.append(
            f'<line x1="{x:.1f}" y1="{top + plot_h}" x2="{x:.1f}" y2="{top + plot_h + 4}" stroke="#444"/>'
        )
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 17}" text-anchor="middle">{_fmt(tick)}</text>')
    for tick in _ticks(y_min, y_max):
        y = sy(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(tick)}</text>')
    out.append(
        f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text transform="translate(16 {top + plot_h / 2}) rotate(-90)" text-anchor="middle">'
        f"{escape(y_label)}</text>"
    )
    for i, (name, values) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in values if math.isfinite(y))
        if coords:
            out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        y = top + 10 + 18 * i
        out.append(
            f'<line x1="{left + plot_w + 12}" y1="{y}" x2="{left + plot_w + 32}" y2="{y}" '
            f'stroke="{color}" stroke-width="3"/>'
        )
        out.append(f'<text x="{left + plot_w + 38}" y="{y + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _span(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return low - 0.5, high + 0.5
    return low, high


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.2e}"

"""Draw a parameter sweep (:class:`monitor.job.sweep.Sweep`) as a standalone SVG chart.

The swept values are evenly spaced along x (they are usually a geometric series); the main
metric and the ANN recall share the left axis (0 to 1), the p95 latency has its own axis
on the right, from 0 to its largest value.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final

from monitor.job.sweep import Sweep

WIDTH: Final = 640
HEIGHT: Final = 360
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 72, 28, 48
#: The colour of each series (a colour-blind-safe pair and a grey for latency).
COLOURS: Final = ("#0072b2", "#e69f00", "#555555")


def sweep_svg(sweep: Sweep) -> str:
    """Return the sweep as an SVG document."""
    points = sweep.points
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    step = plot_w / max(len(points) - 1, 1)
    xs = [_LEFT + i * step for i in range(len(points))]
    slowest = max((p.latency_p95 or 0.0 for p in points), default=0.0) or 1.0

    def y(share: float) -> float:
        return _TOP + plot_h * (1.0 - share)

    series: list[tuple[str, list[float | None]]] = [
        (sweep.metric, [p.metric for p in points]),
        (f"ann_recall@{sweep.k}", [p.ann_recall for p in points]),
        (
            "p95 latency",
            [None if p.latency_p95 is None else p.latency_p95 / slowest for p in points],
        ),
    ]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(sweep.suite)}: {escape(sweep.param)} sweep</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        ty = y(tick)
        parts.append(
            f'<line x1="{_LEFT}" y1="{ty:.1f}" x2="{WIDTH - _RIGHT}" y2="{ty:.1f}" stroke="#ddd"/>'
        )
        parts.append(f'<text x="{_LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">{tick:g}</text>')
        ms = tick * slowest * 1000
        parts.append(f'<text x="{WIDTH - _RIGHT + 6}" y="{ty + 4:.1f}">{ms:.3g} ms</text>')
    for x, point in zip(xs, points, strict=True):
        below = HEIGHT - _BOTTOM + 18
        parts.append(f'<text x="{x:.1f}" y="{below}" text-anchor="middle">{point.value}</text>')
    parts.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle">'
        f"{escape(sweep.param)}</text>"
    )
    for (name, values), colour, row in zip(series, COLOURS, range(3), strict=True):
        parts.append(_line(xs, [None if v is None else y(v) for v in values], colour))
        lx = _LEFT + 8 + row * 170
        parts.append(
            f'<rect x="{lx}" y="8" width="12" height="4" fill="{colour}"/>'
            f'<text x="{lx + 16}" y="14">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _over(value: float | None, scale: float) -> float | None:
    return None if value is None else value / scale


def _nan(values: Sequence[float | None]) -> list[float]:
    """Return ``values`` with None as NaN (a gap in matplotlib's line)."""
    return [float("nan") if value is None else value for value in values]


def _line(xs: Sequence[float], ys: Sequence[float | None], colour: str) -> str:
    """Return a polyline through the known points, with a dot on each."""
    known = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in known)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in known)
    return f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>{dots}'


def sweep_png(sweep: Sweep) -> bytes:
    """Return the sweep as a PNG drawn by matplotlib (imported here: not a dependency)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    values = [str(p.value) for p in sweep.points]
    figure, left = pyplot.subplots(figsize=(WIDTH / 100, HEIGHT / 100), dpi=100)
    left.plot(values, _nan([p.metric for p in sweep.points]), marker="o", color=COLOURS[0])
    left.plot(values, _nan([p.ann_recall for p in sweep.points]), marker="o", color=COLOURS[1])
    left.set_ylim(0, 1)
    left.set_xlabel(sweep.param)
    left.legend([sweep.metric, f"ann_recall@{sweep.k}"], loc="lower right")
    right = left.twinx()
    ms = [None if p.latency_p95 is None else p.latency_p95 * 1000 for p in sweep.points]
    right.plot(values, _nan(ms), marker="s", color=COLOURS[2])
    right.set_ylim(bottom=0)
    right.set_ylabel("p95 latency (ms)")
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png")
    pyplot.close(figure)
    return out.getvalue()

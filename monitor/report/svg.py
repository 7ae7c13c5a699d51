"""Inline SVG for the HTML report: trend charts and small interval and bar glyphs.

Everything is drawn here, as text, so the report needs no script and no network. Every string
that reaches the markup goes through :func:`html.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from monitor.report.records import Trend, TrendPoint, Unit

#: Colours, shared with the stylesheet of the HTML report (:mod:`monitor.report.stylesheet`).
SERIES = "#2563eb"
BASELINE = "#475569"
ALERT = "#dc2626"
GOOD = "#16a34a"
MUTED = "#94a3b8"
GRID = "#e2e8f0"

_WIDTH, _HEIGHT = 420, 210
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 64, 14, 40
_MAX_X_LABELS = 5


def trend_chart(
    trend: Trend, *, current: int | None = None, baseline_run: int | None = None
) -> str:
    """Return an SVG line chart of ``trend``: runs left to right, oldest first.

    The baseline's value is a dashed line, where rules fire a dotted red line (when it fits
    the scale), failed runs a red band with a cross; run ``current`` is drawn larger and
    run ``baseline_run`` as a ring. Hovering a point shows its run, time and value.
    """
    points = trend.points
    values = [p.value for p in points if p.measured]
    low, high = _domain(values, trend)
    scale = _unit_scale(trend.unit, max(abs(low), abs(high)))
    ticks = _ticks(low, high)
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM

    def x(index: int) -> float:
        if len(points) <= 1:
            return _LEFT + plot_w / 2
        return _LEFT + plot_w * index / (len(points) - 1)

    def y(value: float) -> float:
        return _TOP + plot_h * (1 - (value - low) / (high - low))

    label = escape(trend.label)
    parts = [
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-label="{label} across runs">',
        f"<title>{label} across runs</title>",
    ]
    step = max(1.0, plot_w / max(len(points) - 1, 1))
    for index, point in enumerate(points):
        if point.status == "failed":
            band = min(step, 14.0)
            parts.append(
                f'<rect x="{x(index) - band / 2:.1f}" y="{_TOP}" width="{band:.1f}" '
                f'height="{plot_h}" fill="{ALERT}" opacity="0.12"/>'
            )
    for tick in ticks:
        parts.append(
            f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="{GRID}"/>'
            f'<text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" class="tick">'
            f"{escape(_format(tick, trend.unit, scale))}</text>"
        )
    parts.append(
        f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{_TOP + plot_h}" stroke="{MUTED}"/>'
    )
    for line, colour, dash, name in (
        (trend.baseline, BASELINE, "6 4", "baseline"),
        (trend.alert_below, ALERT, "2 3", "alert"),
        (trend.alert_above, ALERT, "2 3", "alert"),
    ):
        if line is None or not low <= line <= high:
            continue
        parts.append(
            f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y(line):.1f}" y2="{y(line):.1f}" '
            f'stroke="{colour}" stroke-dasharray="{dash}" stroke-width="1.5">'
            f"<title>{name}: {escape(_format(line, trend.unit, scale, precise=True))}</title>"
            "</line>"
            f'<text x="{_LEFT + plot_w + 4}" y="{y(line) + 4:.1f}" class="ref" fill="{colour}">'
            f"{name}</text>"
        )
    path = _path([(x(i), y(p.value)) if p.measured else None for i, p in enumerate(points)])
    if path:
        parts.append(f'<path d="{path}" fill="none" stroke="{SERIES}" stroke-width="2"/>')
    for index, point in enumerate(points):
        tip = escape(_tooltip(point, trend, scale))
        if not point.measured:
            if point.status == "failed":
                cx, cy = x(index), float(_TOP + plot_h - 6)
                parts.append(
                    f'<g class="failed"><title>{tip}</title>'
                    f'<path d="M{cx - 4:.1f},{cy - 4:.1f}L{cx + 4:.1f},{cy + 4:.1f}'
                    f'M{cx - 4:.1f},{cy + 4:.1f}L{cx + 4:.1f},{cy - 4:.1f}" '
                    f'stroke="{ALERT}" stroke-width="2"/></g>'
                )
            continue
        cx, cy = x(index), y(point.value)
        if point.run_id == baseline_run:
            shape = (
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="#fff" stroke="{BASELINE}" '
                'stroke-width="2"/>'
            )
        elif point.run_id == current:
            shape = (
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5.5" fill="{SERIES}" stroke="#fff" '
                'stroke-width="1.5"/>'
            )
        else:
            shape = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="{SERIES}"/>'
        parts.append(f"<g><title>{tip}</title>{shape}</g>")
    positions = _label_positions(len(points))
    for index in positions:
        parts.append(
            f'<text x="{x(index):.1f}" y="{_HEIGHT - 22}" text-anchor="middle" class="tick">'
            f"run {points[index].run_id}</text>"
        )
    if positions:
        # The first and last labelled runs carry their dates: the span the chart covers.
        for index, anchor in ((positions[0], "start"), (positions[-1], "end")):
            if len(positions) == 1 and anchor == "end":
                break
            parts.append(
                f'<text x="{x(index) - 14 if anchor == "start" else x(index) + 14:.1f}" '
                f'y="{_HEIGHT - 8}" text-anchor="{anchor}" class="tick">'
                f"{points[index].started_at:%Y-%m-%d}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def unit_label(trend: Trend) -> str:
    """Return the unit a trend's axis is labelled in (empty for scores)."""
    if trend.unit != "seconds":
        return ""
    values = [p.value for p in trend.points if p.measured]
    low, high = _domain(values, trend)
    return _unit_scale("seconds", max(abs(low), abs(high)))[1]


def interval_glyph(low: float | None, high: float | None, point: float, span: float) -> str:
    """Return a small SVG of an interval around ``point`` on a scale of ``[-span, span]``.

    Red when the interval lies below zero, green above it, grey when it crosses zero.
    """
    width, height = 120, 14
    span = span if span > 0 else 1.0

    def x(value: float) -> float:
        return width / 2 + (width / 2 - 4) * max(-1.0, min(1.0, value / span))

    colour = MUTED
    if high is not None and high < 0:
        colour = ALERT
    elif low is not None and low > 0:
        colour = GOOD
    parts = [
        f'<svg class="glyph" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'aria-hidden="true">',
        f'<line x1="{width / 2}" x2="{width / 2}" y1="0" y2="{height}" stroke="{MUTED}"/>',
    ]
    if low is not None and high is not None:
        parts.append(
            f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="7" y2="7" stroke="{colour}" '
            'stroke-width="3" stroke-linecap="round"/>'
        )
    parts.append(f'<circle cx="{x(point):.1f}" cy="7" r="3.5" fill="{colour}"/>')
    parts.append("</svg>")
    return "".join(parts)


def bar_glyph(value: float, span: float) -> str:
    """Return a small SVG bar from zero to ``value`` on a scale of ``[-span, span]``."""
    width, height = 120, 14
    span = span if span > 0 else 1.0
    middle = width / 2
    end = middle + (middle - 2) * max(-1.0, min(1.0, value / span))
    colour = ALERT if value < 0 else GOOD
    return (
        f'<svg class="glyph" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'aria-hidden="true">'
        f'<rect x="{min(middle, end):.1f}" y="3" width="{abs(end - middle):.1f}" height="8" '
        f'fill="{colour}"/>'
        f'<line x1="{middle}" x2="{middle}" y1="0" y2="{height}" stroke="{MUTED}"/>'
        "</svg>"
    )


def _domain(values: Sequence[float], trend: Trend) -> tuple[float, float]:
    """Return the value range to draw: the data and baseline, and alert lines that are near."""
    core = [*values, *([trend.baseline] if trend.baseline is not None else [])]
    if not core:
        return (0.0, 1.0) if trend.unit == "score" else (0.0, 0.001)
    low, high = min(core), max(core)
    reach = max(high - low, abs(high) * 0.1, 1e-12)
    for line in (trend.alert_below, trend.alert_above):
        # A threshold far from the data would flatten the series; it is then left off.
        if line is not None and low - reach <= line <= high + reach:
            low, high = min(low, line), max(high, line)
    pad = max((high - low) * 0.12, abs(high) * 0.02, 1e-9)
    low, high = low - pad, high + pad
    if trend.unit == "score" and min(core) >= 0:
        low = max(low, 0.0)
    if trend.unit == "seconds":
        low = max(low, 0.0)
    if trend.unit == "score" and max(core) <= 1:
        high = min(high, 1.0)
    return low, high


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _unit_scale(unit: Unit, top: float) -> tuple[float, str]:
    if unit != "seconds":
        return 1.0, ""
    if top >= 1:
        return 1.0, "s"
    if top >= 1e-3:
        return 1e-3, "ms"
    return 1e-6, "µs"


def _format(value: float, unit: Unit, scale: tuple[float, str], *, precise: bool = False) -> str:
    if unit == "seconds":
        number = value / scale[0]
        return f"{number:.3g} {scale[1]}" if precise else f"{number:.3g}"
    return f"{value:.4f}" if precise else f"{value:.3g}"


def _tooltip(point: TrendPoint, trend: Trend, scale: tuple[float, str]) -> str:
    when = point.started_at.strftime("%Y-%m-%d %H:%M UTC")
    if point.status == "failed":
        return f"run {point.run_id} failed ({when})" + (f": {point.error}" if point.error else "")
    if not point.measured:
        return f"run {point.run_id} ({when}): {trend.label} not measured"
    value = _format(point.value, trend.unit, scale, precise=True)
    return f"run {point.run_id} ({when}): {trend.label} {value}"


def _path(coordinates: Sequence[tuple[float, float] | None]) -> str:
    """Return an SVG path through the points, broken where a point is missing."""
    out = []
    pen_down = False
    for coordinate in coordinates:
        if coordinate is None:
            pen_down = False
            continue
        out.append(f"{'L' if pen_down else 'M'}{coordinate[0]:.1f},{coordinate[1]:.1f}")
        pen_down = True
    return "".join(out)


def _label_positions(count: int) -> list[int]:
    if count <= _MAX_X_LABELS:
        return list(range(count))
    step = math.ceil((count - 1) / (_MAX_X_LABELS - 1))
    positions = list(range(0, count - 1, step))
    if count - 1 - positions[-1] < step / 2:
        positions.pop()
    return [*positions, count - 1]

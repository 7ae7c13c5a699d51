"""Inline SVG sparklines for the suites page (the trend charts are the report's)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

_WIDTH, _HEIGHT, _PAD = 120, 28, 2


def sparkline(label: str, values: Sequence[float]) -> str:
    """Return a small SVG line of ``values`` (oldest first) on a 0..1 scale; NaN is a gap."""
    title = escape(f"{label}: " + ", ".join("-" if math.isnan(v) else f"{v:.3f}" for v in values))
    parts = [
        f'<svg class="spark" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{title}">',
        f"<title>{title}</title>",
    ]
    count = len(values)
    path: list[str] = []
    for index, value in enumerate(values):
        if math.isnan(value):
            continue
        x = _PAD + (_WIDTH - 2 * _PAD) * (index / (count - 1) if count > 1 else 0.5)
        y = _PAD + (_HEIGHT - 2 * _PAD) * (1 - min(max(value, 0.0), 1.0))
        path.append(f"{'M' if not path else 'L'}{x:.1f},{y:.1f}")
    if path:
        parts.append(
            f'<path d="{" ".join(path)}" fill="none" stroke="#2563eb" stroke-width="1.5"/>'
        )
    parts.append("</svg>")
    return "".join(parts)

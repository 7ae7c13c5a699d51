"""The reading bands of a report's means, as HTML: a badge beside each mean and a legend.

The bands themselves (families, edges, what each means) are :mod:`monitor.metrics.bands`';
this module only draws them, so the HTML report and the web app show the same words.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from monitor.metrics.bands import BAND_NAMES, MEANINGS, Bands


def band_cell(bands: Bands, metric: str, value: float | None) -> str:
    """Return a table cell with the band of ``metric``'s mean ``value``, its meaning and
    edges on hover; an empty cell for a figure without bands."""
    band = bands.of(metric, value)
    if band is None:
        return "<td></td>"
    title = html.escape(f"{band.meaning} ({band.family}: {band.describe()})", quote=True)
    return f'<td><span class="band b-{band.name}" title="{title}">{band.name}</span></td>'


def band_legend(bands: Bands, means: Mapping[str, float]) -> str:
    """Return what each band shown among ``means`` means, best first ("" when none)."""
    names = {band.name for m, v in means.items() if (band := bands.of(m, v)) is not None}
    if not names:
        return ""
    items = "; ".join(
        f"<b>{name}</b>: {html.escape(MEANINGS[name])}" for name in BAND_NAMES if name in names
    )
    return (
        f'<p class="meta" id="bands">Band of the current mean: {items}. Bands are a reading '
        "aid, never an alert: the rules alone decide what fires.</p>"
    )

"""Text bound for a terminal, made inert: control characters are taken out at the output edge.

Query texts, doc ids and error messages come from eval sets and search backends; an ESC in one
would drive the terminal that shows a report or an alert (move the cursor, retitle the
window, hide lines), and a BEL rings it. Records keep the text as it was; only what is written
to a terminal passes through :func:`printable`.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the
# bidirectional overrides and isolates, which can reorder what a reader sees.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """Return ``text`` without control characters; tabs and newlines are kept."""
    return _CONTROL.sub("", text)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """Return ``count`` with its noun in the number it takes: ``1 grade``, ``2 grades``."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"

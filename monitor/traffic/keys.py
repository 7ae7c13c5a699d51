"""The key that groups a logged query with its variants: NFKC, casefold, collapsed spaces.

Two searches for ``"Café  Menu"`` and ``"café menu"`` are one query of the logs: the key is
the text in Unicode normal form NFKC, case-folded (so ``"Straße"`` and ``"STRASSE"`` meet),
with every run of white space made one space and the ends stripped. The raw text is kept
beside the key; an eval-set query is matched to the logs by the same key.
"""

from __future__ import annotations

import re
import unicodedata

_SPACES = re.compile(r"\s+")


def query_key(text: str) -> str:
    """Return the normalised key of the query ``text``."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()

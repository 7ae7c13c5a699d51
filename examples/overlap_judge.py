"""An offline judge for label holes: grades a (query, passage) pair by the query's terms
the passage holds, as a ``python`` judge plug-in.

No model and no network: it lower-cases both texts, drops English stop words and counts
the share of the query's remaining terms (suffixes ``s``, ``es``, ``ing``, ``ed`` folded)
that the passage contains. At least ``high`` of them is grade 2, at least ``low`` grade 1,
less grade 0. It is crude next to a person or an LLM, which is why its grades form a layer
of their own that gates no alert unless the suite says ``alert_labels: all``::

    judge:
      kind: python
      target: examples.overlap_judge:make_judge
      factory: true
      path: ..
      kwargs: {low: 0.4, high: 0.7}
      max_per_run: 50

Try it on one pair: ``python -m examples.overlap_judge "refund a double charge" "We
refund a double charge within 5 days."``
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "our",
        "should",
        "that",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "after",
        "before",
        "not",
        "any",
    ]
)
_WORD = re.compile(r"[a-z0-9]+")


def terms(text: str) -> set[str]:
    """Return the text's content terms, lower-cased, stop words dropped, suffixes folded."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        for suffix in ("ing", "es", "ed", "s"):
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        out.add(word)
    return out


def make_judge(low: float = 0.4, high: float = 0.7) -> Callable[[str, str], int]:
    """Return a judge ``(query, passage) -> 0, 1 or 2`` with these share thresholds."""
    if not 0 < low <= high <= 1:
        raise ValueError(f"expected 0 < low <= high <= 1, found low={low}, high={high}")

    def judge(query: str, passage: str) -> int:
        wanted = terms(query)
        if not wanted:
            return 0
        share = len(wanted & terms(passage)) / len(wanted)
        return 2 if share >= high else 1 if share >= low else 0

    return judge


if __name__ == "__main__":
    print(make_judge()(sys.argv[1], sys.argv[2]))

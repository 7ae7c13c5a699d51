"""An offline question generator for ``evalset generate --generator python``.

No model and no network: it picks two of the passage's content words at random (``seed``)
and fills a question template with them; its third question and beyond copy the passage's
opening words, as a careless model does, so the leakage check has something to reject::

    retrieval-monitor evalset generate --bundled larkfield --per-doc 3 --max-docs 20 \\
        --seed 7 --generator python --function examples.synth_questions:questions \\
        --path . --output draft.jsonl

Try it on one passage: ``python -m examples.synth_questions "Refunds for a double charge
are paid within 5 business days."``
"""

from __future__ import annotations

import random
import re
import sys

from examples.overlap_judge import STOPWORDS

TEMPLATES = (
    "What should a customer know about {a} when {b} comes up?",
    "How does the {a} rule work for {b}?",
    "Where can I find details on {a} and {b}?",
    "Is there guidance about {a} for {b}?",
)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]+")


def questions(passage: str, n: int, seed: int) -> list[str]:
    """Return ``n`` questions about ``passage``, the same ones for the same ``seed``."""
    rng = random.Random(seed)
    found = [w.lower() for w in _WORD.findall(passage) if len(w) > 3 and w.lower() not in STOPWORDS]
    content = list(dict.fromkeys(found))
    out = []
    for i in range(n):
        if i >= 2 or len(content) < 2:
            out.append("Is it true that " + " ".join(passage.split()[:9]).rstrip(".,") + "?")
            continue
        a, b = rng.sample(content, 2)
        out.append(rng.choice(TEMPLATES).format(a=a, b=b))
    return out


if __name__ == "__main__":
    print("\n".join(questions(sys.argv[1], 3, 0)))

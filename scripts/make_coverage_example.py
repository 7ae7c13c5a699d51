"""Write the coverage example of the README (``examples/coverage/``): an eval set whose
queries judge their relevant document and nine non-relevant ones, and three saved runs.

- ``baseline.json``: every query's relevant document first, then its judged non-relevant ones;
- ``fresh.json``: in 30 of the 40 queries two new documents nobody judged come first;
- ``worse.json``: in the same 30 queries two judged non-relevant documents come first.

    python3 scripts/make_coverage_example.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "examples" / "coverage"
QUERIES = 40
MOVED = 30


def main() -> None:
    """Write the eval set and the three runs."""
    OUT.mkdir(parents=True, exist_ok=True)
    evalset, baseline, fresh, worse = [], {}, {}, {}
    for i in range(QUERIES):
        qid = f"Q{i + 1:02d}"
        relevant = f"doc-{i + 1:02d}-answer"
        others = [f"doc-{i + 1:02d}-other-{j}" for j in range(1, 10)]
        evalset.append(
            {
                "id": qid,
                "query": f"question {i + 1}",
                "relevant": {relevant: 1, **dict.fromkeys(others, 0)},
            }
        )
        ranking = [relevant, *others]
        baseline[qid] = ranking
        moved = i < MOVED
        new = [f"new-{i + 1:02d}-a", f"new-{i + 1:02d}-b"]
        fresh[qid] = [*new, *ranking][:10] if moved else ranking
        worse[qid] = [others[0], others[1], relevant, *others[2:]] if moved else ranking
    (OUT / "evalset.jsonl").write_text("".join(json.dumps(q) + "\n" for q in evalset))
    for name, run in (("baseline", baseline), ("fresh", fresh), ("worse", worse)):
        (OUT / f"{name}.json").write_text(json.dumps(run, indent=0) + "\n")


if __name__ == "__main__":
    main()

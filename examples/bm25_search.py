"""A real search for the Larkfield demo: BM25 (the bm25s package) over the passages' texts.

Install the extra, then run the demo from the repository root::

    pip install -e '.[examples]'
    python -m examples.bm25_search

As a search plug-in, this module's ``make_search`` is a factory: it builds the index once and
returns the search function. In a suite (the config file sits in ``config/``, so ``path``
leads one folder up, to the repository root, where ``examples`` imports from)::

    search:
      kind: python
      target: examples.bm25_search:make_search
      factory: true
      path: ..
      kwargs: {stopwords: en}

or in code: ``build_search("python", {"target": "examples.bm25_search:make_search",
"factory": True, "path": "."})`` from the repository root. Without ``path``, set
``PYTHONPATH=.`` (an installed ``retrieval-monitor`` script does not look in the current
folder by itself).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

import bm25s
from bm25s.tokenization import Tokenizer

from monitor.records import Hit, MetaValue


class BM25Search:
    """BM25 over a list of passages: ``(query, k) -> hits`` with scores and texts.

    Only passages that share a term with the query are returned, as a full-text engine does,
    so a query with no known term gets no hits.
    """

    def __init__(
        self,
        passages: Sequence[Mapping[str, str]],
        *,
        stopwords: str | list[str] = "en",
        k1: float = 1.5,
        b: float = 0.75,
    ) -> None:
        if not passages:
            raise ValueError("BM25Search needs at least one passage")
        self._ids = [passage["id"] for passage in passages]
        self._texts = [passage["text"] for passage in passages]
        self._tokenizer = Tokenizer(stopwords=stopwords)
        corpus = self._tokenizer.tokenize(self._texts, show_progress=False)
        self._index = bm25s.BM25(k1=k1, b=b)
        self._index.index(corpus, show_progress=False)
        self._settings = f"k1={k1} b={b}"

    def __call__(self, query: str, k: int) -> list[Hit]:
        """Return the ``k`` best passages for ``query``, best first."""
        tokens = self._tokenizer.tokenize([query], update_vocab=False, show_progress=False)
        documents, scores = self._index.retrieve(
            tokens, k=min(k, len(self._ids)), show_progress=False
        )
        return [
            Hit(self._ids[doc], float(score), self._texts[doc])
            for doc, score in zip(documents[0].tolist(), scores[0].tolist(), strict=True)
            if score > 0
        ]

    def stats(self) -> dict[str, MetaValue]:
        """Report the index size and the scorer's version, recorded with each run."""
        return {
            "index_size": len(self._ids),
            "model_version": f"bm25s-{bm25s.__version__} {self._settings}",
        }


def make_search(
    language: str | None = None,
    stopwords: str | list[str] = "en",
    k1: float = 1.5,
    b: float = 0.75,
) -> BM25Search:
    """Index the Larkfield passages (those in ``language`` when given) and return the search."""
    from monitor.evalset.bundled import larkfield_passages

    passages = [
        passage
        for passage in larkfield_passages()
        if language is None or passage.get("language") == language
    ]
    return BM25Search(passages, stopwords=stopwords, k1=k1, b=b)


def main(argv: list[str] | None = None) -> int:
    """Run the Larkfield set through BM25 and print its metrics beside the saved runs'."""
    from monitor import evaluate
    from monitor.evalset.bundled import LARKFIELD_METHODS, larkfield_evalset, larkfield_run
    from monitor.runner import run_queries
    from monitor.search import build_search

    parser = argparse.ArgumentParser(description="BM25 over the Larkfield passages.")
    parser.add_argument("-k", type=int, default=10, help="hits per query (default 10)")
    args = parser.parse_args(argv)
    evalset = larkfield_evalset()
    search = build_search(
        "python", {"target": "examples.bm25_search:make_search", "factory": True, "path": "."}
    )
    result = run_queries(evalset, search, k=args.k, progress=False, label="bm25")
    metrics = ["hit_rate@1", "recall@5", "recall@10", "ndcg@10", "mrr@10"]
    print(f"{'method':<16}" + "".join(f"{name:>12}" for name in metrics))
    rows = {"bm25 (live)": evaluate(evalset, result, metrics=metrics).means}
    for method in LARKFIELD_METHODS:
        rows[f"{method} (saved)"] = evaluate(evalset, larkfield_run(method), metrics=metrics).means
    for name, means in rows.items():
        print(f"{name:<16}" + "".join(f"{means[metric]:>12.3f}" for metric in metrics))
    latency = result.latency
    print(
        f"\nbm25: {result.total} queries, {result.empty} with no hits, "
        f"p50 {1000 * (latency.p50 or 0):.2f} ms, p95 {1000 * (latency.p95 or 0):.2f} ms, "
        f"stats {dict(result.search_stats)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

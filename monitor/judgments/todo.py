"""The labeling queue: what the runs retrieved that nobody has judged (pooling).

:func:`todo_items` pools the top ``depth`` of every run given (a run and its baseline),
keeps the (query, doc) pairs the effective judgments lack, deduplicated, each with its best
rank and the pipelines that retrieved it, ordered by rank then query id. :func:`write_todo`
writes them as CSV (with an empty ``grade`` column to fill in), JSONL or TREC qrels lines.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monitor.errors import UsageError
from monitor.evalset import EvalSet
from monitor.store import RunRecord

#: Gives a document's text by id, or None when it is not known. The corpus beside the eval
#: set fills it; until then only texts the search's hits carried are known.
DocText = Callable[[str], "str | None"]

#: The output formats of the labeling queue.
TODO_FORMATS = ("csv", "jsonl", "trec")
#: The columns of the labeling queue's CSV, in order; ``grade`` is left empty to fill in.
TODO_COLUMNS = ("query_id", "query", "doc_id", "best_rank", "pipelines", "doc_text", "grade")


def no_doc_text(doc_id: str) -> str | None:
    """Know no document text."""
    return None


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One unjudged (query, doc) pair of the labeling queue."""

    query_id: str
    query: str
    doc_id: str
    best_rank: int
    pipelines: tuple[str, ...]
    doc_text: str | None = None


def todo_items(
    evalset: EvalSet,
    runs: Sequence[RunRecord],
    *,
    depth: int = 10,
    doc_text: DocText = no_doc_text,
) -> list[TodoItem]:
    """Return the unjudged pairs in the top ``depth`` of ``runs``, best rank then query id.

    A pair counts as judged when the eval set grades it at all (grade 0 included). Queries
    the eval set does not hold and failed queries are left out.
    """
    if depth < 1:
        raise UsageError(f"depth must be at least 1, not {depth}")
    best: dict[tuple[str, str], int] = {}
    pipelines: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        for record in run.queries:
            query = evalset.get(record.query_id)
            if query is None or record.error_type is not None:
                continue
            for rank, doc in enumerate(record.retrieved_ids[:depth], start=1):
                if doc in query.judgments:
                    continue
                key = (query.id, doc)
                best[key] = min(rank, best.get(key, rank))
                names = pipelines.setdefault(key, [])
                if run.pipeline not in names:
                    names.append(run.pipeline)
    ordered = sorted(best, key=lambda key: (best[key], key[0], key[1]))
    return [
        TodoItem(
            query_id=qid,
            query=evalset[qid].text,
            doc_id=doc,
            best_rank=best[(qid, doc)],
            pipelines=tuple(pipelines[(qid, doc)]),
            doc_text=doc_text(doc),
        )
        for qid, doc in ordered
    ]


def write_todo(items: Sequence[TodoItem], format: str) -> str:
    """Return the queue as text: ``csv`` (header, empty ``grade``), ``jsonl`` or ``trec``.

    The TREC form is qrels lines ``qid 0 docid -1`` (ungraded) for tools that take a pool.
    """
    if format == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(TODO_COLUMNS)
        for item in items:
            writer.writerow(
                [
                    item.query_id,
                    item.query,
                    item.doc_id,
                    item.best_rank,
                    " ".join(item.pipelines),
                    item.doc_text or "",
                    "",
                ]
            )
        return out.getvalue()
    if format == "jsonl":
        return "".join(
            json.dumps(
                {
                    "query_id": item.query_id,
                    "query": item.query,
                    "doc_id": item.doc_id,
                    "best_rank": item.best_rank,
                    "pipelines": list(item.pipelines),
                    "doc_text": item.doc_text,
                    "grade": None,
                },
                ensure_ascii=False,
            )
            + "\n"
            for item in items
        )
    if format == "trec":
        return "".join(f"{item.query_id} 0 {item.doc_id} -1\n" for item in items)
    raise UsageError(f"unknown todo format {format!r}; known: {', '.join(TODO_FORMATS)}")

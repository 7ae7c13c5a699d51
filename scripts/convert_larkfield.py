"""Convert the Larkfield saved search results into the monitor's bundled example set.

Usage::

    python3 scripts/convert_larkfield.py SRC OUTDIR [--no-verify]

``SRC`` is ``rankings.json`` from the public repository usmanahmed99/nextia-learning-labs
(path C11/snapshots/end-of-m03/data/retrieval/rankings.json). ``OUTDIR`` receives
``evalset.jsonl``, ``runs/<method>.json``, ``passages.jsonl`` and ``README.md``; the
package ships them from ``monitor/data/larkfield/``. The output depends on the input only:
running the script twice gives identical files. The input's SHA-256 is checked unless
``--no-verify`` is given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from monitor.errors import InputError, MonitorError
from monitor.evalset import EvalSet

SOURCE_SHA256 = "3fa85c1d84171196cdd448bab5c1f586f5b8da72bbfa7b393a1516abe88bef56"
SOURCE_REPOSITORY = "usmanahmed99/nextia-learning-labs"
SOURCE_PATH = "C11/snapshots/end-of-m03/data/retrieval/rankings.json"
SOURCE_COMMIT = "0b31e75d85df9187f25f828f929827c7265c1ce6"
QUESTION_KEYS = {"id", "kind", "language", "question", "relevant"}
PASSAGE_KEYS = ("doc_id", "section", "version", "language", "access")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the conversion; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="rankings.json")
    parser.add_argument("outdir", type=Path, help="folder to write the bundled files to")
    parser.add_argument("--no-verify", action="store_true", help="do not check the input's SHA-256")
    args = parser.parse_args(argv)
    try:
        convert(args.src, args.outdir, verify=not args.no_verify)
    except MonitorError as error:
        print(f"convert_larkfield: {error}", file=sys.stderr)
        return 1
    return 0


def convert(src: Path, outdir: Path, *, verify: bool = True) -> None:
    """Write the bundled files for the rankings file ``src`` into ``outdir``."""
    try:
        data = src.read_bytes()
    except OSError as error:
        raise InputError(src, "a readable file", found=error.strerror) from None
    digest = hashlib.sha256(data).hexdigest()
    if verify and digest != SOURCE_SHA256:
        raise InputError(src, f"SHA-256 {SOURCE_SHA256} (or pass --no-verify)", found=digest)
    try:
        source = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(src, f"UTF-8 JSON ({error})") from None
    questions, passages, rankings = _checked(source, src)

    evalset = EvalSet(name="larkfield")
    for question in sorted(questions, key=lambda item: str(item["id"])):
        evalset.add(
            question["id"],
            question["question"],
            relevant=question["relevant"],
            metadata={"kind": question["kind"], "language": question["language"]},
        )
    (outdir / "runs").mkdir(parents=True, exist_ok=True)
    evalset.save(outdir / "evalset.jsonl")
    for method, run in sorted(rankings.items()):
        _write(outdir / "runs" / f"{method}.json", _run_json(run))
    lines = []
    for passage_id, passage in sorted(passages.items()):
        record = {"id": passage_id, **{key: passage[key] for key in PASSAGE_KEYS}}
        record["text"] = passage["start"]
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    _write(outdir / "passages.jsonl", "".join(lines))
    _write(outdir / "README.md", _readme(digest, evalset, rankings, len(passages)))


def _checked(
    source: object, src: Path
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, list[str]]]]:
    """Return questions, passages and rankings after checking the shape this script uses."""
    if not isinstance(source, dict):
        raise InputError(src, "a JSON object", found=type(source).__name__)
    for key in ("questions", "passages", "rankings"):
        if key not in source:
            raise InputError(src, f"a top-level key {key!r}")
    questions, passages, rankings = source["questions"], source["passages"], source["rankings"]
    if not isinstance(questions, list) or not all(
        isinstance(q, dict) and set(q) == QUESTION_KEYS for q in questions
    ):
        raise InputError(src, "questions: objects with keys " + ", ".join(sorted(QUESTION_KEYS)))
    if not isinstance(passages, dict) or not all(
        isinstance(p, dict) and {*PASSAGE_KEYS, "start"} <= set(p) for p in passages.values()
    ):
        raise InputError(src, "passages: objects with doc_id, section, version, ... and start")
    ids = {str(q["id"]) for q in questions}
    if not isinstance(rankings, dict):
        raise InputError(src, "rankings: an object of method -> question id -> passage ids")
    for method, run in rankings.items():
        if not isinstance(run, Mapping) or set(run) != ids:
            raise InputError(src, f"rankings[{method!r}] with an entry for every question")
        for question_id, ranked in run.items():
            if not isinstance(ranked, list) or not all(doc in passages for doc in ranked):
                raise InputError(
                    src, f"rankings[{method!r}][{question_id!r}]: a list of known passage ids"
                )
    return questions, passages, rankings


def _run_json(run: Mapping[str, list[str]]) -> str:
    """Return ``{qid: [doc ids best first]}`` as JSON, one query per line, ids in order."""
    rows = [f" {json.dumps(qid)}: {json.dumps(run[qid])}" for qid in sorted(run)]
    return "{\n" + ",\n".join(rows) + "\n}\n"


def _write(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 with ``\\n`` line ends."""
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def _readme(
    digest: str, evalset: EvalSet, rankings: Mapping[str, Mapping[str, list[str]]], passages: int
) -> str:
    """Return the README of the bundled folder, with the counts taken from the data."""
    answerable = sum(query.answerable for query in evalset)
    unanswerable = [query.id for query in evalset if not query.answerable]
    labels = sum(len(query.relevant_ids) for query in evalset)
    short = [
        f"{method} {qid}: {len(ranked)}"
        for method, run in sorted(rankings.items())
        for qid, ranked in sorted(run.items())
        if len(ranked) < 10
    ]
    shorter = "; ".join(short) if short else "none"
    text = f"""# Larkfield example eval set

The bundled demo set: questions about Larkfield, a synthetic collection of company policy
documents, with their relevant passages and the saved top-10 rankings of several search
methods. Generated by `scripts/convert_larkfield.py`; do not edit by hand.

## Files

- `evalset.jsonl`: {len(evalset)} queries in id order, {answerable} of them answerable, with
  {labels} relevance labels (grade 1 each). `metadata` holds the source's `kind` and
  `language`. The {len(unanswerable)} queries {", ".join(unanswerable)} have no relevant
  passage (`kind: unanswerable`: the documents do not answer them). They are kept in the
  set; the source's course leaves them out of every mean.
- `runs/<method>.json`: `{{question id: [passage ids, best first]}}`, for every question,
  for the methods {", ".join(sorted(rankings))}. Lists shorter than 10: {shorter}. There
  are no scores, only ranks.
- `passages.jsonl`: {passages} passages (`id`, `doc_id`, `section`, `version`, `language`,
  `access`, `text`). `text` is the source's `start` field: the first 18 words of the
  passage followed by ` …`, or the whole passage when shorter; it is not the full text.

## Source

- Repository: {SOURCE_REPOSITORY} (public)
- Path: {SOURCE_PATH}
- Commit: {SOURCE_COMMIT}
- SHA-256 of the source file: `{digest}`

Only the data file is used; no code from that repository is copied.

## License

CC0, per the source file's own `about` field ("Larkfield's synthetic policy collection,
CC0").

## Provenance caveat

The provenance statements in copies of the file in the source repository disagree about
who wrote the questions and relevance labels, and one of them says that no person has
reviewed them. Treat the labels as one unreviewed labelling, not as a gold standard.
"""
    return _reflow(text)


def _reflow(text: str, width: int = 90) -> str:
    """Return Markdown ``text`` with its paragraphs and bullets wrapped at ``width``."""
    blocks: list[str] = []
    for block in text.split("\n\n"):
        if block.startswith(("#", "- Repository")):
            blocks.append(block)
            continue
        items = block.replace("\n- ", "\n\0- ").split("\n\0")
        blocks.append(
            "\n".join(
                textwrap.fill(
                    " ".join(item.split()),
                    width,
                    subsequent_indent="  " if item.startswith("- ") else "",
                    break_on_hyphens=False,
                    break_long_words=False,
                )
                for item in items
            )
        )
    return "\n\n".join(blocks).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.exit(main())

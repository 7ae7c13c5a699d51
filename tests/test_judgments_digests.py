"""The queries fingerprint and judgments version keep the values stored runs hold."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import monitor.judgments.merge
from monitor.evalset import EvalSet
from monitor.judgments import labels_of
from monitor.store import RunLabels


def reference_labels(evalset: EvalSet) -> RunLabels:
    """Return both digests by their documented definition: json.dumps of the sorted rows."""

    def digest(rows: object) -> str:
        text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    ordered = sorted(evalset, key=lambda query: query.id)
    return RunLabels(
        digest([[query.id, query.text] for query in ordered]),
        digest([[query.id, sorted(query.judgments.items())] for query in ordered]),
    )


def sample() -> EvalSet:
    """Return three queries out of id order, with non-ASCII and control characters."""
    evalset = EvalSet("s")
    evalset.add("q2", 'Café "quoted"\n\tline', relevant={"d9": 2, "d10": 0, "é": 1})
    evalset.add("q1", "plain", relevant={})
    evalset.add("q10", "\x7f\u2028", relevant={"a": -1})
    return evalset


def test_the_digests_of_a_set_are_those_stored_runs_hold() -> None:
    """The digests of a fixed set are the values its runs were stored with."""
    assert RunLabels(
        "sha256:f26d130e8f076df61aeeeb19f7e1f06347a3f10a1b97eb7f366d50e852e7097b",
        "sha256:20d60bb5e3a6d41d319487c19dae3c65c110a764a5f91463c89b05a87c39259d",
    ) == labels_of(sample())


def test_digests_written_across_several_blocks_are_those_of_one_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hashing the rows a block at a time gives the digests of the whole set at once."""
    monkeypatch.setattr(monitor.judgments.merge, "_DIGEST_BLOCK", 2)
    assert reference_labels(sample()) == labels_of(sample())


#: Strings an eval set accepts: any code point but a lone surrogate (and in ids, but NUL).
unicode = st.characters(blacklist_categories=("Cs",))
ids = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
queries = st.dictionaries(
    st.text(ids, min_size=1, max_size=5),
    st.tuples(
        st.text(unicode, max_size=8),
        st.dictionaries(st.text(ids, min_size=1, max_size=4), st.integers(-2, 3), max_size=4),
    ),
    max_size=8,
)


@pytest.mark.slow
@given(queries)
@settings(max_examples=200, deadline=None)
def test_the_digests_follow_their_documented_definition(
    rows: dict[str, tuple[str, dict[str, int]]],
) -> None:
    """Any set's digests are the SHA-256 of json.dumps of its sorted rows."""
    evalset = EvalSet("s")
    for query_id, (text, grades) in rows.items():
        evalset.add(query_id, text, relevant=grades)
    assert reference_labels(evalset) == labels_of(evalset)

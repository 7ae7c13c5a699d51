"""Property tests: random eval sets round-trip through every format and keep their fingerprint."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.errors import InputError
from monitor.evalset import FORMATS, EvalSet
from monitor.evalset.formats import Contents, format_evalset
from monitor.evalset.model import canonical_json
from monitor.records import MetaValue, Query

SUFFIX = {"jsonl": ".jsonl", "json": ".json", "csv": ".csv", "yaml": ".yaml", "trec": ".qrels"}
# Surrogates cannot be written as UTF-8; everything else, controls included, must survive.
ANY_TEXT = st.characters(exclude_categories=["Cs"])
# Whitespace-separated TREC files hold ids without whitespace; CSV items split on ';'.
TOKEN = st.text(st.characters(exclude_categories=["Cs", "Zs", "Zl", "Zp", "Cc"]), min_size=1)
CSV_ID = st.text(st.characters(exclude_categories=["Cs", "Zs", "Zl", "Zp", "Cc"]), min_size=1)
GRADES = st.integers(min_value=-3, max_value=10**12)
METADATA_VALUES: st.SearchStrategy[MetaValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(ANY_TEXT),
)


#: Any id an eval set holds: any text of valid Unicode without a NUL (no store keeps one).
ANY_ID = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1)
ANY_STRING = st.text(ANY_TEXT)
ANY_METADATA = st.dictionaries(ANY_ID, METADATA_VALUES, max_size=3)


@st.composite
def evalsets(
    draw: st.DrawFn,
    ids: st.SearchStrategy[str] = ANY_ID,
    texts: st.SearchStrategy[str] = ANY_STRING,
    metadata: st.SearchStrategy[dict[str, MetaValue]] = ANY_METADATA,
) -> EvalSet:
    """Draw an eval set of 1 to 6 queries with unique ids and graded judgments."""
    query_ids = draw(st.lists(ids, min_size=1, max_size=6, unique=True))
    evalset = EvalSet(name=draw(st.text(ANY_TEXT, max_size=10)))
    for query_id in query_ids:
        judgments = draw(st.dictionaries(ids, GRADES, max_size=4))
        evalset.add(query_id, draw(texts), relevant=judgments, metadata=draw(metadata))
    return evalset


def round_trip(evalset: EvalSet, fmt: str) -> EvalSet:
    """Save ``evalset`` in ``fmt`` to a fresh folder and load it back."""
    with TemporaryDirectory() as folder:
        path = Path(folder) / f"set{SUFFIX[fmt]}"
        queries = Path(folder) / "set.tsv" if fmt == "trec" else None
        evalset.save(path, queries=queries)
        return EvalSet.load(path, queries=queries, name=evalset.name)


@pytest.mark.slow
@given(evalsets())
def test_jsonl_round_trip_keeps_everything(evalset: EvalSet) -> None:
    """Any eval set comes back from JSONL equal, with the same fingerprint."""
    loaded = round_trip(evalset, "jsonl")
    assert (evalset.queries, evalset.fingerprint) == (loaded.queries, loaded.fingerprint)


def in_memory(evalset: EvalSet, fmt: str) -> EvalSet:
    """Format ``evalset`` as ``fmt`` text and parse it back, without touching the disk."""
    text = format_evalset(Contents(evalset.name, evalset.queries), fmt)
    return EvalSet.parse(text, fmt, "memory", name=evalset.name)


@pytest.mark.slow
@given(evalsets())
def test_json_and_yaml_round_trips_keep_everything(evalset: EvalSet) -> None:
    """Any eval set comes back from JSON and from YAML equal, name included."""
    text = format_evalset(Contents(evalset.name, evalset.queries), "yaml")
    loaded = EvalSet.parse(text, "yaml", "memory")
    assert (evalset, evalset) == (in_memory(evalset, "json"), loaded)


@pytest.mark.slow
@given(evalsets(ids=CSV_ID.filter(lambda s: ";" not in s), metadata=st.just({})))
def test_csv_round_trip_keeps_queries(evalset: EvalSet) -> None:
    """Eval sets without metadata come back from CSV equal (ids without ';' or spaces)."""
    assert evalset.queries == in_memory(evalset, "csv").queries


@pytest.mark.slow
@settings(max_examples=50)  # two files written per example
@given(
    evalsets(
        ids=TOKEN.filter(lambda id_: not id_.startswith("#")),  # a comment line in qrels
        texts=st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n")),
        metadata=st.just({}),
    ).filter(lambda evalset: any(query.judgments for query in evalset))
)
def test_trec_round_trip_keeps_queries(evalset: EvalSet) -> None:
    """Judged eval sets come back from qrels plus queries TSV equal."""
    assert evalset.queries == round_trip(evalset, "trec").queries


@pytest.mark.slow
@given(evalsets(), st.randoms(use_true_random=False))
def test_fingerprint_ignores_query_and_judgment_order(evalset: EvalSet, rng: random.Random) -> None:
    """Shuffling queries and their judgments leaves the fingerprint unchanged."""
    shuffled = list(evalset.queries)
    rng.shuffle(shuffled)
    reordered = EvalSet(name="other")
    for query in shuffled:
        items = list(query.judgments.items())
        rng.shuffle(items)
        reordered.add(Query(query.id, query.text, dict(items), {}))
    assert evalset.fingerprint == reordered.fingerprint


@given(st.sampled_from([f for f in FORMATS if f != "trec"]), st.text(ANY_TEXT, max_size=200))
def test_any_text_loads_or_raises_input_error(fmt: str, text: str) -> None:
    """Arbitrary text either parses or raises InputError, never another exception."""
    with contextlib.suppress(InputError):
        EvalSet.parse(text, fmt, "fuzz")


KEYS = st.sampled_from(["id", "query", "relevant", "metadata", "name", "queries", "d1", "q1"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_TEXT, max_size=4) | KEYS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(KEYS | st.text(ANY_TEXT, max_size=3), children, max_size=4)
    ),
    max_leaves=16,
)


@pytest.mark.slow
@given(st.sampled_from(["jsonl", "json", "yaml"]), JSON_VALUES)
def test_any_json_value_loads_or_raises_input_error(fmt: str, value: object) -> None:
    """Any JSON or YAML value either is an eval set or raises InputError, never another error."""
    text = yaml.safe_dump(value) if fmt == "yaml" else json.dumps(value)
    with contextlib.suppress(InputError):
        EvalSet.parse(text, fmt, "fuzz")


FINGERPRINT_ROWS = st.lists(
    st.tuples(
        ANY_ID,
        ANY_STRING,
        st.lists(st.tuples(ANY_ID, st.integers(min_value=-(2**63), max_value=2**63 - 1))),
    ),
    max_size=5,
)


@pytest.mark.slow
@given(FINGERPRINT_ROWS)
def test_canonical_json_is_the_standard_encoders_text(rows: list[object]) -> None:
    """The fingerprint's bytes are the documented json.dumps text, whichever encoder writes them."""
    expected = json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert expected == canonical_json(rows)


@pytest.mark.slow
@given(evalsets())
def test_a_loaded_set_holds_what_add_would_have_checked(evalset: EvalSet) -> None:
    """Every query a file gives is one that add() keeps unchanged, and indexed by its id."""
    loaded = round_trip(evalset, "jsonl")
    rebuilt = EvalSet(loaded.name)
    for query in loaded:
        rebuilt.add(query.id, query.text, relevant=query.judgments, metadata=query.metadata)
    assert (rebuilt.queries, rebuilt.ids, [loaded[q.id] for q in rebuilt]) == (
        loaded.queries,
        loaded.ids,
        list(loaded.queries),
    )

"""Rankings held as arrays: what they read back as, how they are built, and their hashes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import texts
from monitor.errors import UsageError
from monitor.store.rankings import Rankings, merged

ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=9)
rankings = st.lists(st.lists(ids, max_size=6).map(tuple), max_size=8)

CASES = [
    [],
    [()],
    [("a", "b", "a"), (), ("b", "c")],
    [("d9a5bd8ea531", "b47ef9ac1993"), ("b47ef9ac1993",)],
    [("café", "日本語", "a"), ("a", "nul\x00inside")],
]


def _words(ids: list[str]) -> np.ndarray:
    """Return ids packed as TrecColumns.doc_words packs them (big-endian, zero padded)."""
    width = max([1, *(-(-len(i.encode()) // 8) for i in ids)])
    flat = b"".join(i.encode().ljust(8 * width, b"\0") for i in ids)
    return np.frombuffer(flat, dtype=">u8").astype(np.uint64).reshape(len(ids), width)


@pytest.mark.parametrize("given_rankings", CASES)
def test_rankings_read_back_as_the_tuples_they_were_built_of(given_rankings: list) -> None:
    """Rankings.of reads back, ranking by ranking, as the tuples it was given."""
    built = Rankings.of(given_rankings)
    assert given_rankings == [built[i] for i in range(len(built))]
    assert given_rankings == list(built)
    assert [len(r) for r in given_rankings] == built.lengths.tolist()


@given(rankings)
@settings(max_examples=60, deadline=None)
def test_any_rankings_round_trip(given_rankings: list) -> None:
    """Any rankings of any ids read back as given, by index and by iteration."""
    built = Rankings.of(given_rankings)
    assert given_rankings == built.tuples()
    assert given_rankings == [built[i] for i in range(len(built))]


def test_negative_index_and_slice_read_the_rankings_at_those_places() -> None:
    """A negative index reads from the end; a slice gives the Rankings of those queries."""
    built = Rankings.of(CASES[2])
    assert ("b", "c") == built[-1]
    assert [(), ("b", "c")] == list(built[1:])
    with pytest.raises(IndexError):
        built[3]


def test_ids_are_numbered_in_order_of_first_appearance() -> None:
    """Each distinct id gets the next code the first time it appears."""
    built = Rankings.of([("b", "a"), ("b", "c")])
    assert [0, 1, 0, 2] == built.codes.tolist()
    assert ["b", "a", "c"] == texts.decode(built.doc_lengths, built.doc_bytes)


@pytest.mark.parametrize("given_rankings", CASES[:4])
def test_from_words_gives_the_rankings_of_the_ids(given_rankings: list) -> None:
    """Rankings.from_words of packed ids equals Rankings.of the same ids, codes included."""
    flat = [i for ranking in given_rankings for i in ranking]
    counts = np.array([len(r) for r in given_rankings], dtype=np.int32)
    built = Rankings.from_words(counts, _words(flat))
    assert given_rankings == list(built)
    assert Rankings.of(given_rankings).codes.tolist() == built.codes.tolist()


def test_from_words_reads_non_ascii_and_long_ids() -> None:
    """Ids longer than one word and ids of non-ASCII bytes come back whole."""
    given_rankings = [("café-au-lait-long-id", "x"), ("x", "日本語のドキュメント")]
    counts = np.array([2, 2], dtype=np.int32)
    flat = [i for r in given_rankings for i in r]
    assert given_rankings == list(Rankings.from_words(counts, _words(flat)))


def test_from_words_refuses_words_that_do_not_match_the_counts() -> None:
    """Counts that add up to another number of rows than the words have are refused."""
    with pytest.raises(UsageError, match="3 ranked ids need as many rows"):
        Rankings.from_words(np.array([3], dtype=np.int32), _words(["a", "b"]))


def test_from_words_numbers_many_repeated_ids_in_first_seen_order() -> None:
    """Two hundred thousand packed ids (10,000 distinct, repeated at random) are numbered in
    order of first appearance, each code's first row holding its id."""
    rng = np.random.default_rng(7)
    distinct = rng.integers(1, 2**63, (10_000, 2), dtype=np.int64).astype(np.uint64)
    distinct |= np.uint64(0x0101010101010101)  # no zero byte inside an id
    picks = rng.integers(0, 10_000, 200_000)
    built = Rankings.from_words(np.full(10_000, 20, dtype=np.int32), distinct[picks])
    _, first = np.unique(picks, return_index=True)
    expected = np.empty(10_000, dtype=np.int64)
    expected[np.argsort(first, kind="stable")] = np.arange(10_000)
    assert expected[picks].tolist() == built.codes.tolist()


@pytest.mark.parametrize("at", [0, 1, 3, 5, 6])
def test_words_given_in_parts_number_as_the_whole(at: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids given in two parts of different widths are the rankings of all of them in one
    array: the same codes, ids and first rows, also when every hash collides."""
    given_rankings = [("a", "long-id-of-two-words", "b"), ("b", "a"), ("café",)]
    flat = [i for ranking in given_rankings for i in ranking]
    counts = np.array([3, 2, 1], dtype=np.int32)
    whole = Rankings.from_words(counts, _words(flat))
    parts = [_words(flat[:at]) if at else np.zeros((0, 1), np.uint64), _words(flat[at:])]
    built = Rankings.from_words(counts, parts)
    assert given_rankings == list(built)
    assert whole.codes.tolist() == built.codes.tolist()
    monkeypatch.setattr(texts, "word_hashes", lambda words: np.zeros(len(words), np.uint64))
    collided = Rankings.from_words(counts, parts)
    assert given_rankings == list(collided)
    assert whole.codes.tolist() == collided.codes.tolist()


def test_first_rows_are_found_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each code's first row is its first appearance, when codes span several blocks."""
    from monitor.store import rankings as module

    monkeypatch.setattr(module, "_CHECK_ROWS", 3)
    codes = np.array([0, 1, 0, 2, 1, 3, 3, 2, 4, 0, 5])
    assert [0, 1, 3, 5, 8, 10] == module._first_rows(codes, 6).tolist()


def test_the_same_id_hashes_alike_in_any_two_rankings() -> None:
    """An id's content hash does not depend on the Rankings or the code it has there."""
    first = Rankings.of([("a", "b"), ("café",)])
    second = Rankings.of([("café", "z", "b")])
    h1, h2 = first.hashes(), second.hashes()
    assert h1[2] == h2[0]
    assert h1[1] == h2[2]
    assert len(set(h1.tolist()) | set(h2.tolist())) == 4


def test_equal_rankings_are_equal_whatever_their_codes() -> None:
    """Rankings of the same ids compare equal to each other and to their tuples."""
    a = Rankings.of([("a", "b"), ("c",)])
    b = Rankings.of([("x",), ("a", "b"), ("c",)])[1:]
    assert a == b
    assert [("a", "b"), ("c",)] == a
    assert Rankings.of([("a", "c"), ("c",)]) != a


@given(st.lists(rankings, min_size=1, max_size=3))
@settings(max_examples=60, deadline=None)
def test_merged_numbers_ids_as_one_pass_over_every_part(parts: list) -> None:
    """Merging Rankings numbers ids in first appearance over all parts' entries in order."""
    codes, whole = merged([Rankings.of(part) for part in parts])
    every = Rankings.of([r for part in parts for r in part])
    assert every.codes.tolist() == np.concatenate(codes).tolist()
    assert texts.decode(every.doc_lengths, every.doc_bytes) == texts.decode(
        whole.doc_lengths, whole.doc_bytes
    )


def test_rankings_refuse_codes_outside_their_ids() -> None:
    """A code that points past the distinct ids is refused with the codes' range."""
    with pytest.raises(UsageError, match="outside the 1 distinct ids"):
        Rankings(
            np.array([1], np.int32),
            np.array([1], np.int32),
            np.array([1], np.int32),
            np.ones(1, np.uint8),
        )


def test_hashes_are_one_function_of_the_bytes_however_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Texts of many lengths hash to the same values by length groups as byte by byte."""
    ids = [f"id-{'x' * (i % 37)}-é{i}" for i in range(2000)]
    lengths, data = texts.layout_of(ids)
    by_length = texts.hashes(lengths, data)
    monkeypatch.setattr(texts, "_HORNER_STEPS", 0)
    assert by_length.tolist() == texts.hashes(lengths, data).tolist()
    assert len(ids) == len(set(by_length.tolist()))


@given(st.lists(st.lists(st.sampled_from(["a", "b", "cé", "d"]), max_size=4), max_size=6))
def test_a_split_holds_the_rankings_on_each_side(rankings: list[list[str]]) -> None:
    """Split anywhere, the two parts hold the rankings before and after, one dictionary."""
    whole = Rankings.of(rankings)
    for at in range(len(rankings) + 1):
        first, second = whole.split(at)
        assert [tuple(r) for r in rankings[:at]] == list(first)
        assert [tuple(r) for r in rankings[at:]] == list(second)
        assert first.doc_bytes is second.doc_bytes

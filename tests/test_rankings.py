"""Rankings held as arrays: what they read back as, how they are built, and their hashes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import texts
from monitor.errors import UsageError
from monitor.run import rankings as rankings_module
from monitor.run.rankings import Rankings, merged

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


@pytest.mark.slow
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


@pytest.mark.parametrize("block", [2, 1 << 20])
@pytest.mark.parametrize("at", [0, 1, 3, 5, 6])
def test_words_given_in_parts_number_as_the_whole(
    at: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids given in two parts of different widths are the rankings of all of them in one
    array: the same codes, ids and first rows, also when every hash collides, and when the
    rows are checked against their code's first row a few at a time, across the parts."""
    monkeypatch.setattr(rankings_module, "_CHECK_ROWS", block)
    given_rankings = [("a", "long-id-of-two-words", "b"), ("b", "a"), ("café",)]
    flat = [i for ranking in given_rankings for i in ranking]
    counts = np.array([3, 2, 1], dtype=np.int32)
    whole = Rankings.from_words(counts, _words(flat))
    parts = [_words(flat[:at]) if at else np.zeros((0, 1), np.uint64), _words(flat[at:])]
    built = Rankings.from_words(counts, parts)
    assert given_rankings == list(built)
    assert whole.codes.tolist() == built.codes.tolist()
    monkeypatch.setattr(texts, "word_hashes", _colliding_hashes)
    collided = Rankings.from_words(counts, parts)
    assert given_rankings == list(collided)
    assert whole.codes.tolist() == collided.codes.tolist()


@pytest.mark.parametrize("table", [1, 7, 64, 1 << 30])
def test_hashes_numbered_part_by_part_number_as_one_table(
    table: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashes split into parts by their top bits, each part numbered by a table of its own,
    get the codes and first rows one table over all of them gives: in order of first
    appearance, over hashes of any top bits (signed ones too), repeated at random."""
    import pandas as pd

    from monitor.run import rankings as module

    rng = np.random.default_rng(11)
    distinct = rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64)
    distinct[:8] = np.arange(8) << 61  # differing in the top bits only
    hashes = distinct[rng.integers(0, 500, 3_000)]
    expected, uniques = pd.factorize(hashes, sort=False)
    monkeypatch.setattr(module, "_TABLE_HASHES", table)
    monkeypatch.setattr(module, "_CHECK_ROWS", 256)  # the shifts and renumbering in blocks
    codes, first = module.first_seen(hashes)
    assert codes.dtype == np.int32
    assert expected.tolist() == codes.tolist()
    assert module._first_rows(expected, uniques.size).tolist() == first.tolist()
    assert np.array_equal(hashes[first], uniques)


@pytest.mark.parametrize("narrow", [True, False])
def test_rankings_read_alike_with_starts_of_either_width(
    narrow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where each distinct id starts is int32 for fewer bytes than the bound, int64 from it:
    either way the rankings read, compare and pack as they were built."""
    from monitor.run import rankings as module

    monkeypatch.setattr(module, "_NARROW_STARTS", 1 << 40 if narrow else 0)
    given = [("café", "日本語", "a"), ("a", "b" * 30), ()]
    built = Rankings.of(given)
    assert built.doc_starts.dtype == (np.int32 if narrow else np.int64)
    assert given == list(built) == [built[i] for i in range(3)]
    assert built == Rankings.of([list(r) for r in given])
    assert built.doc_starts.tolist() == texts.starts_of(built.doc_lengths).tolist()


def test_rankings_over_the_same_ids_share_their_starts() -> None:
    """Rankings made over another's ids sum the ids' starts once for both, and their codes
    are checked as the constructor checks them."""
    first = Rankings.of([("a", "bb"), ("ccc",)])
    second = first.over_same_ids(np.array([2], np.int32), np.array([2, 0], np.int32))
    assert [("ccc", "a")] == list(second)
    assert second.doc_starts is first.doc_starts
    with pytest.raises(UsageError, match="outside"):
        first.over_same_ids(np.array([1], np.int32), np.array([3], np.int32))


def _colliding_hashes(words: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Hash every row of ``words`` alike (into ``out`` when given)."""
    out = np.empty(len(words), np.uint64) if out is None else out
    out[:] = 0
    return out


@pytest.mark.parametrize("block", [1, 2, 3, 1 << 20])
def test_every_row_is_checked_against_the_first_row_of_its_code(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A numbering is accepted when every row equals its code's first row, checked a block at
    a time across the parts; a row given another id's code is caught wherever it lies."""
    monkeypatch.setattr(rankings_module, "_CHECK_ROWS", block)
    flat = ["a", "long-id-of-two-words", "b", "b", "a", "café", "a"]
    rows = rankings_module._Rows([_words(flat[:3]), _words(flat[3:])])
    codes, first = rankings_module.first_seen(rows.hashes())
    assert rankings_module._rows_match(rows, first, codes)
    for row in [i for i, doc in enumerate(flat) if doc != "a"]:
        forged = codes.copy()
        forged[row] = codes[0]  # the code of "a", whose first row is row 0
        assert not rankings_module._rows_match(rows, first, forged), row


def test_first_rows_are_found_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each code's first row is its first appearance, when codes span several blocks."""
    from monitor.run import rankings as module

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


@pytest.mark.slow
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


@pytest.mark.slow
@given(st.lists(st.lists(st.sampled_from(["a", "b", "cé", "d"]), max_size=4), max_size=6))
def test_a_split_holds_the_rankings_on_each_side(rankings: list[list[str]]) -> None:
    """Split anywhere, the two parts hold the rankings before and after, one dictionary."""
    whole = Rankings.of(rankings)
    for at in range(len(rankings) + 1):
        first, second = whole.split(at)
        assert [tuple(r) for r in rankings[:at]] == list(first)
        assert [tuple(r) for r in rankings[at:]] == list(second)
        assert first.doc_bytes is second.doc_bytes


def test_rows_hash_alike_in_blocks_of_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hashing rows a block at a time gives the hashes of hashing them all at once (the
    splitmix64 finaliser over each row's words, written out here), into a given array too;
    and the run's (query, doc) hashes do not depend on the block either."""
    from monitor.search import trec_columns

    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**63, (1_000, 3), dtype=np.int64).astype(np.uint64)
    query = rng.integers(0, 50, 1_000).astype(np.int32)

    def splitmix64(x: np.ndarray) -> np.ndarray:
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))

    expected = np.zeros(1_000, dtype=np.uint64)
    for j in range(3):
        expected = splitmix64(expected * texts._MULTIPLIER ^ words[:, j])
    assert splitmix64(words[:, 0]).tolist() == texts._mix(words[:, 0]).tolist()
    whole, pairs = texts.word_hashes(words), trec_columns._hash(query, words)
    monkeypatch.setattr(texts, "_HASH_ROWS", 7)
    monkeypatch.setattr(trec_columns, "_HASH_ROWS", 7)
    into = np.ones(1_000, dtype=np.uint64)
    assert texts.word_hashes(words, into) is into
    assert expected.tolist() == whole.tolist() == into.tolist()
    assert pairs.tolist() == trec_columns._hash(query, words).tolist()


@pytest.mark.parametrize("block", [1, 3, 256])
def test_a_few_rankings_read_without_summing_every_start(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rankings read one at a time find their ids' starts from a start per block of ids,
    before and after a bulk read summed them all and let them go, and read the same ids."""
    from monitor.run import rankings as module

    monkeypatch.setattr(module, "_STARTS_BLOCK", block)
    monkeypatch.setattr(module, "_STARTS_CHUNK_BLOCKS", 2)  # the blocks summed in chunks
    given = [(f"id-{i}" * (1 + i % 3), f"é{i}") for i in range(40)] + [()]
    built = Rankings.of(given)
    assert [built[i] for i in (0, 7, 39, 40, 13)] == [given[i] for i in (0, 7, 39, 40, 13)]
    assert built._doc_starts._starts is None  # no bulk read yet
    assert built == Rankings.of(given)  # a bulk read: every start summed
    assert built._doc_starts._starts is not None
    built.forget_starts()
    assert built._doc_starts._starts is None
    assert given == [built[i] for i in range(len(given))]


def test_rows_in_parts_are_taken_as_from_one_array() -> None:
    """Rows taken from words given in parts (of two widths) are those of the parts joined:
    rows of one part, rows across parts in any order, and ascending rows split where they
    cross from one part to the next."""
    from monitor.run.rankings import _Rows

    rng = np.random.default_rng(4)
    narrow = rng.integers(1, 2**63, (5, 1), dtype=np.int64).astype(np.uint64)
    wide = rng.integers(1, 2**63, (7, 2), dtype=np.int64).astype(np.uint64)
    rows = _Rows([narrow, wide, np.zeros((0, 2), np.uint64), wide[:3]])
    joined = np.concatenate([texts.widened(narrow, 2), wide, wide[:3]])
    for picked in ([1, 3], [6, 5, 11], [0, 14, 5, 4, 12], [], [2, 2, 9, 13, 14]):
        at = np.array(picked, dtype=np.intp)
        assert joined[at].tolist() == rows.take(at).tolist()
        ordered = np.sort(at)
        assert joined[ordered].tolist() == rows.take(ordered, ascending=True).tolist()

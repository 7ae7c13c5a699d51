"""JSONL eval sets read through orjson when it is installed: the same queries, and the same
errors on the same lines, as the standard reader gives."""

from __future__ import annotations

import sys

import pytest

from monitor.errors import InputError
from monitor.evalset import _jsonl_columns
from monitor.evalset._jsonl_columns import _quick_jsonl
from monitor.evalset.formats import parse_evalset

pytest.importorskip("orjson")

GOOD = "\n".join(
    [
        '{"id": "q1", "query": "caf\\u00e9 hours", "relevant": {"d1": 2, "d2": 0}}',
        "",
        '{"id":"q2","query":"x","relevant":["d3","d4"],"metadata":{"kind":"nav","n":3}}',
        '{"id": "q3", "query": "", "metadata": {"ok": true, "w": 0.5, "none": null}}',
        '{"id" : "q4", "query" :\t"spaced keys"}',
    ]
)


def _parse(text: str, standard: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    """Return the eval set of ``text``, or its error's message, with or without orjson."""
    with monkeypatch.context() as patch:
        if standard:
            patch.setitem(sys.modules, "orjson", None)  # import orjson raises ImportError
        try:
            evalset = parse_evalset(text, "jsonl", "set.jsonl")
        except InputError as error:
            return str(error)
    return [(q.id, q.text, list(q.judgments.items()), dict(q.metadata)) for q in evalset.queries]


def test_well_formed_queries_read_alike_with_and_without_orjson(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ids, texts, judgments in order and metadata are the same through either reader."""
    assert _parse(GOOD, True, monkeypatch) == _parse(GOOD, False, monkeypatch)


def test_well_formed_queries_take_the_orjson_path() -> None:
    """A text of well-formed queries is read by orjson, with the line of each query."""
    columns = _quick_jsonl(GOOD)
    assert (1, 3, 4, 5) == (None if columns is None else columns.lines)


@pytest.mark.parametrize(
    "line",
    [
        '{"id": "q9", "query": "a", "id": "q8"}',
        '{"id": "q9", "query": "a", "relevant": {"d1": 1, "d1": 2}}',
        '{"id": "q9", "query" : "a\\":", "query": "b"}',
        '{"id": "q9", "query": "a", "metadata": {"w": NaN}}',
        '{"id": "q9", "query": "a", "relevant": {"d1": 99999999999999999999}}',
        '{"id": "q9", "query": "a", "relevant": {"d1": true}}',
        '{"id": "q9", "query": "\\ud800"}',
        '{"id": "", "query": "a"}',
        '{"id": "q9", "query": "a", "relevant": ["d1", "d1"]}',
        '{"id": "q9", "query": "a", "metadata": {"deep": {"x": 1}}}',
        '{"id": "q9", "query": "a", "extra": 1}',
        '{"id": "q9", "query": "a"',
        '["q9"]',
        '{"id": "q9", "query": "a", "relevant": [["d1"]]}',
        '{"id": "q9", "query": "a", "relevant": [{"d1": 1}]}',
        '{"id": "q9", "query": "a", "relevant": ["d1", 2]}',
        '{"id": "q9", "query": "a", "relevant": {"": 1}}',
        '{"id": "q9", "query": "a", "relevant": {"d1": 9223372036854775808}}',
        '{"id": "q9", "query": "a", "metadata": {"": 1}}',
        '{"id": "q9", "query": "a", "metadata": [1]}',
        '{"id": "q9", "query": 7}',
        '{"id": "q1", "query": "again"}',
    ],
)
def test_a_faulty_line_gives_the_standard_error(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A faulty query after good ones is refused with the standard reader's message and line."""
    text = GOOD + "\n" + line + "\n"
    expected = _parse(text, True, monkeypatch)
    assert (True, expected) == (
        str(expected).startswith("set.jsonl:6:"),
        _parse(text, False, monkeypatch),
    )


def test_the_first_fault_is_named_even_when_orjson_would_see_a_later_one_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A repeated key on line 1 is named before a syntax error on line 2."""
    text = '{"id": "q1", "query": "a", "query": "b"}\n{"id": "q2"\n'
    message = _parse(text, False, monkeypatch)
    assert (message, True) == (
        _parse(text, True, monkeypatch),
        str(message).startswith("set.jsonl:1:"),
    )


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ('{"id": "q9", "query": "a", "metadata": {"n": 18446744073709551616}}', 2**64),
        ('{"id": "q9", "query": "a", "metadata": {"n": -9223372036854775809}}', -(2**63) - 1),
        ('{"id": "q9", "query": "a", "metadata": {"n": 1e300}}', 1e300),
        ('{"id": "q9", "query": "a", "metadata": {"n": 18446744073709551615}}', 2**64 - 1),
    ],
)
def test_a_metadata_number_beyond_64_bits_reads_as_the_standard_reader_reads_it(
    line: str, value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integer too long for orjson stays an integer, and a float stays a float."""
    text = GOOD + "\n" + line + "\n"
    read = _parse(text, False, monkeypatch)
    assert (repr(value), _parse(text, True, monkeypatch)) == (
        repr(read[-1][3]["n"]),  # type: ignore[index]
        read,
    )


@pytest.mark.parametrize(
    "lines",
    [
        ['{"id": "q1", "query": "a", "relevant": ["d1"]}', '{"id": "q2", "query": "b"}'],
        ['{"id": "q1", "query": "a"}', '{"id": "q2", "query": "b", "relevant": {"d": -3}}'],
        ['{"id": "q1", "query": "a", "relevant": null, "metadata": null}'],
        ['{"id": "q1", "query": "a", "relevant": []}', '{"id": "q2", "query": "b"}'],
    ],
)
def test_mixed_and_missing_judgments_read_alike_with_and_without_orjson(
    lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listed, graded, null and absent judgments side by side read as the standard reader
    reads them, through orjson."""
    text = "\n".join(lines) + "\n"
    assert (_parse(text, True, monkeypatch), True) == (
        _parse(text, False, monkeypatch),
        _quick_jsonl(text) is not None,
    )


@pytest.mark.parametrize("block", [1, 40, 100])
def test_a_text_read_in_small_blocks_reads_as_a_whole(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queries, their lines and a later fault's message do not depend on the block size."""
    whole = (_parse(GOOD, False, monkeypatch), _quick_jsonl(GOOD))
    faulty = GOOD + '\n{"id": "q9", "query": "a", "relevant": {"d1": true}}\n'
    expected = _parse(faulty, True, monkeypatch)
    monkeypatch.setattr(_jsonl_columns, "_BLOCK_CHARS", block)
    assert (whole, expected) == (
        (_parse(GOOD, False, monkeypatch), _quick_jsonl(GOOD)),
        _parse(faulty, False, monkeypatch),
    )


@pytest.mark.parametrize("blank", ["", "  \t"])
def test_each_query_keeps_its_line_across_blocks(
    blank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of lines with and without blank lines number every query by its own line."""
    monkeypatch.setattr(_jsonl_columns, "_BLOCK_CHARS", 40)
    lines = [f'{{"id": "q{i}", "query": "text {i}"}}' for i in range(6)]
    lines[4:4] = [blank]
    columns = _quick_jsonl("\n".join(lines) + "\n")
    assert (1, 2, 3, 4, 6, 7) == (None if columns is None else columns.lines)

"""JSONL eval sets read through orjson when it is installed: the same queries, and the same
errors on the same lines, as the standard reader gives."""

from __future__ import annotations

import sys

import pytest

from monitor.errors import InputError
from monitor.evalset._documents import _quick_jsonl
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
    """A text of well-formed queries is read by orjson, one entry per non-blank line."""
    entries = _quick_jsonl(GOOD)
    assert [1, 3, 4, 5] == [entry.line for entry in entries or ()]


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

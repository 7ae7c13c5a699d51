"""Reading a suite's ``invariants``: inline, CSV and JSONL forms, and their errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from monitor.config import MustInclude, NoLostHits, load_config_text
from monitor.config.model import InvariantConfig
from monitor.errors import ConfigError

SUITE = """
suites:
  s:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/keyword}}
    invariants: {invariants}
"""

INLINE = (
    "[{query: Q34, must_include: [d9a5bd8ea531], within: 5},"
    " {query: Q01, must_include: [8a7eb02f2b10, 2cfecbd4b92e], severity: critical},"
    " {no_lost_hits: {k: 5}}]"
)
EXPECTED = (
    MustInclude("Q34", ("d9a5bd8ea531",), 5),
    MustInclude("Q01", ("8a7eb02f2b10", "2cfecbd4b92e"), 10, "critical"),
    NoLostHits(5),
)


def load(tmp_path: Path, invariants: str) -> tuple[InvariantConfig, ...]:
    """Return the invariants of a suite whose ``invariants`` key is ``invariants``."""
    text = textwrap.dedent(SUITE).format(invariants=invariants)
    config = load_config_text(text, "monitor.yaml", base_dir=tmp_path)
    return config.suites["s"].invariants


def error(tmp_path: Path, invariants: str) -> ConfigError:
    """Return the ConfigError that loading ``invariants`` raises."""
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, invariants)
    return caught.value


def test_inline_invariants_load_in_order_with_within_defaulting_to_k(tmp_path: Path) -> None:
    """An inline list gives its pairs and policies in order, ``within`` the suite's k when left
    out."""
    assert EXPECTED == load(tmp_path, INLINE)


def test_a_jsonl_file_loads_as_the_inline_form(tmp_path: Path) -> None:
    """A JSONL file of the same entries gives the same invariants."""
    (tmp_path / "invariants.jsonl").write_text(
        '{"query": "Q34", "must_include": ["d9a5bd8ea531"], "within": 5}\n'
        "\n"
        '{"query": "Q01", "must_include": ["8a7eb02f2b10", "2cfecbd4b92e"],'
        ' "severity": "critical"}\n'
        '{"no_lost_hits": {"k": 5}}\n'
    )
    assert EXPECTED == load(tmp_path, "{path: invariants.jsonl}")


def test_a_csv_file_loads_as_the_inline_pairs(tmp_path: Path) -> None:
    """A CSV file of pairs, doc ids separated by spaces, gives the same must-return pairs."""
    (tmp_path / "invariants.csv").write_text(
        "query,must_include,within,severity\n"
        "Q34,d9a5bd8ea531,5,\n"
        "Q01,8a7eb02f2b10 2cfecbd4b92e,,critical\n"
    )
    assert EXPECTED[:2] == load(tmp_path, "{path: invariants.csv}")


def test_the_suites_hash_without_invariants_is_unchanged_by_the_key() -> None:
    """A suite that sets no invariants hashes as it did before the key existed."""
    from monitor.config import config_hash
    from monitor.config.hashing import canonical

    config = load_config_text(textwrap.dedent(SUITE).format(invariants="[]"), "m.yaml")
    suite = config.suites["s"]
    plain = canonical(suite)
    assert isinstance(plain, dict)
    assert "invariants" not in plain["suite"]
    with_one = load_config_text(
        textwrap.dedent(SUITE).format(invariants="[{no_lost_hits: {k: 5}}]"), "m.yaml"
    )
    assert config_hash(suite) != config_hash(with_one.suites["s"])


@pytest.mark.parametrize(
    ("invariants", "key", "expected"),
    [
        ("[{query: Q1, must_inclde: [a]}]", "invariants[0].must_inclde", "did you mean"),
        ("[{query: Q1, must_include: [a], within: 0}]", "invariants[0].within", "at least 1"),
        ("[{query: Q1, must_include: [a], within: 11}]", "invariants[0].within", "suite's k (10"),
        ("[{no_lost_hits: {k: 50}}]", "invariants[0].no_lost_hits.k", "suite's k (10"),
        ("[{no_lost_hits: {}}]", "invariants[0].no_lost_hits", "the key 'k'"),
        ("[{no_lost_hits: {k: 5, depth: 3}}]", "invariants[0].no_lost_hits.depth", "known key"),
        ("[{no_lost_hits: {k: 5}, query: Q1}]", "invariants[0].query", "known key"),
        ("[{query: Q1, must_include: []}]", "invariants[0].must_include", "at least one doc id"),
        ("[{query: Q1, must_include: [a, a]}]", "invariants[0].must_include[1]", "once"),
        ("[{must_include: [a]}]", "invariants[0]", "the key 'query'"),
        ("[{query: Q1, must_include: [a], severity: loud}]", "invariants[0].severity", "severity"),
        ("[{}]", "invariants[0]", "an invariant"),
        ("[{query: Q1, must_include: a}, {query: Q1, must_include: b}]", "invariants[1]", "once"),
        ("[{no_lost_hits: {k: 5}}, {no_lost_hits: {k: 5}}]", "invariants[1]", "once"),
        ("Q34", "invariants", "a list of invariants"),
        ("{file: x.csv}", "invariants.file", "known key"),
        ("{path: missing.csv}", "invariants.path", "an existing CSV or JSONL file"),
        ("{path: invariants.txt}", "invariants.path", "ending in .csv or .jsonl"),
    ],
)
def test_a_bad_inline_invariant_is_a_config_error_at_its_key(
    tmp_path: Path, invariants: str, key: str, expected: str
) -> None:
    """A bad entry names the config file, its line and the key path, and says what was
    expected."""
    caught = error(tmp_path, invariants)
    assert "monitor.yaml" == caught.source
    assert 6 == caught.line
    assert f"suites.s.{key}" == caught.key
    assert expected in caught.expected


@pytest.mark.parametrize(
    ("name", "content", "line", "key", "expected"),
    [
        ("i.csv", "query,doc\nQ1,a\n", 1, "(header)", "columns among"),
        ("i.csv", "query,within\nQ1,5\n", 1, "(header)", "the column 'must_include'"),
        ("i.csv", "", 1, "(header)", "a header row"),
        (
            "i.csv",
            "query,must_include,within\nQ1,a,5\nQ2,b,five\n",
            3,
            "invariants[1].within",
            "an integer",
        ),
        ("i.csv", "query,must_include,within\nQ1,a,50\n", 2, "invariants[0].within", "suite's k"),
        ("i.csv", "query,must_include\nQ1,a,extra\n", 2, "invariants[0]", "2 cells"),
        ("i.csv", "query,must_include\nQ1,a\nQ1,b\n", 3, "invariants[1]", "once"),
        ("i.jsonl", '{"no_lost_hits": {"k": 5}}\n{"query": "Q1"\n', 2, "invariants[1]", "JSON"),
        (
            "i.jsonl",
            '{"query": "Q1", "must_include": [1]}\n',
            1,
            "invariants[0].must_include[0]",
            "doc id",
        ),
        ("i.jsonl", '["Q1"]\n', 1, "invariants[0]", "a mapping"),
        ("i.jsonl", b"\xff\n", 1, "(file)", "UTF-8"),
        ("i.jsonl", '{"query": "Q1", "within": ' + "9" * 5000 + "}\n", 1, "invariants[0]", "18"),
        ("i.jsonl", '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}\n", 1, "invariants[0]", "16"),
        ("i.jsonl", '{"query": "Q1", "query": "Q2"}\n', 1, "invariants[0]", "each key once"),
        (
            "i.jsonl",
            '{"query": "Q1", "must_include": ["\\ud800"]}\n',
            1,
            "invariants[0].must_include[0]",
            "valid Unicode",
        ),
        ("i.csv", "query,must_include\nQ1," + "a" * 200_000 + "\n", 2, "(file)", "131072"),
        (
            "i.csv",
            "query,must_include,within\nQ1,a," + "9" * 5000 + "\n",
            2,
            "invariants[0].within",
            "an integer",
        ),
        (
            "i.csv",
            "query,must_include,within\nQ1,a,\u0665\n",
            2,
            "invariants[0].within",
            "an integer",
        ),
        ("i.csv", "query,must_include,query\nQ1,a,Q2\n", 1, "(header)", "the column 'query' once"),
    ],
)
def test_a_bad_invariants_file_is_a_config_error_at_its_line(
    tmp_path: Path, name: str, content: str | bytes, line: int, key: str, expected: str
) -> None:
    """A bad row of an invariants file names that file, the row's line and its key path."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    caught = error(tmp_path, f"{{path: {name}}}")
    assert str(path) == caught.source
    assert line == caught.line
    assert key == caught.key
    assert expected in caught.expected


@pytest.mark.parametrize(
    ("invariants", "valid"),
    [
        (INLINE, True),
        ("{path: invariants.jsonl}", True),
        ("{path: invariants.txt}", False),
        ("[{query: Q1, must_inclde: [a]}]", False),
        ("[{no_lost_hits: {}}]", False),
        ("[{no_lost_hits: {k: 5}, query: Q1}]", False),
    ],
)
def test_the_schema_agrees_with_the_loader_on_invariants(invariants: str, valid: bool) -> None:
    """The JSON Schema accepts the invariants the loader reads and refuses those it refuses."""
    import yaml

    jsonschema = pytest.importorskip("jsonschema")
    from monitor.config import config_schema

    document = yaml.safe_load(textwrap.dedent(SUITE).format(invariants=invariants))
    errors = list(jsonschema.Draft202012Validator(config_schema()).iter_errors(document))
    assert valid == (not errors)

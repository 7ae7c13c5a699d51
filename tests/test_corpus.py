"""The corpus beside an eval set: its files, its text seam and the suite keys that name it."""

from __future__ import annotations

import gzip
import textwrap
from pathlib import Path

import pytest

from monitor.config import load_config_text
from monitor.config.model import EvalSetConfig, SuiteConfig
from monitor.errors import ConfigError, InputError
from monitor.evalset import bundled
from monitor.evalset.corpus import Corpus, load_corpus
from monitor.metrics.spec import Metric

JSONL = '{"id": "p1", "doc_id": "d", "section": "s", "text": "first"}\n{"id": "p2", "text": "x"}\n'
CSV = "id,doc_id,section,text\np1,d,s,first\np2,,,x\n"
TSV = "id\tdoc_id\tsection\ttext\np1\td\ts\tfirst\np2\t\t\tx\n"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("c.jsonl", JSONL.encode()),
        ("c.csv", CSV.encode()),
        ("c.tsv", TSV.encode()),
        ("c.jsonl.gz", gzip.compress(JSONL.encode(), mtime=0)),
        ("c.csv.gz", gzip.compress(CSV.encode(), mtime=0)),
    ],
)
def test_every_corpus_format_reads_the_same_passages(
    tmp_path: Path, name: str, data: bytes
) -> None:
    """JSONL, CSV and TSV, plain or gzip, give the same ids, texts and fields."""
    path = tmp_path / name
    path.write_bytes(data)
    corpus = Corpus.load(path)
    got = [(p.id, p.text, dict(p.fields)) for p in corpus]
    assert [("p1", "first", {"doc_id": "d", "section": "s"}), ("p2", "x", {})] == got


def test_text_returns_a_passage_text_or_none() -> None:
    """Corpus.text gives the stored text, and None for an id the corpus does not hold."""
    corpus = Corpus.parse(JSONL.encode(), "jsonl")
    assert ("first", None) == (corpus.text("p1"), corpus.text("nope"))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"id": "p1", "text": "a"}\n{"id": "p1", "text": "b"}\n', r"c.jsonl:2: .*ids listed once"),
        ('{"id": "p1"}\n', r"c.jsonl:1: expected a 'text' field for passage 'p1'"),
        ('{"text": "a"}\n', r"c.jsonl:1: expected a passage with a non-empty 'id'"),
        ("[1]\n", r"c.jsonl:1: expected a passage object"),
        ('{"id": "p", "text": "a", "x": [1]}\n', r"c.jsonl:1: .*in field 'x'"),
        ("{oops\n", r"c.jsonl:1: expected one JSON object per line"),
    ],
)
def test_bad_corpus_lines_name_file_line_and_what_was_expected(
    tmp_path: Path, data: str, message: str
) -> None:
    """A malformed passage is reported with the file, the line and the expectation."""
    path = tmp_path / "c.jsonl"
    path.write_text(data, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        Corpus.load(path)


def test_a_csv_row_of_the_wrong_width_names_its_line(tmp_path: Path) -> None:
    """A CSV row with a missing column is reported at its line."""
    path = tmp_path / "c.csv"
    path.write_text("id,text\np1,a\np2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c.csv:3: expected 2 columns as in the header"):
        Corpus.load(path)


def test_an_unknown_corpus_suffix_lists_the_known_ones(tmp_path: Path) -> None:
    """A corpus file named .txt is refused with the suffixes that are read."""
    path = tmp_path / "c.txt"
    path.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match=r"\.jsonl\[\.gz\], \.csv\[\.gz\], \.tsv\[\.gz\]"):
        Corpus.load(path)


def test_the_bundled_larkfield_set_brings_its_passages_as_corpus() -> None:
    """A suite on the bundled set has the 174 bundled passages as its corpus."""
    corpus = load_corpus(EvalSetConfig(bundled="larkfield"))
    assert corpus is not None
    assert (174, bundled.larkfield_passages()[0]["text"]) == (
        len(corpus),
        corpus.text(bundled.larkfield_passages()[0]["id"]),
    )


def _suite(tmp_path: Path, evalset: str, unit: str) -> SuiteConfig:
    text = textwrap.dedent(
        f"""\
        suites:
          s:
            evalset: {evalset}
            search: {{kind: replay, bundled: larkfield/keyword}}
            unit: {unit}
            rules:
              - {{metric: recall@5, max_drop: 0.05}}
        """
    )
    (tmp_path / "set.jsonl").write_text('{"id": "q", "query": "x", "relevant": ["p"]}\n')
    (tmp_path / "p.jsonl").write_text('{"id": "p", "doc_id": "d", "text": "t"}\n')
    return load_config_text(text, "cfg.yaml", env={}, base_dir=tmp_path).suite("s")


def test_a_suite_unit_becomes_part_of_every_metric_and_rule_name(tmp_path: Path) -> None:
    """With unit: section the suite measures recall@5[section] and its rule watches it."""
    suite = _suite(tmp_path, "{path: set.jsonl, corpus: p.jsonl}", "section")
    assert Metric("recall", 5, "section") in suite.metrics
    assert "recall@5[section] max_drop" == suite.rules[0].name


def test_a_unit_without_a_corpus_is_a_config_error(tmp_path: Path) -> None:
    """A suite counting units with no corpus is refused, naming the corpus key."""
    with pytest.raises(ConfigError, match=r"cfg.yaml:5.*evalset\.corpus"):
        _suite(tmp_path, "{path: set.jsonl}", "document")


def test_a_malformed_unit_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    """unit: 'a b' is refused with what a unit is."""
    with pytest.raises(ConfigError, match=r"suites\.s\.unit.*a unit: passage, section"):
        _suite(tmp_path, "{path: set.jsonl, corpus: p.jsonl}", "'a b'")


def test_an_unchanged_corpus_is_read_once_and_a_changed_one_again(tmp_path: Path) -> None:
    """Stages of one run share the corpus they read; rewriting the file is seen at once."""
    import os

    path = tmp_path / "passages.jsonl"
    path.write_text('{"id": "p1", "text": "first"}\n', encoding="utf-8")
    config = EvalSetConfig(path=tmp_path / "set.jsonl", corpus=path)
    first = load_corpus(config)
    assert first is load_corpus(config)
    path.write_text('{"id": "p1", "text": "second, longer"}\n', encoding="utf-8")
    os.utime(path, ns=(1, 1))
    again = load_corpus(config)
    assert again is not None
    assert "second, longer" == again.text("p1")

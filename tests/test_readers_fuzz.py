"""Any bytes given to a file reader are read, or refused with the reader's documented error:
never another exception (a traceback at the command line).

Each reader (grades, baseline files, eval sets, dict qrels, JSON runs, passages,
invariants) gets arbitrary bytes, and near-valid files with a few bytes changed (the inputs
that reach deepest into a reader). The documented errors: InputError for grades, baseline,
eval set, qrels, run and passages files; ConfigError for invariants files.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.config import load_config_text
from monitor.errors import ConfigError, InputError
from monitor.evalset.corpus import Corpus
from monitor.evalset.formats import load_evalset, read_qrels
from monitor.gate.baseline_file import read_baseline
from monitor.judgments.files import read_grades
from monitor.search.saved import load_hits

#: A few examples per reader keep the whole file to a few seconds.
FUZZ = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])

BASELINE = {
    "format": "retrieval-monitor-baseline",
    "version": 1,
    "suite": "s",
    "run_id": 1,
    "pinned_at": None,
    "pipeline": "p",
    "started_at": "2024-05-01T01:00:00+00:00",
    "finished_at": "2024-05-01T01:05:00+00:00",
    "evalset_fingerprint": "sha256:abc",
    "config_hash": "f00d",
    "metrics": ["recall@5"],
    "means": {"recall@5": 0.5},
    "figures": {
        "latency": {"count": 1, "mean": 0.1, "p50": 0.1, "p95": 0.1, "p99": 0.1, "max": 0.1},
        "error_rate": 0.0,
        "zero_result_rate": 0.0,
        "mean_top1_score": None,
        "queries_per_second": 1.0,
        "index_size": None,
        "sent": 1,
        "failed": 0,
        "evaluated": 1,
    },
    "stats": {},
    "queries": [
        {
            "query_id": "Q1",
            "values": {"recall@5": 0.5},
            "retrieved_ids": ["d1"],
            "relevant_ids": ["d1"],
            "latency_seconds": 0.1,
            "error_type": None,
            "error_message": None,
        }
    ],
}

#: Valid files of each reader, the seeds that mutations start from.
SEEDS: dict[str, bytes] = {
    "grades.csv": b"query_id,doc_id,grade\nQ1,d1,2\nQ1,d2,\n",
    "grades.jsonl": b'{"query_id": "Q1", "doc_id": "d1", "grade": 1}\n',
    "grades.qrels": b"Q1 0 d1 1\nQ1 0 d2 -1\n",
    "baseline.json": json.dumps(BASELINE).encode(),
    "set.jsonl": b'{"id": "q1", "query": "x", "relevant": {"d1": 2}, "metadata": {"a": 1}}\n',
    "set.json": b'{"name": "n", "queries": [{"id": "q1", "query": "x", "relevant": ["d1"]}]}',
    "set.csv": b"id,query,relevant\nq1,x,d1:2;d2\n",
    "run.json": b'{"q1": [{"id": "d1", "score": 1.5}], "q2": {"d2": 3}}',
    "qrels.json": b'{"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1.0}}',
    "passages.jsonl": b'{"id": "d1", "text": "a passage", "section": "s1", "n": 2}\n',
    "passages.tsv": b"id\ttext\tsection\nd1\ta passage\ts1\n",
    "invariants.jsonl": b'{"query": "Q01", "must_include": ["d1"], "within": 5}\n',
    "invariants.csv": b"query,must_include,within\nQ01,d1 d2,5\n",
}

SUITE = """\
suites:
  s:
    evalset: {bundled: larkfield}
    search: {kind: replay, bundled: larkfield/keyword}
    invariants: {path: FILE}
"""


def read_invariants(path: Path) -> object:
    """Load a config whose suite reads its invariants from ``path``."""
    text = textwrap.dedent(SUITE).replace("FILE", path.name)
    return load_config_text(text, str(path.parent / "monitor.yaml"), base_dir=path.parent, env={})


#: File name -> (the reader, the error it documents).
READERS: dict[str, tuple[Callable[[Path], Any], type[Exception]]] = {
    "grades.csv": (read_grades, InputError),
    "grades.jsonl": (read_grades, InputError),
    "grades.qrels": (read_grades, InputError),
    "baseline.json": (read_baseline, InputError),
    "set.jsonl": (load_evalset, InputError),
    "set.json": (load_evalset, InputError),
    "set.csv": (load_evalset, InputError),
    "run.json": (lambda path: load_hits(path, "json"), InputError),
    "qrels.json": (read_qrels, InputError),
    "passages.jsonl": (Corpus.load, InputError),
    "passages.tsv": (Corpus.load, InputError),
    "invariants.jsonl": (read_invariants, ConfigError),
    "invariants.csv": (read_invariants, ConfigError),
}

#: Bytes that reach the corners of the readers: digits of other scripts, escapes, nesting,
#: separators, long numbers.
PIECES = st.sampled_from(
    [
        b"\x00",
        b"\\u0000",
        b"\\ud800",
        "\u0661".encode(),
        "\uff12".encode(),
        b"1_0",
        b"9" * 5000,
        b"[" * 3000,
        b"{" * 3000,
        b'"',
        b",",
        b"\n",
        b"\t",
        b"\r",
        b"true",
        b"null",
        b"-1",
        b"1e400",
        b"NaN",
        b"Infinity",
        str(2**64).encode(),
        b"\xff",
        b"\xef\xbb\xbf",
    ]
)


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """Return ``seed`` with a few spans replaced by corner-case pieces or random bytes."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(data)))
        end = draw(st.integers(start, min(len(data), start + 8)))
        piece = draw(PIECES | st.binary(max_size=8))
        data[start:end] = piece
    return bytes(data)


def read_or_refuse(name: str, data: bytes) -> str:
    """Write ``data`` as file ``name`` and read it; return ``"read"``, or the message of the
    documented error (any other exception propagates)."""
    reader, documented = READERS[name]
    with TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            reader(path)
        except documented as error:
            return str(error)
    return "read"


@pytest.mark.parametrize("name", list(READERS))
def test_every_seed_file_is_read(name: str) -> None:
    """The valid seeds read without error (so a mutation starts from a file that reads)."""
    reader, _ = READERS[name]
    with TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(SEEDS[name])
        assert reader(path) is not None


@pytest.mark.slow
@pytest.mark.parametrize("name", list(READERS))
@FUZZ
@given(data=st.data())
def test_any_bytes_read_or_give_the_documented_error(name: str, data: st.DataObject) -> None:
    """Arbitrary bytes and mutated valid files are read or refused with the reader's error."""
    raw = data.draw(st.binary(max_size=300) | mutated(SEEDS[name]))
    said = read_or_refuse(name, raw)
    assert (True, False) == (bool(said), "Traceback" in said)

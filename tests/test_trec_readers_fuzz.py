"""The TREC readers against a C-like reference, on files of hostile bytes (hypothesis).

Each generated qrels or run file holds what trips a reader: Unicode spaces and control
characters inside ids, runs of tabs, CR, VT and FF between fields, CRLF line ends, a BOM,
NUL bytes, bytes that are not UTF-8, comment and blank lines, long fields and odd numbers
(``1_0``, ``0x10``, ``12abc``, U+0661, ``1e400``). The reference reads the bytes as
trec_eval does: lines at LF, fields split with ``bytes.split()`` (C's ``isspace``: space,
tab, LF, CR, VT, FF), scores and grades with the C library's own ``strtod`` and ``strtol``;
the one difference kept on purpose is that a leading byte order mark is dropped.
Every reader either reads what the reference reads or refuses the file with an InputError
naming the file and the reference's first bad line. A last test scores the files the
reference accepts with pytrec_eval (trec_eval's C code) and compares every query's value.
"""

from __future__ import annotations

import ctypes
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.errors import InputError
from monitor.evalset.trec import read_trec_qrels
from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import parse_metric
from monitor.records import Query
from monitor.search.replay import ReplaySearch
from monitor.search.saved import load_run
from monitor.search.trec_arrow import read_trec_arrow
from monitor.search.trec_read import read_trec_columns

pytestmark = pytest.mark.slow

_LIBC = ctypes.CDLL(None)
_LIBC.strtod.restype = ctypes.c_double
_LIBC.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
_LIBC.strtol.restype = ctypes.c_long
_LIBC.strtol.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

#: Characters of an id: plain ones, and those Python's str.split() or a lax reader trips on.
ID_CHARS = st.sampled_from([*"abcXYZ019-_.:é文", *"\xa0\u2028\x85\u3000\x1c\x1f\x01\x7f\ufeff#"])
IDS = st.one_of(
    st.text(ID_CHARS, min_size=1, max_size=8),
    st.text(st.sampled_from("ab"), min_size=300, max_size=300),  # a long field
)
SEPARATORS = st.sampled_from([" ", " ", "\t", "  ", " \t ", "\r", "\v", "\f"])
#: Scores as C reads them (1_0 is 1, 12abc is 12, 0x10 is 16), and some no reader may read.
ODD_SCORES = ["1_0", "12abc", "1e", "0x10", "\u0661", "abc", "inf", "nan", "1e400", "\uff11"]
SCORES = st.one_of(
    st.sampled_from(["1", "0.5", "-2.25", "3", ".5", "+3", "7.", "1e-5", "2.5e1", "-0"]),
    st.sampled_from(ODD_SCORES),
    st.floats(-10, 10, allow_nan=False).map(lambda x: f"{x:.6f}"),
)
GRADES = st.sampled_from(
    ["0", "1", "2", "3", "-1", "1.0", "2e0", "1e1", "2.5", "1_0", "\u0661", "+2", "x", "10e-1"]
)
ENDS = st.sampled_from(["\n", "\n", "\r\n"])
#: Rare faults dropped into a file: a NUL, a byte that is not UTF-8, a BOM at the start.
FAULTS = st.sampled_from([None, None, None, None, "nul", "latin1", "bom"])


def c_double(field: bytes) -> float | None:
    """Return what strtod reads from ``field``, or None if it reads no number at all."""
    end = ctypes.c_char_p()
    buffer = ctypes.create_string_buffer(field)
    value: float = _LIBC.strtod(buffer, ctypes.byref(end))
    used = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buffer)  # type: ignore[operator]
    return None if used == 0 else value


def c_long(field: bytes) -> int | None:
    """Return what strtol reads from ``field`` (base 10), or None if it reads no digit."""
    end = ctypes.c_char_p()
    buffer = ctypes.create_string_buffer(field)
    value: int = _LIBC.strtol(buffer, ctypes.byref(end), 10)
    used = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buffer)  # type: ignore[operator]
    return None if used == 0 else value


def lines_of(data: bytes) -> list[tuple[int, list[bytes]]] | int:
    """Return each line's number and fields as trec_eval splits them, or the first bad
    line's number (not UTF-8, or a NUL, which trec_eval would read as the end of the file).
    A leading byte order mark is dropped (trec_eval would read it into the first id)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return data[: error.start].count(b"\n") + 1
    data = data.removeprefix(b"\xef\xbb\xbf")  # dropped, as from every eval set file
    if b"\0" in data:
        return data[: data.index(b"\0")].count(b"\n") + 1
    out = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()  # bytes.split(): C's isspace, no Unicode space
        if fields and not fields[0].startswith(b"#"):
            out.append((number, fields))
    return out


def reference_run(data: bytes) -> dict[str, list[tuple[float, str]]] | int:
    """Return each query's (score, doc) best first as trec_eval ranks them, or the number of
    the first line a reader must refuse (short, no numeric score, a score not finite)."""
    lines = lines_of(data)
    if isinstance(lines, int):
        return lines
    rows: dict[str, list[tuple[float, bytes]]] = {}
    for number, fields in lines:
        if len(fields) < 6:
            return number
        score = c_double(fields[4])
        if score is None or not math.isfinite(score):
            return number
        rows.setdefault(fields[0].decode(), []).append((score, fields[2]))
    return {
        qid: [(score, doc.decode()) for score, doc in sorted(scored, reverse=True)]
        for qid, scored in rows.items()
    }


def reference_grade(field: bytes, truncate: bool) -> int | None:
    """Return the grade read from ``field``, or None where the reader must refuse it.

    With ``truncate`` it is atol's (strtol's) reading, 0 when only a sign or a point
    comes before the number; by default an integer, or an integral decimal that atol reads
    as the same integer (``1.0``, ``2e0``; not ``1e1``, which atol reads as 1).
    """
    prefix, value = c_long(field), c_double(field)
    if truncate:
        if prefix is not None:
            return prefix
        return 0 if value is not None and math.isfinite(value) else None
    if re.fullmatch(rb"[+-]?[0-9]+", field):
        return prefix
    if not re.fullmatch(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", field):
        return None
    assert value is not None
    return int(value) if value.is_integer() and int(value) == prefix else None


def reference_qrels(data: bytes, truncate: bool = False) -> dict[str, dict[str, int]] | int:
    """Return the qrels trec_eval reads (four fields a line), or the first line to refuse."""
    lines = lines_of(data)
    if isinstance(lines, int):
        return lines
    qrels: dict[str, dict[str, int]] = {}
    for number, fields in lines:
        if len(fields) != 4:
            return number
        grade = reference_grade(fields[3], truncate)
        doc = fields[2].decode()
        judged = qrels.setdefault(fields[0].decode(), {})
        if grade is None or doc in judged:
            return number
        judged[doc] = grade
    return qrels if qrels else 1


@st.composite
def run_files(draw: st.DrawFn, unique: bool = False) -> bytes:
    """Return the bytes of a run file with hostile ids, separators, scores and faults."""
    lines = []
    for i in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["line", "line", "line", "line", "comment", "blank", "short"]))
        sep = draw(SEPARATORS)
        qid = draw(st.sampled_from(["q1", "q2", "q\xa03"]))
        doc = draw(IDS) + (f"~{i}" if unique else "")
        if kind == "comment":
            text = f"# comment{sep}{doc}"
        elif kind == "blank":
            text = draw(st.sampled_from(["", " ", "\t\r"]))
        elif kind == "short":
            text = sep.join([qid, "Q0", doc, "1"])
        else:
            score = draw(SCORES)
            extra = draw(st.sampled_from(["", " extra", "\tx y"]))
            text = sep.join([qid, "Q0", doc, str(i + 1), score, "tag"]) + extra
        lines.append(text + draw(ENDS))
    return _with_fault(draw, "".join(lines))


@st.composite
def qrels_files(draw: st.DrawFn) -> bytes:
    """Return the bytes of a qrels file with hostile ids, separators, grades and faults."""
    lines = []
    for i in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["line", "line", "line", "comment", "blank", "long"]))
        sep = draw(SEPARATORS)
        doc = draw(IDS)
        if kind == "comment":
            text = f"#{sep}{doc}"
        elif kind == "blank":
            text = ""
        else:
            fields = ["q1" if i % 2 else "q\xa02", "0", doc, draw(GRADES)]
            if kind == "long":
                fields.append("extra")
            text = sep.join(fields)
        lines.append(text + draw(ENDS))
    return _with_fault(draw, "".join(lines))


def _with_fault(draw: st.DrawFn, text: str) -> bytes:
    """Return ``text`` as UTF-8 with, sometimes, a NUL, a non-UTF-8 byte or a BOM put in."""
    data = text.encode("utf-8")
    fault = draw(FAULTS)
    at = draw(st.integers(0, len(data)))
    if fault == "nul":
        data = data[:at] + b"\0" + data[at:]
    elif fault == "latin1":
        data = data[:at] + b"\xff" + data[at:]
    elif fault == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


def refused_at(call: object, path: Path, line: int) -> None:
    """Assert that calling ``call`` raises an InputError naming ``path`` and ``line``."""
    with pytest.raises(InputError) as caught:
        call()  # type: ignore[operator]
    assert f"{path.name}:{line}:" in str(caught.value)


@SETTINGS
@given(data=run_files())
def test_the_run_line_reader_reads_what_the_reference_reads(tmp_path: Path, data: bytes) -> None:
    """load_run gives the reference's ranking, or refuses the reference's first bad line."""
    path = tmp_path / "r.trec"
    path.write_bytes(data)
    expected = reference_run(data)
    if isinstance(expected, int):
        refused_at(lambda: load_run(path, "trec"), path, expected)
    else:
        assert {q: [doc for _, doc in hits] for q, hits in expected.items()} == load_run(
            path, "trec"
        )


@SETTINGS
@given(data=run_files(unique=True))
def test_replay_answers_what_the_reference_reads(tmp_path: Path, data: bytes) -> None:
    """The replay search (column or line reader) answers the reference's ranking."""
    path = tmp_path / "r.trec"
    path.write_bytes(data)
    expected = reference_run(data)
    if isinstance(expected, int):
        refused_at(lambda: ReplaySearch.from_file(path, "trec"), path, expected)
        return
    replay = ReplaySearch.from_file(path, "trec")
    answers = {q: [(h.score, h.id) for h in replay(Query(q, "", {}), 1000)] for q in expected}
    assert expected == answers


@SETTINGS
@given(data=run_files(unique=True), reader=st.sampled_from(["numpy", "arrow"]))
def test_the_column_readers_read_what_the_reference_reads(
    tmp_path: Path, data: bytes, reader: str
) -> None:
    """The numpy and pyarrow column readers give the reference's ranking, or leave the file
    to the line reader (None)."""
    path = tmp_path / "r.trec"
    path.write_bytes(data)
    columns = (read_trec_columns if reader == "numpy" else read_trec_arrow)(path)
    if columns is None:
        return
    expected = reference_run(data)
    assert not isinstance(expected, int)
    docs = [row.byteswap().tobytes().rstrip(b"\0").decode() for row in columns.doc_words]
    rows: dict[str, list[tuple[float, str]]] = {}
    for code, doc, score in zip(columns.query.tolist(), docs, columns.score.tolist(), strict=True):
        rows.setdefault(columns.query_ids[code], []).append((score, doc))
    assert {q: hits for q, hits in expected.items() if hits} == rows


@SETTINGS
@given(data=qrels_files(), truncate=st.booleans())
def test_the_qrels_reader_reads_what_the_reference_reads(
    tmp_path: Path, data: bytes, truncate: bool
) -> None:
    """read_trec_qrels gives the reference's grades, or refuses its first bad line, in both
    grade modes."""
    path = tmp_path / "q.qrels"
    path.write_bytes(data)
    expected = reference_qrels(data, truncate)
    grades = "truncate" if truncate else "exact"
    if isinstance(expected, int):
        refused_at(lambda: read_trec_qrels(path, grades=grades), path, expected)
    else:
        assert expected == read_trec_qrels(path, grades=grades)


pytrec_eval = pytest.importorskip("pytrec_eval")

#: Our metric -> trec_eval's measure, compared query by query.
MEASURES = {
    "map": "map",
    "ndcg": "ndcg",
    "mrr": "recip_rank",
    "precision@5": "P_5",
    "recall@10": "recall_10",
    "ndcg@10": "ndcg_cut_10",
}


#: Scores every reader must read, some only as C reads them (1_0 is 1, 12abc is 12).
VALID_SCORES = st.sampled_from(
    ["1", "0.5", "-2.25", "3", "1_0", "12abc", "1e", "0x10", ".5", "+3", "7.", "2.5e1", "-0"]
)


@st.composite
def scored_files(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """Return qrels and a run that share hostile query and doc ids, with separators, line
    ends, comments and numbers a reader must read as trec_eval does."""
    docs = draw(st.lists(IDS, min_size=2, max_size=8, unique=True))
    docs = [doc for doc in docs if not doc.startswith("#")] or ["d"]
    queries = ["q1", "q\xa02", "q\x1c3"]
    qrels, run = [], []
    for qid in queries:
        for doc in draw(st.lists(st.sampled_from(docs), min_size=1, max_size=6, unique=True)):
            grade = draw(st.sampled_from(["0", "1", "2", "3", "1.0", "2e0", "-1"]))
            qrels.append(draw(SEPARATORS).join([qid, "0", doc, grade]) + draw(ENDS))
        for rank, doc in enumerate(draw(st.lists(st.sampled_from(docs), unique=True)), 1):
            sep = draw(SEPARATORS)
            run.append(sep.join([qid, "Q0", doc, str(rank), draw(VALID_SCORES), "t"]) + "\n")
        if draw(st.booleans()):
            run.append(f"# {qid} Q0 comment 1 1 t\n")
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + "".join(qrels)).encode(), (bom + "".join(run)).encode()


@SETTINGS
@given(files=scored_files())
def test_files_score_as_pytrec_eval_scores_them(tmp_path: Path, files: tuple[bytes, bytes]) -> None:
    """Through the file readers, evaluate gives every query pytrec_eval's value on the same
    files parsed as trec_eval parses them, to 1e-9."""
    qrels, run = files
    judged, ranked = reference_qrels(qrels), reference_run(run)
    assert not isinstance(judged, int)
    assert not isinstance(ranked, int)
    # pytrec_eval crashes on some negative grades: it gets them as 0, which is what the engine
    # must make of one (judged, not relevant).
    judged = {q: {d: max(g, 0) for d, g in docs.items()} for q, docs in judged.items()}
    (tmp_path / "q.qrels").write_bytes(qrels)
    (tmp_path / "r.trec").write_bytes(run)
    ours = evaluate(tmp_path / "q.qrels", tmp_path / "r.trec", list(MEASURES), average="trec_eval")
    evaluator = pytrec_eval.RelevanceEvaluator(judged, set(MEASURES.values()))
    theirs = evaluator.evaluate({q: {d: s for s, d in hits} for q, hits in ranked.items()})
    assert sorted(theirs) == sorted(ours.query_ids)
    for metric, measure in MEASURES.items():
        values = ours.values[parse_metric(metric)].tolist()
        got = dict(zip(ours.query_ids, values, strict=True))
        for qid, value in theirs.items():
            assert value[measure] == pytest.approx(got[qid], abs=1e-9), (qid, metric)

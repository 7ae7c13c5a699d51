"""Every bad input is one clear error: exit 2, the file and line or key named, no traceback,
and all of it within a few seconds and a few megabytes."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.errors import SearchOutputError
from monitor.records import Hit
from monitor.search.base import normalise_hits

EVALSET = "    evalset: {bundled: larkfield}\n"
SEARCH = "    search: {kind: replay, bundled: larkfield/keyword}\n"
#: A run that takes longer than this has hung, or expanded what it should have refused.
BOUND_SECONDS = 10.0


def alias_bomb() -> str:
    """Return a 500-byte YAML document whose aliases expand to 9**9 values."""
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n']
    for level in range(8):
        name, previous = chr(98 + level), chr(97 + level)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]\n")
    return "".join(lines)


@dataclass(frozen=True)
class Case:
    """A config (and the files it names) that must fail with exit 2 and ``message``."""

    suite: str
    message: str
    files: tuple[tuple[str, str], ...] = ()
    before: Callable[[], str] = lambda: ""


CASES = {
    "yaml alias bomb": Case(
        EVALSET + SEARCH, "cfg.yaml:6: (yaml): expected at most 100000 values", before=alias_bomb
    ),
    "yaml nested 500 deep": Case(
        EVALSET + SEARCH + "    labels: " + "[" * 500 + "]" * 500 + "\n",
        "cfg.yaml:6: (yaml): expected mappings and lists nested at most 64 deep",
    ),
    "NUL byte": Case(
        EVALSET + SEARCH + "    pipeline: a\x00b\n", "cfg.yaml:6: (yaml): expected printable text"
    ),
    "ESC byte": Case(
        EVALSET + SEARCH + "    pipeline: a\x1bb\n", "cfg.yaml:6: (yaml): expected printable text"
    ),
    "lone surrogate in a label": Case(
        EVALSET + SEARCH + '    labels: {team: "a\\ud800b"}\n',
        "cfg.yaml:6: suites.s.labels.team: expected text of valid Unicode (no lone surrogate)",
    ),
    "timeout_seconds 1e30": Case(
        EVALSET + SEARCH + "    runner: {timeout_seconds: 1e30}\n",
        "cfg.yaml:6: suites.s.runner.timeout_seconds: expected a number above 0 of at most 604800",
    ),
    "a schedule interval of a million days": Case(
        EVALSET + SEARCH + "    schedule: {interval: 1000000d}\n",
        "cfg.yaml:6: suites.s.schedule.interval: expected an interval such as 90s",
    ),
    "deadline_seconds 1e30": Case(
        EVALSET + SEARCH + "    runner: {deadline_seconds: 1e30}\n",
        "cfg.yaml:6: suites.s.runner.deadline_seconds: expected a number above 0 of at most",
    ),
    "200,000-character eval set path": Case(
        "    evalset: {path: " + "a" * 200_000 + ".jsonl}\n" + SEARCH,
        "cfg.yaml:4: suites.s.evalset.path: expected an eval set file: a path of at most 4096",
    ),
    "200,000-character search path": Case(
        EVALSET + "    search: {kind: replay, path: " + "a/" * 100_000 + "}\n",
        "cfg.yaml:5: suites.s.search.path: expected a path: a path of at most 4096",
    ),
    ".inf as the eval set path": Case(
        "    evalset: {path: .inf}\n" + SEARCH, "cfg.yaml:4: suites.s.evalset.path: expected"
    ),
    ".nan as the search path": Case(
        EVALSET + "    search: {kind: replay, path: .nan}\n",
        "cfg.yaml:5: suites.s.search.path: expected a finite number",
    ),
    "search.path /dev/zero": Case(
        EVALSET + "    search: {kind: replay, path: /dev/zero}\n",
        "/dev/zero: expected a file of at most 268435456 bytes",
    ),
    "eval set /dev/zero": Case(
        "    evalset: {path: /dev/zero, format: jsonl}\n" + SEARCH,
        "/dev/zero: expected a file of at most 268435456 bytes",
    ),
    "400-digit grade in JSONL": Case(
        "    evalset: {path: set.jsonl}\n" + SEARCH,
        "set.jsonl:1: expected an integer grade at relevant['d1'], found an integer of 400",
        (("set.jsonl", '{"id": "q1", "query": "x", "relevant": {"d1": ' + "9" * 400 + "}}\n"),),
    ),
    "400-digit grade in qrels": Case(
        "    evalset: {path: set.qrels}\n" + SEARCH,
        "set.qrels:1: expected an integer grade from",
        (("set.qrels", "q1 0 d1 " + "9" * 400 + "\n"),),
    ),
    "5,000-digit grade in CSV": Case(
        "    evalset: {path: set.csv}\n" + SEARCH,
        "set.csv:2: expected an integer grade from",
        (("set.csv", "id,query,relevant\nq1,x,d1:" + "9" * 5000 + "\n"),),
    ),
    "5,000-digit grade in YAML": Case(
        "    evalset: {path: set.yaml}\n" + SEARCH,
        "set.yaml:1: expected an integer grade at [0].relevant['d1'], found an integer of 5000",
        (("set.yaml", "- {id: q1, query: x, relevant: {d1: " + "9" * 5000 + "}}\n"),),
    ),
    "5,000-digit score in a JSON run": Case(
        EVALSET + "    search: {kind: replay, path: run.json}\n",
        "run.json: expected a finite score for query 'q1', document 'd1'",
        (("run.json", '{"q1": {"d1": ' + "9" * 5000 + "}}"),),
    ),
    "5,000-digit score in a TREC run": Case(
        EVALSET + "    search: {kind: replay, path: run.trec}\n",
        "run.trec:1: expected a finite score in field 5",
        (("run.trec", "q1 Q0 d1 1 " + "9" * 5000 + " tag\n"),),
    ),
    "JSON run mixing doc ids and hit objects": Case(
        EVALSET + "    search: {kind: replay, path: run.json}\n",
        "run.json: expected a ranking for query 'Q01' of doc id strings or of hit objects",
        (("run.json", '{"Q01": ["d1", {"id": "d2"}]}'),),
    ),
    "JSON run nested 200,000 deep": Case(
        EVALSET + "    search: {kind: replay, path: run.json}\n",
        "run.json: expected JSON nested a few levels deep",
        (("run.json", '{"q1": ' + "[" * 200_000 + "]" * 200_000 + "}"),),
    ),
    "NUL in a JSONL eval set's query id": Case(
        "    evalset: {path: set.jsonl}\n" + SEARCH,
        "set.jsonl:1: expected a query id without a NUL character at id",
        (("set.jsonl", '{"id": "q\\u0000", "query": "x", "relevant": ["d1"]}\n'),),
    ),
    "NUL in a CSV eval set's doc id": Case(
        "    evalset: {path: set.csv}\n" + SEARCH,
        "set.csv:2: expected a document id without a NUL character",
        (("set.csv", "id,query,relevant\nq1,x,d\x001\n"),),
    ),
    "lone surrogate in a run's doc id": Case(
        EVALSET + "    search: {kind: replay, path: run.json}\n",
        "run.json: expected a ranking for query 'q1': expected a non-empty doc id of valid",
        (("run.json", '{"q1": ["\\ud800"]}'),),
    ),
    "lone surrogate in a run's scored doc id": Case(
        EVALSET + "    search: {kind: replay, path: run.json}\n",
        "run.json: expected a doc id of valid Unicode (no lone surrogate) for query 'q1'",
        (("run.json", '{"q1": {"\\ud800": 1.0}}'),),
    ),
    "lone surrogate in a run's query id": Case(
        EVALSET + "    search: {kind: replay, path: run.json}\n",
        "run.json: expected a non-empty query id of valid Unicode",
        (("run.json", '{"\\udfff": ["d1"]}'),),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_clear_error(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad config or input file exits 2 quickly with one message naming where it is."""
    if "/dev/zero" in case.suite and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    for name, text in case.files:
        (tmp_path / name).write_text(text, encoding="utf-8")
    config = tmp_path / "cfg.yaml"
    body = f"store: {{path: {tmp_path / 'monitor.db'}}}\nsuites:\n  s:\n{case.suite}"
    config.write_text(case.before() + body, encoding="utf-8")
    start = time.monotonic()
    code = main(["run", "--no-progress", "--config", str(config)])
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert 2 == code, err
    assert case.message in err
    assert "Traceback" not in err
    assert elapsed < BOUND_SECONDS


@pytest.mark.parametrize("score", [math.nan, math.inf, -math.inf, 10**400])
def test_live_hit_with_a_non_finite_score_has_no_score(score: float) -> None:
    """A live search's NaN, infinite or overlong score is recorded as no score."""
    assert (Hit("d1"),) == normalise_hits([{"id": "d1", "score": score}])


@pytest.mark.parametrize("score", [math.nan, math.inf, -math.inf])
def test_live_hit_record_with_a_non_finite_score_has_no_score(score: float) -> None:
    """A Hit a plug-in built with a NaN or infinite score is recorded as no score."""
    assert (Hit("d1", None, "t"),) == normalise_hits([Hit("d1", score, "t")])


@pytest.mark.parametrize(
    "hit", ["\ud800", {"id": "d\udc00"}, Hit("\ud800"), {"id": "d1", "text": "\ud800"}, ""]
)
def test_live_hit_with_an_empty_or_unencodable_id_fails_the_query(hit: object) -> None:
    """A hit whose id is empty or holds a lone surrogate (no store can keep it) is refused."""
    with pytest.raises(SearchOutputError):
        normalise_hits([hit])


@dataclass(frozen=True)
class Command:
    """A command line (``{dir}`` the test's folder, ``{cfg}`` its config) and the files it
    reads, that must fail with exit 2 and ``message``."""

    argv: tuple[str, ...]
    message: str
    files: tuple[tuple[str, str], ...] = ()


def grades_jsonl(grade: str, qid: str = '"Q01"', doc: str = '"d1"') -> tuple[tuple[str, str]]:
    """Return a one-line JSONL grades file holding ``grade``."""
    return (("g.jsonl", f'{{"query_id": {qid}, "doc_id": {doc}, "grade": {grade}}}\n'),)


ADD = ("judgments", "add", "--config", "{cfg}", "--suite", "s")
COMMANDS = {
    "judgments add: a grade past 64 bits": Command(
        (*ADD, "{dir}/g.jsonl"),
        "g.jsonl:1: expected an integer grade from -9223372036854775808 to 9223372036854775807",
        grades_jsonl(str(2**64)),
    ),
    "judgments add: a 5,000-digit grade": Command(
        (*ADD, "{dir}/g.jsonl"),
        "g.jsonl:1: expected an integer grade from -9223372036854775808",
        grades_jsonl("9" * 5000),
    ),
    "judgments add: JSON nested 100,000 deep": Command(
        (*ADD, "{dir}/g.jsonl"),
        "g.jsonl:1: expected a JSON object nested a few levels deep",
        grades_jsonl("[" * 100_000 + "]" * 100_000),
    ),
    "judgments add: a JSON string grade": Command(
        (*ADD, "{dir}/g.jsonl"),
        "g.jsonl:1: expected a JSON integer grade (not a string), found '2'",
        grades_jsonl('"2"'),
    ),
    "judgments add: a NUL in a doc id": Command(
        (*ADD, "{dir}/g.jsonl"),
        "g.jsonl:1: expected ids without control characters (NUL among them)",
        grades_jsonl("1", doc='"d\\u0000"'),
    ),
    "judgments add: a lone surrogate in a query id": Command(
        (*ADD, "{dir}/g.jsonl"),
        "g.jsonl:1: expected ids of valid Unicode (no lone surrogate)",
        grades_jsonl("1", qid='"\\ud800"'),
    ),
    "judgments add: an Arabic-Indic digit in a CSV grade": Command(
        (*ADD, "{dir}/g.csv"),
        "g.csv:2: expected an integer grade (or an empty one to skip), found '\u0661'",
        (("g.csv", "query_id,doc_id,grade\nQ01,d1,\u0661\n"),),
    ),
    "judgments add: an underscore in a qrels grade": Command(
        (*ADD, "{dir}/g.qrels"),
        "g.qrels:1: expected an integer grade (or an empty one to skip), found '1_0'",
        (("g.qrels", "Q01 0 d1 1_0\n"),),
    ),
    "judgments add: a full-width digit in a qrels grade": Command(
        (*ADD, "{dir}/g.qrels"),
        "g.qrels:1: expected an integer grade (or an empty one to skip), found '\uff12'",
        (("g.qrels", "Q01 0 d1 \uff12\n"),),
    ),
    "judgments add: a CSV header naming query_id twice": Command(
        (*ADD, "{dir}/g.csv"),
        "g.csv:1: expected the column 'query_id' once in the header",
        (("g.csv", "query_id,doc_id,grade,query_id\nQ01,d1,1,Q02\n"),),
    ),
    "judgments add: a CSV field over 131,072 characters": Command(
        (*ADD, "{dir}/g.csv"),
        "g.csv:2: expected valid CSV (field larger than field limit (131072))",
        (("g.csv", "query_id,doc_id,grade\nQ01," + "d" * 200_000 + ",1\n"),),
    ),
    "judgments add: /dev/zero": Command(
        (*ADD, "/dev/zero", "--format", "jsonl"),
        "/dev/zero: expected a regular grades file, found 'a device or socket'",
    ),
    "judgments add: a folder": Command(
        (*ADD, "{dir}", "--format", "csv"),
        ": expected a regular grades file, found 'a folder'",
    ),
    "judgments add: a missing file": Command(
        (*ADD, "{dir}/missing.csv"),
        "missing.csv: expected a readable grades file, found 'No such file or directory'",
    ),
    "a corpus nested 100,000 deep": Command(
        ("evalset", "check", "{dir}/set.jsonl", "--corpus", "{dir}/c.jsonl"),
        "c.jsonl:1: expected a passage object nested a few levels deep",
        (
            ("set.jsonl", '{"id": "q1", "query": "x", "relevant": ["d1"]}\n'),
            ("c.jsonl", '{"id": "d1", "text": ' + "[" * 100_000 + "]" * 100_000 + "}\n"),
        ),
    ),
    "a corpus with a 5,000-digit number": Command(
        ("evalset", "check", "{dir}/set.jsonl", "--corpus", "{dir}/c.jsonl"),
        "c.jsonl:1: expected a passage object with numbers of at most 4300 digits",
        (
            ("set.jsonl", '{"id": "q1", "query": "x", "relevant": ["d1"]}\n'),
            ("c.jsonl", '{"id": "d1", "text": "x", "n": ' + "9" * 5000 + "}\n"),
        ),
    ),
    "a corpus TSV field over 131,072 characters": Command(
        ("evalset", "check", "{dir}/set.jsonl", "--corpus", "{dir}/c.tsv"),
        "c.tsv:2: expected valid CSV (field larger than field limit (131072))",
        (
            ("set.jsonl", '{"id": "q1", "query": "x", "relevant": ["d1"]}\n'),
            ("c.tsv", "id\ttext\nd1\t" + "x" * 200_000 + "\n"),
        ),
    ),
    "evaluate: a 5,000-digit grade in dict qrels": Command(
        ("evaluate", "--qrels", "{dir}/q.json", "--run", "{dir}/r.trec"),
        "q.json: expected an integer grade of at most 19 digits for query 'q1', document 'd1'",
        (("q.json", '{"q1": {"d1": ' + "9" * 5000 + "}}"), ("r.trec", "q1 Q0 d1 1 1.0 t\n")),
    ),
    "evaluate: a NUL in a dict qrels doc id": Command(
        ("evaluate", "--qrels", "{dir}/q.json", "--run", "{dir}/r.trec"),
        "q.json: expected a doc id in query 'q1' without a NUL character",
        (("q.json", '{"q1": {"d\\u0000": 1}}'), ("r.trec", "q1 Q0 d1 1 1.0 t\n")),
    ),
    "evaluate -M past 64 bits": Command(
        ("evaluate", "--qrels", "{dir}/q.qrels", "--run", "{dir}/r.trec", "-M", "9" * 26),
        "argument -M/--max-docs: expected a positive integer from 1 to 9223372036854775807",
        (("q.qrels", "q1 0 d1 1\n"), ("r.trec", "q1 Q0 d1 1 1.0 t\n")),
    ),
    "evaluate -l in Arabic-Indic digits": Command(
        ("evaluate", "--qrels", "{dir}/q.qrels", "--run", "{dir}/r.trec", "-l", "\u0661"),
        "expected a positive integer from 1 to 9223372036854775807 (ASCII digits)",
        (("q.qrels", "q1 0 d1 1\n"), ("r.trec", "q1 Q0 d1 1 1.0 t\n")),
    ),
    **{
        f"k-sweep --ks {ks}": Command(
            ("k-sweep", "--qrels", "{dir}/q.qrels", "--run", "{dir}/r.trec", "--ks", ks),
            f"--ks: expected integers from 1 to 100000 separated by commas, found {shown!r}",
            (("q.qrels", "q1 0 d1 1\n"), ("r.trec", "q1 Q0 d1 1 1.0 t\n")),
        )
        for ks, shown in (("\u0661,3", "\u0661"), ("5," + "9" * 25, "9" * 25), ("0", "0"))
    },
    **{
        f"compare-pipelines --alpha {alpha}": Command(
            ("compare-pipelines", "--config", "{cfg}", "--alpha", alpha),
            "argument --alpha: expected a number above 0 and below 1",
        )
        for alpha in ("nan", "inf", "1", "0", "1e300")
    },
    "report --run past 64 bits": Command(
        ("report", "--config", "{cfg}", "--suite", "s", "--run", str(2**63)),
        "argument --run: expected an id from 1 to 9223372036854775807 (ASCII digits), found",
    ),
    "baseline set --run past 64 bits": Command(
        ("baseline", "set", "--config", "{cfg}", "--suite", "s", "--run", "9" * 25),
        "argument --run: expected an id from 1 to 9223372036854775807",
    ),
    "judgments todo --run in Arabic-Indic digits": Command(
        ("judgments", "todo", "--config", "{cfg}", "--suite", "s", "--run", "\u0661"),
        "argument --run: expected an id from 1",
    ),
    "runs list --limit past 64 bits": Command(
        ("runs", "list", "--config", "{cfg}", "--limit", str(2**64)),
        "argument --limit: expected a count from 1 to 9223372036854775807",
    ),
    "runs list --limit 1_0": Command(
        ("runs", "list", "--config", "{cfg}", "--limit", "1_0"),
        "argument --limit: expected a count from 1 to 9223372036854775807 (ASCII digits), found",
    ),
    "run --shard past 64 bits": Command(
        ("run", "--config", "{cfg}", "--attempt", "a", "--shard", f"0/{2**64}"),
        "argument --shard: expected INDEX/COUNT such as 0/4, COUNT from 1 to 10000",
    ),
    "run --shard in Arabic-Indic digits": Command(
        ("run", "--config", "{cfg}", "--attempt", "a", "--shard", "\u0661/\u0662"),
        "argument --shard: expected INDEX/COUNT such as 0/4",
    ),
    **{
        f"run --shard-deadline {value}": Command(
            (
                "run",
                "--config",
                "{cfg}",
                "--attempt",
                "a",
                "--shard",
                "0/2",
                "--shard-deadline",
                value,
            ),
            "argument --shard-deadline: expected a number of seconds above 0 of at most 604800",
        )
        for value in ("1e300", "inf", "nan", "-1", "0")
    },
    "report --output a folder": Command(
        ("report", "--config", "{cfg}", "--suite", "s", "--output", "{dir}"),
        "argument --output: expected the path of a file to write, found the folder",
    ),
    "report --output under a file": Command(
        ("report", "--config", "{cfg}", "--suite", "s", "--output", "{cfg}/r.html"),
        "argument --output: expected a file in a folder, found",
    ),
    "judgments export --output ''": Command(
        ("judgments", "export", "--config", "{cfg}", "--suite", "s", "--output", ""),
        "argument --output: expected the path of a file to write, found ''",
    ),
    "baseline export --output a missing folder": Command(
        ("baseline", "export", "--config", "{cfg}", "--suite", "s", "--output", "{dir}/new/"),
        "argument --output: expected the path of a file to write, found the folder",
    ),
    "run --failed-queries a folder": Command(
        ("run", "--config", "{cfg}", "--failed-queries", "{dir}"),
        "argument --failed-queries: expected the path of a file to write, found the folder",
    ),
    "run --failed-queries ''": Command(
        ("run", "--config", "{cfg}", "--failed-queries", ""),
        "argument --failed-queries: expected the path of a file to write, found ''",
    ),
    "run --metrics-out a folder": Command(
        ("run", "--config", "{cfg}", "--metrics-out", "{dir}"),
        "argument --metrics-out: expected the path of a file to write, found the folder",
    ),
    "gate --junit a folder": Command(
        ("gate", "--config", "{cfg}", "--suite", "s", "--junit", "{dir}"),
        "argument --junit: expected the path of a file to write, found the folder",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", COMMANDS.values(), ids=COMMANDS.keys())
def test_bad_command_input_is_one_clear_error(
    case: Command, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad file or option of a command exits 2 quickly with one line naming where it is."""
    if "/dev/zero" in case.argv and not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    for name, text in case.files:
        (tmp_path / name).write_text(text, encoding="utf-8")
    config = tmp_path / "cfg.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'monitor.db'}}}\nsuites:\n  s:\n{EVALSET}{SEARCH}",
        encoding="utf-8",
    )
    argv = [arg.format(dir=tmp_path, cfg=config) for arg in case.argv]
    start = time.monotonic()
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse refuses an option before main runs a command
        code = exit.code
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert (2, True, False) == (code, case.message in err, "Traceback" in err), err
    assert (1, True) == (len(errors), elapsed < BOUND_SECONDS)


def test_a_grade_past_64_bits_in_the_store_never_stops_a_run_or_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A grade the store kept from before the door checked it is skipped: run and report go on."""
    from datetime import datetime, timezone

    from monitor.store import JudgmentLayer, open_store

    config = tmp_path / "cfg.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'monitor.db'}}}\nsuites:\n  s:\n{EVALSET}{SEARCH}",
        encoding="utf-8",
    )
    with open_store(tmp_path / "monitor.db") as store:
        when = datetime(2024, 5, 1, tzinfo=timezone.utc)
        grades = {"Q01": {"d1": 2**64}}
        store.add_layer(JudgmentLayer("s", "old.jsonl", "alice", "human", when, grades))
    run = main(["run", "--no-progress", "--config", str(config)])
    report = main(["report", "--config", str(config), "--suite", "s"])
    assert (0, 0) == (run, report), capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_judgments_add_reads_grades_from_a_pipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A named pipe (as a shell's process substitution gives) is read as a grades file is."""
    import threading

    config = tmp_path / "cfg.yaml"
    config.write_text(
        f"store: {{path: {tmp_path / 'monitor.db'}}}\nsuites:\n  s:\n{EVALSET}{SEARCH}",
        encoding="utf-8",
    )
    pipe = tmp_path / "grades.jsonl"
    os.mkfifo(pipe)

    def feed() -> None:
        with open(pipe, "w", encoding="utf-8") as handle:
            handle.write('{"query_id": "Q01", "doc_id": "d1", "grade": 1}\n')

    writer = threading.Thread(target=feed)
    writer.start()
    code = main(["judgments", "add", "--config", str(config), "--suite", "s", str(pipe)])
    if writer.is_alive():  # the command never opened the pipe: let the writer finish
        with open(pipe, "rb") as handle:
            handle.read()
    writer.join()
    out = capsys.readouterr().out
    assert (0, True) == (code, out.strip().endswith("1 grade from grades.jsonl")), out

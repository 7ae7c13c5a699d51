"""The Spark engine: the same logs through DuckDB and Spark give the same rows, in order.

One local SparkSession serves the whole test session (its start-up is most of this file's
time) and is stopped with its JVM at the end. The Spark tests skip without pyspark or Java,
and fail instead under ``MONITOR_REQUIRE_SERVICES=1`` (``.ci/run`` installs both). The
tests of settings and of a missing pyspark or Java need neither.
"""

from __future__ import annotations

import importlib
import math
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import astuple
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("duckdb")

from conftest import unavailable

from monitor.cli import main
from monitor.cli.exits import exit_code
from monitor.config import load_config
from monitor.config.traffic import TrafficConfig
from monitor.config.windows import EVERYTHING, Window
from monitor.errors import ConfigError, UsageError
from monitor.evalset import bundled
from monitor.traffic import engine
from monitor.traffic.clicks import ClickSettings, click_grades
from monitor.traffic.engine import Connection, connect
from monitor.traffic.errors import JavaMissingError, NoTrafficError
from monitor.traffic.importer import import_logs
from monitor.traffic.online import online_metrics
from monitor.traffic.sample import METHODS, Population, draw, population
from monitor.traffic.spark import (
    SparkReader,
    SparkSettings,
    export_tables,
    java,
    parquet_tables,
    pyspark_sql,
    settings_from,
    spark_session,
    spark_sql,
)
from tests.traffic_logs import T0, click, generate, search, write_ndjson

#: A window that cuts the generated logs (about 20 hours of searches) at both ends.
MIDDLE = Window(T0 + timedelta(hours=3), T0 + timedelta(hours=15))
#: Spark settings for small tables: most of a query's time is the JVM compiling it, so the
#: JIT stops at its quick tier and the SQL is interpreted, not compiled.
QUICK = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}
#: Floats of the two engines may differ by the order their sums add up in, no more.
TOLERANCE = 1e-12


def differences(expected: object, found: object, where: str = "") -> list[str]:
    """Return where ``found`` differs from ``expected`` (floats within TOLERANCE)."""
    if isinstance(expected, float) and isinstance(found, float):
        close = math.isclose(expected, found, rel_tol=0.0, abs_tol=TOLERANCE)
        return [] if close else [f"{where}: {expected!r} != {found!r}"]
    if isinstance(expected, list | tuple) and isinstance(found, list | tuple):
        if len(expected) != len(found):
            return [f"{where}: {len(expected)} items != {len(found)}"]
        return [
            line
            for i, (a, b) in enumerate(zip(expected, found, strict=True))
            for line in differences(a, b, f"{where}[{i}]")
        ]
    if isinstance(expected, Mapping) and isinstance(found, Mapping):
        if list(expected) != list(found):
            return [f"{where}: keys {list(expected)} != {list(found)}"]
        return [line for k in expected for line in differences(expected[k], found[k], k)]
    return [] if expected == found and type(expected) is type(found) else [f"{where}: differ"]


def _logs() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return generated logs with two applications, zero-result searches, a click on a
    document not shown (ranked by its ordinal) and a latency on two searches in three."""
    planted = generate(27, n_queries=6, docs_per_query=6, searches_per_query=40, clients=5)
    queries = [
        {
            **row,
            **({"application": "app"} if number % 3 == 0 else {}),
            **({"query_attributes": {"latency_ms": 5.0 + number % 17}} if number % 3 else {}),
        }
        for number, row in enumerate(planted.queries)
    ]
    late = T0 + timedelta(hours=9)
    queries += [
        search(f"z{n}", "no such thing", [], client=f"client-{n}", at=late + timedelta(minutes=n))
        for n in range(4)
    ]
    events = [*planted.events, click("s0-1", "elsewhere", 4, at=T0 + timedelta(hours=1))]
    return queries, events


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The session's one local SparkSession: one core, :data:`QUICK`, no UI."""
    try:
        pyspark_sql()
        java()
    except UsageError as error:
        unavailable(str(error))
    settings = SparkSettings("local[1]", QUICK)
    with spark_session(settings) as session:
        process = session.sparkContext._gateway.proc
        yield session
    assert process.poll() is not None, "the JVM outlived its session"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The traffic database of :func:`_logs`."""
    folder = tmp_path_factory.mktemp("spark")
    queries, events = _logs()
    path = folder / "traffic.duckdb"
    connection = connect(path)
    try:
        import_logs(
            connection,
            [write_ndjson(folder / "q.ndjson", queries)],
            [write_ndjson(folder / "e.ndjson", events)],
            min_distinct_clients=1,
        )
    finally:
        connection.close()
    return path


@pytest.fixture(scope="module")
def duck(db: Path) -> Iterator[Connection]:
    """The database, read by DuckDB."""
    connection = connect(db, read_only=True)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def exported(duck: Connection, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database's tables as Parquet, as Spark reads them."""
    folder = tmp_path_factory.mktemp("tables")
    export_tables(duck, folder)
    return folder


@pytest.fixture
def on_spark(spark: Any, exported: Path) -> SparkReader:
    """The same tables on Spark (registered again for each test: a command drops them)."""
    return parquet_tables(spark, exported)


@pytest.fixture(scope="module")
def populations(duck: Connection, spark: Any, exported: Path) -> tuple[Population, Population]:
    """The sampling population of every stored search, by DuckDB and by Spark."""
    return population(duck, EVERYTHING), population(parquet_tables(spark, exported), EVERYTHING)


@pytest.mark.slow
def test_online_metrics_are_the_same_on_both_engines(
    duck: Connection, on_spark: SparkReader
) -> None:
    """Every online metric (PaulScore too) of a window, per application, is DuckDB's."""
    options: dict[str, Any] = {"reformulation_gap": 120.0, "paulscore_factor": 0.7}
    expected = [astuple(item) for item in online_metrics(duck, MIDDLE, **options)]
    assert [] == differences(
        expected, [astuple(i) for i in online_metrics(on_spark, MIDDLE, **options)]
    )
    assert ["app", "web"] == sorted(str(row[0]) for row in expected[1:])


@pytest.mark.slow
@pytest.mark.parametrize("model", ["coec", "ctr_share"])
def test_click_grades_are_the_same_on_both_engines(
    duck: Connection, on_spark: SparkReader, model: str
) -> None:
    """Each model grades the same pairs with the same counts, scores and confidence."""
    settings = ClickSettings(model=model, min_impressions=5, max_rank=4)  # type: ignore[arg-type]
    expected = [astuple(item) for item in click_grades(duck, settings)]
    assert [] == differences(expected, [astuple(item) for item in click_grades(on_spark, settings)])
    assert len(expected) > 20


@pytest.mark.slow
def test_the_population_is_the_same_on_both_engines(
    populations: tuple[Population, Population],
) -> None:
    """Keys, texts and searches come in the same order from both engines."""
    duck, spark = populations
    assert (duck.keys, duck.texts, duck.searches.tolist()) == (
        spark.keys,
        spark.texts,
        spark.searches.tolist(),
    )


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_a_seeded_sample_picks_the_same_queries_on_both_engines(
    populations: tuple[Population, Population], method: str
) -> None:
    """The draw reads only the population, so one seed picks the same queries on both."""
    duck, spark = populations
    assert draw(duck, method, 3, seed=11).queries() == draw(spark, method, 3, seed=11).queries()


@pytest.mark.slow
def test_a_window_is_utc_on_spark_whatever_the_process_time_zone(
    duck: Connection, on_spark: SparkReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a zone nine hours from UTC, Spark still cuts the window where DuckDB does."""
    expected = population(duck, MIDDLE)
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        found = population(on_spark, MIDDLE)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert (expected.keys, expected.searches.tolist()) == (found.keys, found.searches.tolist())


@pytest.mark.slow
def test_an_empty_window_is_no_data_on_spark_as_on_duckdb(
    duck: Connection, on_spark: SparkReader
) -> None:
    """A window without searches raises NoTrafficError naming the same stored span."""
    empty = Window(datetime(2020, 1, 1), datetime(2020, 1, 2))
    with pytest.raises(NoTrafficError) as expected:
        online_metrics(duck, empty)
    with pytest.raises(NoTrafficError) as found:
        online_metrics(on_spark, empty)
    assert str(expected.value) == str(found.value)


@pytest.mark.slow
def test_evalset_sample_with_the_spark_engine_writes_duckdbs_file(
    db: Path, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evalset sample --engine spark`` writes the file the default engine writes."""
    written = []
    for name in ("duckdb", "spark"):
        out = tmp_path / f"{name}.jsonl"
        code = main(["evalset", "sample", "--from", str(db), "--method", "pps", "--size", "4",
                     "--seed", "3", "--output", str(out), "--engine", name])  # fmt: skip
        written.append((code, out.read_text(encoding="utf-8")))
    capsys.readouterr()
    assert written[0] == written[1]


@pytest.mark.slow
def test_from_clicks_with_the_spark_engine_keeps_duckdbs_grades(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``judgments from-clicks --engine spark`` stores the grades and counts DuckDB does."""
    monkeypatch.chdir(tmp_path)
    texts = [query.text for query in list(bundled.larkfield_evalset())[:3]]
    planted = generate(3, texts=texts, docs_per_query=4, searches_per_query=20)
    kept = []
    for name in ("duckdb", "spark"):
        folder = tmp_path / name
        folder.mkdir()
        db = folder / "traffic.duckdb"
        connection = connect(db)
        try:
            import_logs(
                connection,
                [write_ndjson(folder / "q.ndjson", planted.queries)],
                [write_ndjson(folder / "e.ndjson", planted.events)],
                min_distinct_clients=1,
            )
        finally:
            connection.close()
        code = main(["judgments", "from-clicks", "--suite", "larkfield", "--store",
                     str(folder / "monitor.db"), "--db", str(db), "--engine", name])  # fmt: skip
        connection = connect(db, read_only=True)
        try:
            rows = connection.execute("SELECT * FROM click_grades ORDER BY query_id, doc")
            kept.append((code, [tuple(row) for row in rows.fetchall()]))
        finally:
            connection.close()
    assert [] == differences(kept[0], kept[1])
    assert 12 == len(kept[0][1])


def test_parameters_become_sparks_markers() -> None:
    """``$name`` is written ``:name`` for Spark, and nothing else of the text changes."""
    assert "SELECT 1 WHERE ts >= :start AND a = :click_action" == spark_sql(
        "SELECT 1 WHERE ts >= $start AND a = $click_action"
    )


@pytest.mark.parametrize(
    ("master", "conf", "environ", "expected"),
    [
        (None, [], {}, SparkSettings("local[2]", {})),
        (None, [], {"MONITOR_SPARK_MASTER": "spark://h:7077"}, SparkSettings("spark://h:7077")),
        ("local[4]", [], {"MONITOR_SPARK_MASTER": "spark://h:7077"}, SparkSettings("local[4]")),
        (
            None,
            ["spark.driver.memory=4g"],
            {"MONITOR_SPARK_CONF": "spark.driver.memory=2g 'a.b=x y'"},
            SparkSettings("local[2]", {"spark.driver.memory": "4g", "a.b": "x y"}),
        ),
    ],
)
def test_spark_settings_come_from_options_then_environment_then_defaults(
    master: str | None, conf: list[str], environ: dict[str, str], expected: SparkSettings
) -> None:
    """An option wins over its environment variable, which wins over the default."""
    assert expected == settings_from(master, conf, environ)


@pytest.mark.parametrize(
    ("master", "environ", "option"),
    [("nonsense", {}, "--spark-master"), (None, {"MONITOR_SPARK_MASTER": "local[0]"}, "MONITOR_")],
)
def test_a_master_spark_would_refuse_is_a_usage_error_naming_where_it_came_from(
    master: str | None, environ: dict[str, str], option: str
) -> None:
    """A master that is not local[N], spark://, yarn or k8s:// is refused before Spark starts."""
    with pytest.raises(UsageError, match=f"^{option}.*expected local, local"):
        settings_from(master, [], environ)


def _section(tmp_path: Path, spark: str) -> TrafficConfig:
    config = tmp_path / "monitor.yaml"
    config.write_text(f"traffic:\n  database: t.duckdb\n  spark: {spark}\n")
    section = load_config(config).traffic
    assert section is not None
    return section


def test_the_configs_spark_section_comes_after_the_options_and_the_environment(
    tmp_path: Path,
) -> None:
    """traffic: spark: gives the master and settings that no option or variable gives."""
    section = _section(
        tmp_path, "{master: 'spark://c:7077', conf: {spark.driver.memory: 1g, spark.x: 2}}"
    )
    environ = {"MONITOR_SPARK_CONF": "spark.driver.memory=2g"}
    assert (
        SparkSettings("spark://c:7077", {"spark.driver.memory": "2g", "spark.x": "2"}),
        SparkSettings("local[3]", {"spark.driver.memory": "1g", "spark.x": "2"}),
    ) == (
        settings_from(None, [], environ, section),
        settings_from("local[3]", [], {}, section),
    )


def test_a_bad_spark_section_is_a_config_error_at_its_line(tmp_path: Path) -> None:
    """A setting that is a list, not a string or a number, is refused at its key."""
    with pytest.raises(
        ConfigError, match=r"monitor\.yaml:3: traffic\.spark\.conf\.a: expected a set"
    ):
        _section(tmp_path, "{conf: {a: [1, 2]}}")


def test_a_spark_setting_without_a_value_is_a_usage_error() -> None:
    """``--spark-conf`` takes KEY=VALUE and names what it found instead."""
    with pytest.raises(UsageError, match=r"--spark-conf: expected KEY=VALUE, found 'spark\.x'"):
        settings_from(None, ["spark.x"], {})


@pytest.mark.parametrize(
    "command",
    [
        ["logs", "metrics", "--db", "x"],
        ["judgments", "from-clicks", "--suite", "s", "--db", "x"],
        [
            "evalset",
            "sample",
            "--from",
            "x",
            "--method",
            "topn",
            "--size",
            "1",
            "--output",
            "o.jsonl",
        ],
    ],
)
def test_the_traffic_commands_run_on_duckdb_unless_told(command: list[str]) -> None:
    """``--engine`` defaults to the first of monitor.traffic.engine.ENGINES, DuckDB."""
    from monitor.cli import build_parser

    assert ("duckdb", "duckdb") == (engine.ENGINES[0], build_parser().parse_args(command).engine)


def _metrics_on_spark(db: Path) -> list[str]:
    return ["logs", "metrics", "--db", str(db), "--window", "2w", "--engine", "spark"]


def test_without_pyspark_the_error_names_the_spark_extra(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing pyspark is one line naming the extra to install, and exit 2."""
    real = importlib.import_module

    def without_pyspark(name: str, package: str | None = None) -> Any:
        if name.startswith("pyspark"):
            raise ImportError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", without_pyspark)
    code = main(_metrics_on_spark(db))
    err = capsys.readouterr().err
    assert (2, 1) == (code, len(err.strip().splitlines()))
    assert "pip install 'retrieval-monitor[spark]'" in err


def test_without_java_the_error_says_so(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JAVA_HOME without Java is one line saying Spark needs Java, and exit 2."""

    class NoSession:
        @staticmethod
        def getActiveSession() -> None:
            return None

    monkeypatch.setitem(sys.modules, "pyspark.sql", type(sys)("pyspark.sql"))
    sys.modules["pyspark.sql"].SparkSession = NoSession  # type: ignore[attr-defined]
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    code = main(_metrics_on_spark(db))
    err = capsys.readouterr().err.strip()
    assert (2, 1) == (code, len(err.splitlines()))
    assert f"needs Java 17 or later: JAVA_HOME={tmp_path} holds no bin/java" in err


def test_no_java_anywhere_is_a_usage_error() -> None:
    """Neither JAVA_HOME nor a java on PATH: JavaMissingError, exit 2."""
    with pytest.raises(JavaMissingError, match="no `java` on PATH") as found:
        java({"PATH": "/nonexistent"})
    assert 2 == exit_code(found.value)

"""The traffic SQL on Spark, from the ``spark`` extra, for logs that outgrow one machine.

The aggregations of :mod:`monitor.traffic.sql` run unchanged, as one text for both engines:
:class:`SparkReader` answers the part of a DuckDB connection they read (``execute`` and a
cursor's ``description``, ``fetchall`` and ``fetchone``), so :func:`~monitor.traffic.online.
online_metrics`, :func:`~monitor.traffic.clicks.click_grades` and
:func:`~monitor.traffic.sample.population` take it in place of the connection. What differs
between the dialects is in :func:`spark_sql` and :func:`spark_value`, nowhere else.

Where Spark reads the logs from: the tables of the DuckDB database (:data:`TABLES`) are
exported to Parquet in a temporary folder, one folder per table, and registered as temporary
views of the same names (:func:`tables_on_spark`); a folder laid out the same way, written
by Spark jobs upstream, is read in place with :func:`parquet_tables`. The temporary folder
is made under ``TMPDIR``: with a cluster master it must be a mount every executor reads.

pyspark is imported only here, when a command asks for ``--engine spark``: without it the
command says, in one line, which extra to install; without Java it says so too (both exit
2). Spark's settings come from :func:`settings_from` alone (``--spark-master``,
``--spark-conf``, ``MONITOR_SPARK_MASTER``, ``MONITOR_SPARK_CONF``).
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from monitor.errors import UsageError
from monitor.traffic.engine import Connection
from monitor.traffic.errors import JavaMissingError, SparkStartError

if TYPE_CHECKING:
    from monitor.config.traffic import TrafficConfig

#: The command that installs what ``--engine spark`` needs (and Java 17 or later).
INSTALL: Final = "pip install 'retrieval-monitor[spark]'"

#: The tables the aggregations read, by the name their SQL gives them.
TABLES: Final = ("queries", "impressions", "events")

#: The master unless told otherwise: this machine, two cores.
DEFAULT_MASTER: Final = "local[2]"

#: Settings a user may override: no web UI, no progress bar on stderr (and the driver's log
#: lines at ERROR, from the packaged log4j2 file: :func:`spark_session` adds it).
DEFAULTS: Final = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}
#: The driver JVM's options: the packaged log4j2 file, then any the user gives.
JAVA_OPTIONS: Final = "spark.driver.extraJavaOptions"
#: The packaged log4j2 settings of the driver, under ``monitor/data``.
LOG_CONFIG: Final = ("spark", "log4j2.properties")

#: Settings the SQL depends on: its timestamps are UTC, and so must the session's zone be.
PINNED: Final = {"spark.sql.session.timeZone": "UTC"}

_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
#: The masters Spark's launcher accepts.
_MASTER = re.compile(r"local(\[([1-9][0-9]*|\*)(,[0-9]+)?\])?|yarn|(spark|k8s|mesos)://\S+")


@dataclass(frozen=True, slots=True)
class SparkSettings:
    """Where Spark runs (``master``) and the other settings it is given (``conf``)."""

    master: str = DEFAULT_MASTER
    conf: Mapping[str, str] = field(default_factory=dict)


def settings_from(
    master: str | None = None,
    conf: Sequence[str] = (),
    environ: Mapping[str, str] = os.environ,
    section: TrafficConfig | None = None,
) -> SparkSettings:
    """Return the Spark settings: the options given, else the environment, else the config's
    ``traffic: spark:`` section, else the defaults.

    ``master`` (``--spark-master``) falls back on ``MONITOR_SPARK_MASTER``, then on the
    section's ``master``, then on ``local[2]``; ``conf`` (``--spark-conf KEY=VALUE``,
    repeatable) is read over the ``KEY=VALUE`` pairs of ``MONITOR_SPARK_CONF`` (separated by
    spaces, quoted as a shell quotes them), read over the section's ``conf``. The one place
    Spark's settings are read.
    """
    pairs: dict[str, str] = {} if section is None else dict(section.spark_conf)
    for option, items in (
        ("MONITOR_SPARK_CONF", shlex.split(environ.get("MONITOR_SPARK_CONF", ""))),
        ("--spark-conf", list(conf)),
    ):
        for item in items:
            key, equals, value = item.partition("=")
            if not equals or not key.strip():
                raise UsageError(f"{option}: expected KEY=VALUE, found {item!r}")
            pairs[key.strip()] = value
    told = environ.get("MONITOR_SPARK_MASTER")
    configured = None if section is None else section.spark_master
    chosen = master or told or configured or DEFAULT_MASTER
    if not _MASTER.fullmatch(chosen):
        # Spark's launcher would print its Java stack before the one line of our error.
        option = (
            "--spark-master"
            if master
            else "MONITOR_SPARK_MASTER"
            if told
            else f"{section.config_file if section else 'config'}: traffic.spark.master"
        )
        raise UsageError(
            f"{option}: expected local, local[N], local[*], spark://HOST:PORT, yarn or "
            f"k8s://URL, found {chosen!r}"
        )
    return SparkSettings(master=chosen, conf=pairs)


@contextmanager
def _no_pandas_warning() -> Iterator[None]:
    # pyspark warns, when it first looks for pandas, about the pandas versions it was tested
    # with: not the user's concern, since the traffic SQL hands no data to pandas.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PySpark does not yet", FutureWarning)
        yield


def pyspark_sql() -> Any:
    """Return the ``pyspark.sql`` module, or raise UsageError naming the extra to install."""
    with _no_pandas_warning():
        try:
            return importlib.import_module("pyspark.sql")
        except ImportError:
            raise UsageError(f"--engine spark needs pyspark: {INSTALL}") from None


def java(environ: Mapping[str, str] = os.environ) -> str:
    """Return the ``java`` Spark will start (``$JAVA_HOME/bin/java``, else the one on PATH).

    Raise JavaMissingError when there is none.
    """
    home = environ.get("JAVA_HOME")
    if home:
        found = Path(home) / "bin" / "java"
        if not found.is_file():
            raise JavaMissingError(home)
        return str(found)
    on_path = shutil.which("java", path=environ.get("PATH"))
    if on_path is None:
        raise JavaMissingError(None)
    return on_path


@contextmanager
def spark_session(settings: SparkSettings) -> Iterator[Any]:
    """Yield a SparkSession for ``settings``, stopped with its JVM at the end.

    A session already active in this process (a notebook's, a test's) is yielded as it is,
    with its own settings, and left running.
    """
    module = pyspark_sql()
    active = module.SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    java()
    builder = module.SparkSession.builder.master(settings.master).appName("retrieval-monitor")
    with resources.as_file(resources.files("monitor").joinpath("data", *LOG_CONFIG)) as logs:
        options = f"-Dlog4j2.configurationFile=file:{logs}"
        given = settings.conf.get(JAVA_OPTIONS)
        # The user's options come after, so that their own log4j2 file wins over ours.
        java_options = {JAVA_OPTIONS: f"{options} {given}" if given else options}
        for key, value in {**DEFAULTS, **settings.conf, **java_options, **PINNED}.items():
            builder = builder.config(key, value)
        try:
            with _no_pandas_warning():
                spark = builder.getOrCreate()
        except Exception as error:  # pyspark's start-up errors share no base class
            _end_jvm(importlib.import_module("pyspark").SparkContext)  # started or not
            raise SparkStartError(settings.master, str(error)) from None
        try:
            yield spark
        finally:
            stop(spark)


def stop(spark: Any) -> None:
    """Stop ``spark`` and the JVM pyspark started for it, so no process is left running."""
    context = type(spark.sparkContext)
    spark.stop()
    _end_jvm(context)


def _end_jvm(context: Any) -> None:
    """End the JVM pyspark launched for SparkContext class ``context``, if it did."""
    gateway = getattr(context, "_gateway", None)
    if gateway is None:
        return
    gateway.shutdown()
    process = getattr(gateway, "proc", None)
    if process is not None:  # the JVM ends when its stdin closes
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=60)
    # A session started later in this process launches a JVM of its own.
    context._gateway = None
    context._jvm = None


def spark_sql(statement: str) -> str:
    """Return ``statement`` in Spark's dialect: ``$name`` parameters become ``:name``."""
    return _PARAMETER.sub(r":\1", statement)


def spark_value(value: object) -> object:
    """Return a parameter as Spark binds it: a datetime (UTC, no zone) made aware of UTC.

    pyspark reads a datetime without a zone in the process's local zone; the traffic
    tables' times are UTC, so the zone is said rather than guessed.
    """
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


class SparkCursor:
    """The rows of one statement run on Spark, read as a DB-API cursor reads them."""

    def __init__(self, names: Sequence[str], found: Sequence[Sequence[object]]) -> None:
        self.description = [(name,) for name in names]
        self._rows = [tuple(row) for row in found]

    def fetchall(self) -> list[tuple[object, ...]]:
        """Return every row."""
        return list(self._rows)

    def fetchone(self) -> tuple[object, ...] | None:
        """Return the first row, or None when there is none."""
        return self._rows[0] if self._rows else None


class SparkReader:
    """Run the traffic SQL on a SparkSession whose temporary views are :data:`TABLES`."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def execute(self, query: str, parameters: Mapping[str, object] | None = None) -> SparkCursor:
        """Run ``query`` (DuckDB's dialect, ``$name`` parameters) on Spark; return its rows."""
        args = {name: spark_value(value) for name, value in (parameters or {}).items()}
        with _no_pandas_warning():
            frame = self.spark.sql(spark_sql(query), args=args or None)
            return SparkCursor(frame.columns, frame.collect())


def parquet_tables(spark: Any, folder: Path | str) -> SparkReader:
    """Register ``folder``'s tables (``queries/``, ``impressions/``, ``events/``, Parquet,
    as Spark writes them) as temporary views; return the reader of them."""
    base = str(folder).rstrip("/")
    for name in TABLES:
        spark.read.parquet(f"{base}/{name}").createOrReplaceTempView(name)
    return SparkReader(spark)


def export_tables(connection: Connection, folder: Path) -> None:
    """Write the :data:`TABLES` of the DuckDB ``connection`` as Parquet into ``folder``."""
    for name in TABLES:
        (folder / name).mkdir(parents=True, exist_ok=True)
        target = str(folder / name / "part-0.parquet").replace("'", "''")
        connection.execute(f"COPY {name} TO '{target}' (FORMAT PARQUET)")


@contextmanager
def tables_on_spark(spark: Any, connection: Connection) -> Iterator[SparkReader]:
    """Yield a reader of the DuckDB ``connection``'s tables on ``spark``, exported to a
    temporary folder kept until the end (the views are dropped then too)."""
    with tempfile.TemporaryDirectory(prefix="monitor-spark-") as scratch:
        export_tables(connection, Path(scratch))
        reader = parquet_tables(spark, scratch)
        try:
            yield reader
        finally:
            for name in TABLES:
                spark.catalog.dropTempView(name)


@contextmanager
def on_spark(connection: Connection, settings: SparkSettings) -> Iterator[SparkReader]:
    """Yield a reader of ``connection``'s tables on a Spark session for ``settings``."""
    with spark_session(settings) as spark, tables_on_spark(spark, connection) as reader:
        yield reader

"""What is particular to the SQLite store: paths, URLs, the file's settings, and records."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor.errors import StoreError, UsageError
from monitor.store import QueryRecord, RunRecord, SqlStore, open_store
from monitor.store.location import redact

T0 = datetime(2024, 5, 1, 3, 0, tzinfo=timezone.utc)


def _run(suite: str = "nightly") -> RunRecord:
    return RunRecord(suite, "bm25", T0, T0, queries=(QueryRecord("q1", {"ndcg@10": 1.0}),))


def test_a_plain_path_creates_the_file_and_its_folders(tmp_path: Path) -> None:
    """Opening a plain path creates the missing folders and the database file."""
    path = tmp_path / "deep" / "er" / "runs.db"
    open_store(path).close()
    assert path.is_file()


def test_a_sqlite_url_and_its_path_open_the_same_database(tmp_path: Path) -> None:
    """``sqlite:////abs/path.db`` (four slashes) and the plain path name the same file."""
    path = tmp_path / "runs.db"
    with open_store(f"sqlite:///{path}") as by_url:
        run_id = by_url.save_run(_run())
    with open_store(str(path)) as by_path:
        assert run_id == by_path.get_run(run_id).run_id


def test_the_store_names_its_location_as_a_url(tmp_path: Path) -> None:
    """The store's location, used in its errors, is the sqlite URL of the absolute path."""
    with open_store(tmp_path / "runs.db") as store:
        assert f"sqlite:////{str(tmp_path).lstrip('/')}/runs.db" == store.location


def test_the_database_is_in_wal_mode(tmp_path: Path) -> None:
    """The database file is left in WAL journal mode, so readers never block the writer."""
    path = tmp_path / "runs.db"
    open_store(path).close()
    with sqlite3.connect(path) as connection:
        assert ("wal",) == connection.execute("PRAGMA journal_mode").fetchone()


def test_foreign_keys_are_enforced(tmp_path: Path) -> None:
    """The store's connection enforces foreign keys."""
    with open_store(tmp_path / "runs.db") as store:
        assert isinstance(store, SqlStore)
        assert "sqlite" == store.dialect
        with pytest.raises(StoreError, match="FOREIGN KEY"), store._write("test") as tx:
            tx.execute("INSERT INTO baselines VALUES ('nightly', 404, '2024-05-01')")


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    """A file that is not SQLite raises StoreError naming the file."""
    path = tmp_path / "notes.txt"
    path.write_text("not a database, but long enough to have a header\n" * 10)
    with pytest.raises(StoreError, match=r"notes\.txt"):
        open_store(path)


def test_an_unknown_scheme_is_a_usage_error() -> None:
    """A URL of a database the store does not speak raises UsageError listing the known ones."""
    with pytest.raises(UsageError, match="known schemes: sqlite, postgresql, postgres"):
        open_store("mysql://root@localhost/db")


def test_in_memory_store_works() -> None:
    """``:memory:`` opens a private in-memory database."""
    with open_store(":memory:") as store:
        run_id = store.save_run(_run())
        assert run_id == store.get_run(run_id).run_id


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u:secret@h:5432/db", "postgresql://u:***@h:5432/db"),
        (
            "postgresql://h/db?password=secret&sslmode=require",
            "postgresql://h/db?password=***&sslmode=require",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_redact_hides_passwords(url: str, expected: str) -> None:
    """A URL's password never reaches a message."""
    assert expected == redact(url)


def test_an_unreachable_postgres_is_a_store_error_without_the_password() -> None:
    """Failing to connect raises StoreError whose message hides the password."""
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError, match="cannot connect") as caught:
        open_store("postgresql://u:secret@127.0.0.1:1/db")
    assert "secret" not in str(caught.value)


# Records ------------------------------------------------------------------------------------


def test_a_naive_time_is_refused() -> None:
    """A run's times must carry a time zone."""
    with pytest.raises(UsageError, match="started_at must be a timezone-aware"):
        RunRecord("nightly", "bm25", datetime(2024, 5, 1), T0)


def test_an_unknown_status_is_refused() -> None:
    """A run is either ok or failed."""
    with pytest.raises(UsageError, match="'ok' or 'failed'"):
        RunRecord("nightly", "bm25", T0, T0, status="partial")  # type: ignore[arg-type]


def test_records_are_frozen() -> None:
    """A record's mappings cannot be changed after it is made."""
    run = _run()
    with pytest.raises(TypeError):
        run.means["ndcg@10"] = 1.0  # type: ignore[index]


def test_a_three_slash_sqlite_url_is_relative_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite:///state/runs.db`` opens state/runs.db under the working folder."""
    monkeypatch.chdir(tmp_path)
    open_store("sqlite:///state/runs.db").close()
    assert (tmp_path / "state" / "runs.db").is_file()


def test_a_sqlite_url_with_a_host_is_refused() -> None:
    """``sqlite://host/x.db`` is not a SQLite URL: a UsageError says which forms are."""
    with pytest.raises(UsageError, match=r"sqlite:////absolute/path\.db"):
        open_store("sqlite://host/x.db")

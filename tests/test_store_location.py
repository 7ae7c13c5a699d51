"""Store URLs and paths: the one parser the config, the store and ``report`` share."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.errors import StoreError, UsageError
from monitor.store import open_store
from monitor.store.location import StoreLocation, parse_store_url, store_location

# (URL or path, where it puts the store)
LOCATIONS = [
    ("monitor.db", StoreLocation("sqlite", path=Path("monitor.db"))),
    ("/var/lib/monitor.db", StoreLocation("sqlite", path=Path("/var/lib/monitor.db"))),
    ("~/monitor.db", StoreLocation("sqlite", path=Path("~/monitor.db"))),
    (":memory:", StoreLocation("sqlite")),
    ("sqlite:///data/monitor.db", StoreLocation("sqlite", path=Path("data/monitor.db"))),
    ("sqlite:////var/lib/monitor.db", StoreLocation("sqlite", path=Path("/var/lib/monitor.db"))),
    ("SQLite:///monitor.db", StoreLocation("sqlite", path=Path("monitor.db"))),
    ("sqlite:///:memory:", StoreLocation("sqlite")),
    ("sqlite:///", StoreLocation("sqlite")),
    ("postgresql://u:pw@db:5432/m", StoreLocation("postgresql", url="postgresql://u:pw@db:5432/m")),
    ("postgres://u@db/m", StoreLocation("postgresql", url="postgresql://u@db/m")),
    ("postgresql+psycopg://u@db/m", StoreLocation("postgresql", url="postgresql://u@db/m")),
    ("PostgreSQL://u@db/m", StoreLocation("postgresql", url="postgresql://u@db/m")),
]


@pytest.mark.parametrize(("target", "expected"), LOCATIONS, ids=[t for t, _ in LOCATIONS])
def test_a_url_or_path_names_its_store(target: str, expected: StoreLocation) -> None:
    """Each accepted spelling gives the store kind and the path or libpq URL it names."""
    assert expected == store_location(target)


# (URL, part of the message)
REFUSED = [
    ("mysql://u:pw@h/db", "unknown scheme 'mysql'; known schemes: sqlite, postgresql, postgres"),
    ("postgresql+asyncpg://h/db", "unknown scheme 'postgresql+asyncpg'"),
    ("sqlite://monitor.db", "expected sqlite:///relative/path.db, sqlite:////absolute/path.db"),
    ("monitor.db", "unknown scheme 'monitor.db'"),
]


@pytest.mark.parametrize(("url", "message"), REFUSED, ids=[u for u, _ in REFUSED])
def test_an_unreadable_url_is_a_usage_error(url: str, message: str) -> None:
    """A URL the store cannot read raises UsageError saying what was expected."""
    with pytest.raises(UsageError, match=message.replace("+", r"\+")):
        parse_store_url(url)


def test_a_refused_url_hides_its_password() -> None:
    """The error for an unknown scheme names the URL without its password."""
    with pytest.raises(UsageError) as caught:
        parse_store_url("mysql://monitor:hunter22@db/m")
    assert "hunter22" not in str(caught.value)
    assert str(caught.value).startswith("store URL 'mysql://monitor:***@db/m': ")


def test_the_psycopg_driver_url_the_config_accepts_opens_postgres() -> None:
    """``postgresql+psycopg://`` reaches PostgreSQL (a connection error), not a usage error."""
    with pytest.raises(StoreError):
        open_store("postgresql+psycopg://monitor@127.0.0.1:1/monitor")


def test_a_store_path_naming_a_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store`` naming a folder is exit 2, saying a file was expected, never exit 1."""
    from monitor.cli import main

    assert 2 == main(["baseline", "list", "--store", str(tmp_path)])
    assert "is a folder; expected a SQLite file" in capsys.readouterr().err

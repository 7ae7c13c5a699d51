"""Shared test configuration.

Tests that need a real service carry ``@pytest.mark.service``. They skip when the service
is not reachable, except where ``MONITOR_REQUIRE_SERVICES=1`` (as in ``.ci/run``, which
starts every service): there an unreachable service fails the test instead of hiding it.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import pytest
from hypothesis import settings


def _cache_bytecode() -> None:
    """Keep compiled bytecode where the environment turns writing it off.

    Each worker rewrites and compiles every test module, and hundreds of tests start
    ``python -m monitor``: without bytecode each of them compiles everything again. Where
    ``PYTHONDONTWRITEBYTECODE`` asks for no ``__pycache__`` in the tree, the suite keeps it in
    a folder of the temporary directory instead (``PYTHONPYCACHEPREFIX``), for the child
    processes too.
    """
    if not sys.dont_write_bytecode:
        return
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str(
        Path(tempfile.gettempdir()) / "retrieval-monitor-pycache"
    )
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix


_cache_bytecode()

# Property tests check values, not speed: on a loaded 2-core machine an example can take
# longer than hypothesis's default 200 ms deadline without anything being wrong.
settings.register_profile("monitor", deadline=None)
settings.load_profile("monitor")


def services_required() -> bool:
    """Return whether an unreachable service must fail the test rather than skip it."""
    return os.environ.get("MONITOR_REQUIRE_SERVICES") == "1"


def unavailable(reason: str) -> None:
    """Skip the current test, or fail it when services are required."""
    if services_required():
        pytest.fail(f"required service unavailable: {reason}")
    pytest.skip(reason)


#: The database scripts/start-postgres.sh starts, unless MONITOR_POSTGRES_URL names another.
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:55432/monitor_test"


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """Return the URL of a reachable PostgreSQL database, or skip."""
    url = os.environ.get("MONITOR_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    try:
        import psycopg
    except ImportError:
        unavailable("psycopg is not installed (pip install 'retrieval-monitor[postgres]')")
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        unavailable(f"no PostgreSQL at {urlsplit(url).hostname}:{urlsplit(url).port} ({exc})")
    return url


@pytest.fixture
def postgres_schema_url(postgres_url: str) -> Iterator[str]:
    """Return a URL whose connections work in a new, empty schema; drop it afterwards."""
    import psycopg

    name = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
        parts = urlsplit(postgres_url)
        options = urlencode({"options": f"-c search_path={name}"}, quote_via=quote)
        query = f"{parts.query}&{options}" if parts.query else options
        yield urlunsplit(parts._replace(query=query))
        admin.execute(f"DROP SCHEMA {name} CASCADE")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.service)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Return the URL of an empty store: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/monitor.db"
    url: str = request.getfixturevalue("postgres_schema_url")
    return url


#: Where Debian's chromium-driver package puts the driver.
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextmanager
def chromium(width: int, height: int, *, console_log: bool = False) -> Iterator[Any]:
    """Yield a headless Chromium driven by selenium in a ``width`` x ``height`` window
    (keeping the console log with ``console_log``); skip, or fail where services are
    required, when selenium, Chromium or its driver is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed")
    if shutil.which("chromium") is None or not Path(CHROMEDRIVER).exists():
        unavailable("Chromium or chromedriver is not installed")
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.binary_location = shutil.which("chromium") or "chromium"
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_window_size(width, height)
        yield driver
    finally:
        driver.quit()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Sum the skipped tests up by reason, one line each, above the closing line.

    The services a test needs (PostgreSQL, Prometheus, ...) give the same reason for every
    test they skip; listing each skip would bury the summary.
    """
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = text.removeprefix("Skipped: ").split(":", 1)[0].strip()
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped, by reason")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            terminalreporter.write_line(f"{count:5d}  {reason}")


@pytest.fixture(autouse=True)
def _no_log_handler_outlives_its_test() -> Iterator[None]:
    """Take away the log handler a test's ``main()`` put on the root logger.

    Otherwise a scheduler thread still finishing after its test writes its lines between
    the test runner's own.
    """
    yield
    from monitor.logs import LogHandler

    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, LogHandler)]:
        root.removeHandler(handler)


@pytest.fixture(scope="session")
def _folders_of_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the folder that holds each test's spool and cache folders."""
    return tmp_path_factory.mktemp("folders")


@pytest.fixture
def tmp_path(_folders_of_the_tests: Path) -> Path:
    """Return a new, empty folder of the test's own, as pytest's ``tmp_path`` does.

    Made with ``tempfile.mkdtemp``, as the spool folders below: pytest numbers each folder
    by listing every earlier one, and removes the old ones the same way, which over the
    suite's thousands of tests costs seconds.
    """
    return Path(tempfile.mkdtemp(dir=_folders_of_the_tests))


@pytest.fixture(autouse=True)
def _spool_in_the_tests_own_folder(
    _folders_of_the_tests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep the alert spool and the eval-set cache of every test out of the user's folders.

    ``tempfile.mkdtemp`` rather than ``tmp_path_factory.mktemp``: the latter lists the whole
    base folder to number each new one, which over thousands of tests grows quadratic.
    """
    own = Path(tempfile.mkdtemp(dir=_folders_of_the_tests))
    (own / "spool").mkdir()
    (own / "cache").mkdir()
    monkeypatch.setenv("MONITOR_SPOOL_DIR", str(own / "spool"))
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(own / "cache"))


#: How long a test's own threads get to end after it, before they count as left running.
THREAD_GRACE_SECONDS = 2.0

#: Names of the worker threads that a server a whole module shares may keep between its
#: tests (see :func:`threads_kept_by_a_shared_server`).
_shared_pools: set[str] = set()


def lingering(
    before: set[threading.Thread], grace: float, *, kept: Iterable[str] = ()
) -> list[threading.Thread]:
    """Return the threads started since ``before`` still alive after a ``grace``-second join,
    leaving out (and not waiting for) those called by a name in ``kept``."""
    deadline = time.monotonic() + grace
    names = set(kept)
    left = [
        t for t in threading.enumerate() if t not in before and t.is_alive() and t.name not in names
    ]
    for thread in left:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in left if t.is_alive()]


@contextmanager
def threads_kept_by_a_shared_server(name: str) -> Iterator[None]:
    """Let a module-scoped server keep its pool of worker threads called ``name`` between
    tests; when the server has stopped, fail if any of them is still running."""
    before = set(threading.enumerate())
    _shared_pools.add(name)
    try:
        yield
    finally:
        _shared_pools.discard(name)
    left = [t for t in lingering(before, THREAD_GRACE_SECONDS) if t.name == name]
    if left:
        pytest.fail(f"{len(left)} {name}(s) outlived their server", pytrace=False)


@pytest.fixture(autouse=True)
def _no_thread_outlives_its_test() -> Iterator[None]:
    """Fail a test that leaves a thread it started running, daemon or not.

    A thread left behind goes on into the next tests: a scheduler's abandoned run that
    reaches a real ``run_suite`` while another module measures the garbage collector, a
    server still holding a port. Each test joins or stops what it starts.
    """
    before = set(threading.enumerate())
    yield
    left = lingering(before, THREAD_GRACE_SECONDS, kept=_shared_pools)
    if left:
        names = ", ".join(sorted(f"{t.name} (daemon={t.daemon})" for t in left))
        pytest.fail(f"the test left {len(left)} thread(s) running: {names}", pytrace=False)

"""The errors the monitor raises on purpose.

Every class derives from :class:`MonitorError` and builds its own message from its fields, so
callers raise ``InputError(path, line, "an integer grade", found="high")`` and never format
strings by hand. The command line maps each class to an exit code in one table
(:data:`monitor.cli.exits.ERROR_CODES`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path


class MonitorError(Exception):
    """Root of every error the monitor raises on purpose."""


class UsageError(MonitorError):
    """A value given by the caller (argument, option, API parameter) is not acceptable."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MetricError(UsageError):
    """A metric name does not parse, names an unknown measure, or has a bad cutoff."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"metric {name!r}: {reason}")
        self.name = name
        self.reason = reason


class UnknownMetricError(MetricError):
    """A metric name names no known measure."""

    def __init__(self, name: str, known: Iterable[str], *, suggestion: str | None = None) -> None:
        self.known = tuple(sorted(known))
        self.suggestion = suggestion
        hint = f"did you mean {suggestion!r}? " if suggestion else ""
        super().__init__(name, f"unknown measure; {hint}known measures: {', '.join(self.known)}")


class InputError(MonitorError):
    """A file or in-memory input is malformed.

    ``source`` names the file (or ``"<run>"`` style labels for in-memory data), ``line`` the
    1-based line when known, ``expected`` what should have been there and ``found`` what was.
    """

    def __init__(
        self,
        source: str | Path,
        expected: str,
        *,
        line: int | None = None,
        found: object = None,
    ) -> None:
        self.source = str(source)
        self.line = line
        self.expected = expected
        self.found = found
        where = self.source if line is None else f"{self.source}:{line}"
        message = f"{where}: expected {expected}"
        if found is not None:
            message += f", found {_short(found)}"
        super().__init__(message)


class ConfigError(MonitorError):
    """A configuration file or value is invalid.

    ``key`` is the dotted key path (``suites.nightly.metrics[2]``), ``line`` the 1-based line in
    ``source`` when known.
    """

    def __init__(
        self,
        source: str | Path,
        key: str,
        expected: str,
        *,
        line: int | None = None,
        found: object = None,
    ) -> None:
        self.source = str(source)
        self.key = key
        self.line = line
        self.expected = expected
        self.found = found
        where = self.source if line is None else f"{self.source}:{line}"
        message = f"{where}: {key}: expected {expected}"
        if found is not None:
            message += f", found {_short(found)}"
        super().__init__(message)


def _short(value: object, limit: int = 80) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SearchSetupError(MonitorError):
    """A search plug-in cannot be built: bad options, an unimportable target, a missing file.

    ``spec`` names the plug-in as configured (``python:pkg.mod:make``, ``http``, ...);
    ``option`` is the option at fault (``timeout``, ``headers.Authorization``) when one is.
    """

    def __init__(self, spec: str, reason: str, *, option: str | None = None) -> None:
        super().__init__(f"search {spec}: {reason}")
        self.spec = spec
        self.reason = reason
        self.option = option


class UnknownSearchKindError(SearchSetupError):
    """A search kind names neither a built-in nor an installed plug-in."""

    def __init__(self, kind: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.known = tuple(sorted(known))
        super().__init__(repr(kind), f"unknown search kind; known kinds: {', '.join(self.known)}")


class SearchCallError(MonitorError):
    """One search call failed; the runner records it against its query.

    ``error_type`` is what the run records (``HTTPStatusError 503``); a ``retryable`` error is
    tried again when the run allows retries.
    """

    def __init__(self, error_type: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message
        self.retryable = retryable


class SearchOutputError(SearchCallError):
    """A search answered with something that is not a ranking of hits."""

    def __init__(self, expected: str, *, found: object = None) -> None:
        message = f"expected {expected}"
        if found is not None:
            message += f", found {_short(found)}"
        super().__init__("SearchOutputError", message)
        self.expected = expected
        self.found = found


class EmbedderSetupError(SearchSetupError):
    """An embedder cannot be built: a bad ``embedding`` option, a model file that does not
    load, a missing extra.

    ``spec`` names the embedder (``onnx``, ``http``); ``option`` is the key of the
    ``embedding`` mapping at fault when one is. A search kind that embeds its queries raises
    it again as its own SearchSetupError with the option ``embedding.<key>``.
    """

    def __init__(self, spec: str, reason: str, *, option: str | None = None) -> None:
        MonitorError.__init__(self, f"embedding {spec}: {reason}")
        self.spec = spec
        self.reason = reason
        self.option = option


class UnknownEmbedderKindError(EmbedderSetupError):
    """An embedding kind names neither a built-in nor an installed plug-in."""

    def __init__(self, kind: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.known = tuple(sorted(known))
        super().__init__(
            repr(kind), f"unknown embedding kind; known kinds: {', '.join(self.known)}"
        )


class EmbeddingCallError(SearchCallError):
    """An embedding request failed: an error status, a timeout, an answer of the wrong shape.

    ``status`` is the HTTP status when there was one. The message never holds the API key.
    """

    def __init__(
        self, error_type: str, message: str, *, status: int | None = None, retryable: bool = False
    ) -> None:
        super().__init__(error_type, message, retryable=retryable)
        self.status = status


class SearchBackendError(MonitorError):
    """The search failed the run as a whole: an infrastructure failure, never a quality result.

    ``sent`` and ``failed`` count the queries that had an outcome before the run stopped and
    those of them that failed, when the raiser knew them (None otherwise); the failed run's
    record and gauges carry them.
    """

    def __init__(self, message: str, *, sent: int | None = None, failed: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.sent = sent
        self.failed = failed


class ErrorBudgetExceeded(SearchBackendError):
    """More queries failed than the run's error budget allows.

    ``total`` is the number of queries in the run, ``sent`` those that had an outcome before
    it stopped (``total`` when not given).
    """

    failed: int
    sent: int

    def __init__(
        self,
        failed: int,
        total: int,
        budget: float,
        errors: dict[str, int] | None = None,
        *,
        sent: int | None = None,
    ) -> None:
        self.total = total
        self.budget = budget
        self.errors = dict(errors or {})
        share = failed / total if total else 0.0
        message = (
            f"{failed} of {total} queries failed ({share:.1%}), "
            f"above the error budget of {budget:.1%}"
        )
        if self.errors:
            top = sorted(self.errors.items(), key=lambda item: (-item[1], item[0]))
            message += "; errors: " + ", ".join(f"{kind} x{count}" for kind, count in top)
        super().__init__(message, sent=total if sent is None else sent, failed=failed)


class NotMeasured(SearchBackendError):
    """A run answered too few of its eval set's answerable queries to measure anything.

    Whatever the error budget allowed, a run that scored fewer than ``needed`` of the
    ``answerable`` queries (those judging a document relevant) measured nothing worth
    comparing: it is a failed run, never a baseline, and the gate never passes it.
    ``measured`` answerable queries were answered; ``sent`` and ``failed`` count the run's
    outcomes as the error budget does.
    """

    def __init__(
        self,
        measured: int,
        needed: int,
        answerable: int,
        *,
        sent: int,
        failed: int,
        why: str = "",
    ) -> None:
        self.measured = measured
        self.needed = needed
        self.answerable = answerable
        if answerable == 0:
            message = "nothing to measure: no query of the eval set is answerable"
        else:
            message = (
                f"measured {measured} of {answerable} answerable queries, "
                f"below the {needed} needed (runner.min_measured)"
            )
        super().__init__(message + (f"; {why}" if why else ""), sent=sent, failed=failed)


class RunTerminated(SearchBackendError):
    """The run was asked to stop (SIGTERM, say) before every query had run.

    A search backend error by family, since what it leaves is the same: a ``failed`` run in
    the store, a monitor-failure alert, the failure gauges and exit code 3. ``done`` queries
    of ``total`` had an outcome when the run stopped.
    """

    def __init__(self, done: int, total: int) -> None:
        self.done = done
        self.total = total
        super().__init__(f"terminated: asked to stop after {done} of {total} queries")


class InternalError(MonitorError):
    """A check of the monitor's own figures failed while a run was measured: a fault of the
    monitor (exit 1), never of the config, which still fails the run loudly.

    ``stage`` says what the monitor was doing (``measuring the run``), ``reason`` what the
    check said.
    """

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"the monitor failed while {stage}: {reason}")
        self.stage = stage
        self.reason = reason


class StoreError(MonitorError):
    """The run store cannot do what was asked: unreachable, corrupt, or a write that failed.

    ``location`` names the store (a path or a URL without its password).
    """

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"store {location}: {message}")
        self.location = location
        self.message = message


class StoreSchemaError(StoreError):
    """The database's schema is newer than this version of the monitor understands."""

    def __init__(self, location: str, found: int, supported: int) -> None:
        super().__init__(
            location,
            f"schema version {found} is newer than the {supported} this version of "
            "retrieval-monitor understands; upgrade retrieval-monitor to use this database",
        )
        self.found = found
        self.supported = supported


class StoreLookupError(StoreError):
    """A record named by its id or key is not in the store (``what`` is ``"run"``, ...)."""

    def __init__(self, location: str, what: str, key: object) -> None:
        super().__init__(location, f"no {what} {key!r}")
        self.what = what
        self.key = key


class BaselineError(StoreError):
    """A run cannot be pinned as a suite's baseline (missing, another suite's, or failed)."""

    def __init__(self, location: str, suite: str, run_id: int, reason: str) -> None:
        super().__init__(location, f"cannot pin run {run_id} as baseline of {suite!r}: {reason}")
        self.suite = suite
        self.run_id = run_id
        self.reason = reason


class LayersChangedError(StoreError):
    """A judgment layer was added to the suite since the caller read its layers, so a check
    made on what it read may no longer hold (see ``Store.add_layer``'s ``after``)."""

    def __init__(self, location: str, suite: str, expected: int, found: int) -> None:
        super().__init__(
            location,
            f"suite {suite!r}: expected its newest judgment layer to be {expected}, found "
            f"{found}: another layer was added meanwhile",
        )
        self.suite, self.expected, self.found = suite, expected, found


class StoreLockedError(StoreError):
    """Another process holds the run lock of a suite."""

    def __init__(self, location: str, suite: str, host: str, pid: int, since: datetime) -> None:
        super().__init__(
            location,
            f"suite {suite!r} is locked by pid {pid} on {host} since {since.isoformat()}",
        )
        self.suite = suite
        self.host = host
        self.pid = pid
        self.since = since


class LockLostError(StoreLockedError):
    """The run lock was taken over while this run held it: the run is not stored, since the
    process that holds the lock now runs the suite and stores its own."""

    def __init__(self, location: str, suite: str, host: str, pid: int, since: datetime) -> None:
        StoreError.__init__(
            self,
            location,
            f"suite {suite!r}: this run's lock was taken over by pid {pid} on {host} at "
            f"{since.isoformat()} while it ran; the run is not stored, that process runs "
            "the suite now",
        )
        self.suite = suite
        self.host = host
        self.pid = pid
        self.since = since


class LockedTooLongError(StoreLockedError):
    """A suite was skipped for its held lock too many times in a row, or for too long."""

    def __init__(
        self,
        location: str,
        suite: str,
        host: str,
        pid: int,
        since: datetime,
        *,
        skips: int,
        skipping_since: datetime,
    ) -> None:
        StoreError.__init__(
            self,
            location,
            f"suite {suite!r} was skipped {skips} times in a row since "
            f"{skipping_since.isoformat()}: it is locked by pid {pid} on {host} since "
            f"{since.isoformat()}",
        )
        self.suite = suite
        self.host = host
        self.pid = pid
        self.since = since
        self.skips = skips
        self.skipping_since = skipping_since


class NotifierSetupError(MonitorError):
    """A notifier cannot be built: a bad option, a missing environment variable, a plug-in
    that does not load.

    ``notifier`` names it as configured (its name or kind), never its URL or key;
    ``option`` is the option at fault (``timeout``, ``headers``) when one is.
    """

    def __init__(self, notifier: str, reason: str, *, option: str | None = None) -> None:
        super().__init__(f"notifier {notifier}: {reason}")
        self.notifier = notifier
        self.reason = reason
        self.option = option


class UnknownNotifierKindError(NotifierSetupError):
    """A notifier kind names neither a built-in nor an installed plug-in."""

    def __init__(self, kind: str, known: Iterable[str]) -> None:
        self.kind = kind
        self.known = tuple(sorted(known))
        super().__init__(repr(kind), f"unknown notifier kind; known kinds: {', '.join(self.known)}")


class NotifyError(MonitorError):
    """A notification was not delivered.

    ``notifier`` names the notifier (never its URL or key). ``retryable`` says whether trying
    again soon may help (a connection error, a timeout, a 5xx or 429 answer); ``status`` is
    the HTTP status when there was one and ``retry_after`` the seconds the receiver asked to
    wait.
    """

    def __init__(
        self,
        notifier: str,
        reason: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"notifier {notifier}: {reason}")
        self.notifier = notifier
        self.reason = reason
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class LabelError(UsageError):
    """A Prometheus label name or value cannot be exported (``name`` is the label's name)."""

    def __init__(self, name: str, reason: str, *, value: object = None) -> None:
        message = f"label {name!r}: {reason}"
        if value is not None:
            message += f", found {_short(value)}"
        super().__init__(message)
        self.name = name
        self.reason = reason
        self.value = value


class ExportError(MonitorError):
    """Gauges could not be delivered: a Pushgateway that is down, a file that cannot be
    written, a port that is taken.

    ``target`` names the destination (``pushgateway http://host:9091``, ``textfile PATH``,
    ``http 127.0.0.1:9108``), never a password. The run itself is kept; only its export failed.
    """

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(f"export to {target}: {reason}")
        self.target = target
        self.reason = reason


class ShardAttemptFailed(SearchBackendError):
    """A sharded run's attempt failed: a part was missing when its deadline passed.

    A search backend error by family, since what it leaves is the same: a ``failed`` run in
    the store, a monitor-failure alert, the failure gauges and exit code 3.
    """

    def __init__(
        self,
        suite: str,
        attempt: str,
        missing: tuple[int, ...],
        count: int,
        *,
        why: str | None = None,
    ) -> None:
        self.suite = suite
        self.attempt = attempt
        self.missing = missing
        self.count = count
        parts = ", ".join(f"{index}/{count}" for index in missing)
        if why is None:
            why = f"passed its deadline without shard(s) {parts}"
        super().__init__(f"suite {suite!r}: attempt {attempt!r} {why}")


class ShardMismatchError(UsageError):
    """A shard was refused by its attempt: the attempt runs its suite another way (shard
    count, config or eval set), so this shard's part can never complete it."""


class GeneratorError(MonitorError):
    """A question generator (``evalset generate``) could not be reached or failed; exit 3,
    as a failed search backend."""

    def __init__(self, generator: str, reason: str) -> None:
        self.generator = generator
        self.reason = reason
        super().__init__(f"generator {generator}: {reason}")

"""Fakes for testing code that raises alerts, without a database or a real receiver.

:class:`MemoryStore` keeps state documents and an outbox in memory, with the same rules as
the SQL store (an undelivered message of the same kind and key is replaced).
:class:`RecordingNotifier` records what it is sent and fails on demand. :class:`ManualClock`
is a clock that moves only when told. :class:`RecordingReceiver` is a real HTTP server on
127.0.0.1 that records the requests it gets and answers as scripted, to point a notifier's
``url`` at::

    store, clock = MemoryStore(), ManualClock()
    receiver = RecordingNotifier("suite/test", failures=[NotifyError("suite/test", "down",
        retryable=True)])
    lifecycle = AlertLifecycle(store, {"suite/test": receiver}, clock=clock, sleep=no_sleep)

:func:`breach`, :func:`worse` and :func:`segment` build the comparison records a regression
alert carries, with short defaults, for tests that need an alert without running a
comparison::

    alert = regression_alert("nightly", RegressionDetails(breach("recall@5", 0.70, 0.81)),
        at=clock())
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any, TypeAlias

from monitor.alerts.base import Notification
from monitor.compare.records import Change, QueryDiff, RuleOutcome, SegmentChange
from monitor.config.common import Severity
from monitor.config.model import Check
from monitor.errors import NotifyError


@dataclass(frozen=True, slots=True)
class MemoryMessage:
    """A message in :class:`MemoryStore`'s outbox."""

    id: int
    kind: str
    key: str
    payload: Mapping[str, object]
    attempts: int = 0
    last_error: str | None = None
    delivered: bool = False


@dataclass
class MemoryStore:
    """State documents and an outbox in memory; documents are copied through JSON, as a
    database would."""

    state: dict[tuple[str, str], str] = field(default_factory=dict)
    messages: list[MemoryMessage] = field(default_factory=list)

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return the document under ``namespace``/``key``, or None."""
        raw = self.state.get((namespace, key))
        return None if raw is None else dict(json.loads(raw))

    def put_state(self, namespace: str, key: str, value: Mapping[str, object]) -> None:
        """Store a document under ``namespace``/``key``."""
        self.state[(namespace, key)] = json.dumps(value, allow_nan=False)

    def delete_state(self, namespace: str, key: str) -> bool:
        """Delete the document under ``namespace``/``key``; return whether there was one."""
        return self.state.pop((namespace, key), None) is not None

    def enqueue(self, kind: str, key: str, payload: Mapping[str, object]) -> int:
        """Add a message, or replace the undelivered one of this kind and key."""
        frozen = MappingProxyType(json.loads(json.dumps(payload, allow_nan=False)))
        for index, message in enumerate(self.messages):
            if message.kind == kind and message.key == key and not message.delivered:
                self.messages[index] = _replace(message, payload=frozen)
                return message.id
        message_id = len(self.messages) + 1
        self.messages.append(MemoryMessage(message_id, kind, key, frozen))
        return message_id

    def pending(self, kind: str | None = None) -> list[MemoryMessage]:
        """Return the undelivered messages (of ``kind``), oldest first."""
        return [m for m in self.messages if not m.delivered and (kind is None or m.kind == kind)]

    def mark_delivered(self, message_id: int) -> None:
        """Record the message as delivered."""
        message = self.messages[message_id - 1]
        self.messages[message_id - 1] = _replace(message, delivered=True)

    def abandon(self, message_id: int, reason: str) -> None:
        """Give up on the message: it counts as done, with ``reason`` as its last error."""
        message = self.messages[message_id - 1]
        self.messages[message_id - 1] = _replace(message, delivered=True, last_error=reason)

    def attempt_failed(self, message_id: int, error: str) -> None:
        """Count one failed delivery of the message."""
        message = self.messages[message_id - 1]
        self.messages[message_id - 1] = _replace(
            message, attempts=message.attempts + 1, last_error=error
        )

    def delivered(self) -> list[MemoryMessage]:
        """Return the delivered messages, oldest first."""
        return [m for m in self.messages if m.delivered]


def _replace(message: MemoryMessage, **changes: Any) -> MemoryMessage:
    values = {name: getattr(message, name) for name in MemoryMessage.__slots__}
    values.update(changes)
    return MemoryMessage(**values)


class RecordingNotifier:
    """A notifier that records what it is sent.

    ``failures`` are raised one per call before it starts succeeding (``None`` in it means
    that call succeeds); ``down`` makes every call fail as a refused connection until it is
    set back to False. ``sent`` lists the delivered notifications, ``calls`` every attempt.
    """

    def __init__(
        self,
        name: str = "test",
        *,
        failures: Iterable[NotifyError | None] = (),
        repeat_interval: float | None = None,
    ) -> None:
        self.name = name
        self.failures = list(failures)
        self.down = False
        self.repeat_interval = repeat_interval
        self.sent: list[Notification] = []
        self.calls: list[Notification] = []

    def send(self, notification: Notification) -> None:
        """Record ``notification``, or raise the next failure."""
        self.calls.append(notification)
        if self.down:
            raise NotifyError(self.name, "cannot reach the receiver (down)", retryable=True)
        if self.failures:
            failure = self.failures.pop(0)
            if failure is not None:
                raise failure
        self.sent.append(notification)

    def transitions(self) -> list[tuple[str, str]]:
        """Return (transition, alert rule) of each delivered notification, in order."""
        return [(n.transition, n.alert.rule) for n in self.sent]


class ManualClock:
    """A clock that starts at ``start`` (2030-01-01 UTC) and moves only by :meth:`advance`."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2030, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        """Return the current time."""
        return self.now

    def advance(self, seconds: float = 0.0, **delta: float) -> datetime:
        """Move the clock forward (``advance(60)``, ``advance(hours=1)``); return the time."""
        self.now += timedelta(seconds=seconds, **delta)
        return self.now


def no_sleep(seconds: float) -> None:
    """Do not sleep (for delivery retries in tests)."""


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request a :class:`RecordingReceiver` got, with the exact body bytes."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """Return the body parsed as JSON."""
        return json.loads(self.body)


#: A scripted answer: a status, or a status with headers and a body.
Answer: TypeAlias = "int | tuple[int, Mapping[str, str], bytes]"


class _Server(http.server.ThreadingHTTPServer):
    """A threading HTTP server whose close also ends the connections it still holds open.

    A client's keep-alive connection would otherwise go on being served by its handler
    thread after the port is closed: a stopped receiver would still answer, and the thread
    would outlive the receiver.
    """

    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], handler: type[http.server.BaseHTTPRequestHandler]):
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def server_close(self) -> None:
        """Close the port, end every open connection and join the handler threads."""
        with self._open_lock:
            still_open = list(self._open)
        for connection in still_open:
            with contextlib.suppress(OSError):  # the client closed it meanwhile
                connection.shutdown(socket.SHUT_RDWR)
        super().server_close()


class RecordingReceiver:
    """An HTTP server on 127.0.0.1 (a free port) that records requests and answers them.

    Each request takes the next of ``answers`` (then ``default``). :meth:`stop` closes the
    port (a receiver that is down: connections are refused) and :meth:`start` opens the same
    port again. Use it as a context manager. ``requests`` lists what it recorded; the
    answered-with-2xx ones are in ``accepted``.
    """

    def __init__(self, answers: Iterable[Answer] = (), *, default: Answer = 200) -> None:
        self.answers: list[Answer] = list(answers)
        self.default = default
        self.requests: list[ReceivedRequest] = []
        self.accepted: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """Return the receiver's base URL, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RecordingReceiver:
        """Listen (on the port used before, if any) and serve in a thread."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self.port), self._handler())
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the port and end the connections still open."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def bodies(self, path: str | None = None) -> list[Any]:
        """Return the JSON bodies of the accepted requests (to ``path`` if given)."""
        return [r.json() for r in self.accepted if path is None or r.path == path]

    def __enter__(self) -> RecordingReceiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _answer(self, request: ReceivedRequest) -> tuple[int, Mapping[str, str], bytes]:
        with self._lock:
            self.requests.append(request)
            answer = self.answers.pop(0) if self.answers else self.default
            status, headers, body = (answer, {}, b"") if isinstance(answer, int) else answer
            if 200 <= status < 300:
                self.accepted.append(request)
        return status, headers, body

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = ReceivedRequest(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length),
                )
                status, headers, body = receiver._answer(request)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Keep the test output quiet."""

        return Handler


def breach(
    metric: str = "recall@5",
    current: float | None = 0.70,
    baseline: float | None = 0.81,
    *,
    check: Check | str = Check.MAX_DROP,
    threshold: float = 0.05,
    severity: Severity = "warning",
    rule: str | None = None,
    p_value: float | None = None,
    ci_low: float | None = None,
    ci_high: float | None = None,
) -> RuleOutcome:
    """Return a breached rule outcome: ``metric`` went from ``baseline`` to ``current``.

    The rule's name defaults to ``"<metric> <check>"`` for the checks of a quality metric and
    to the check's key for the others, as the config names rules.
    """
    check = Check(check)
    delta = None if current is None or baseline is None else current - baseline
    return RuleOutcome(
        rule=rule or (f"{metric} {check.value}" if check.needs_metric else check.value),
        check=check,
        metric=metric,
        threshold=threshold,
        severity=severity,
        status="breach",
        current=current,
        baseline=baseline,
        delta=delta,
        p_value=p_value,
        ci_low=ci_low,
        ci_high=ci_high,
        quality=check.needs_metric,
    )


def worse(
    query_id: str,
    query: str = "",
    baseline: float = 1.0,
    current: float = 0.0,
    expected_ids: Iterable[str] = (),
    current_ids: Iterable[str] = (),
    *,
    metric: str = "recall@5",
    change: Change = "lost_hit",
) -> QueryDiff:
    """Return a query that got worse on ``metric``: expected ids and what it retrieved."""
    return QueryDiff(
        query_id=query_id,
        query=query,
        metric=metric,
        baseline=baseline,
        current=current,
        change=change,
        expected_ids=tuple(expected_ids),
        baseline_ids=tuple(expected_ids),
        current_ids=tuple(current_ids),
        baseline_first_rank=1 if baseline > 0 else None,
        current_first_rank=None,
    )


def segment(
    key: str,
    value: str,
    n: int,
    baseline: float,
    current: float,
    *,
    metric: str = "recall@5",
    contribution: float | None = None,
) -> SegmentChange:
    """Return a segment whose ``n`` queries went from ``baseline`` to ``current`` on
    ``metric`` (its contribution defaults to the change itself)."""
    delta = current - baseline
    return SegmentChange(
        key=key,
        value=value,
        metric=metric,
        n=n,
        baseline=baseline,
        current=current,
        delta=delta,
        contribution=delta if contribution is None else contribution,
    )

"""Serve the latest snapshot of every suite on ``/metrics``, for the daemon.

One server per address and port, however many suites report to it: the daemon calls
:meth:`HttpExporter.update` after each run and Prometheus scrapes whatever is latest. The
server is prometheus_client's WSGI app over a registry of its own (never the global one)
whose one collector yields the held families, merged as the Pushgateway would: a failed run
replaces only the attempt gauges, so the last good figures and last-success time stay.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from monitor.errors import ExportError
from monitor.exporters.gauges import merge
from monitor.exporters.snapshot import SuiteSnapshot

#: How often the server thread checks for close(): the longest close() waits.
_POLL_SECONDS = 0.1


class _QuietHandler(WSGIRequestHandler):
    """Serve requests without writing a log line per scrape to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        """Drop the access log line."""


class HttpExporter(Collector):
    """A running ``/metrics`` endpoint; :func:`start_http_exporter` starts one.

    It is also the collector of its own registry: :meth:`collect` yields the latest families
    of every suite it has been given.
    """

    def __init__(self, address: str, port: int) -> None:
        self._lock = threading.Lock()
        self._families: list[Metric] = []
        self._closed = False
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        self._registry = registry
        family, host = _family(address, port)

        class Server(ThreadingWSGIServer):
            address_family = family

        target = f"http {address}:{port}"
        try:
            self._server = make_server(
                host, port, make_wsgi_app(registry), Server, handler_class=_QuietHandler
            )
        except OSError as error:
            raise ExportError(target, f"cannot listen: {error}") from error
        self.address = address
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": _POLL_SECONDS},
            name=f"retrieval-monitor metrics {address}:{self.port}",
            daemon=True,
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """Return the URL Prometheus scrapes."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/metrics"

    def update(self, snapshot: SuiteSnapshot) -> None:
        """Serve ``snapshot`` as its suite's latest run from the next scrape on."""
        with self._lock:
            self._families = merge(self._families, snapshot)

    def register(self, collector: Collector) -> None:
        """Also serve what ``collector`` yields (the daemon's scheduler counters)."""
        self._registry.register(collector)

    def forget(self, suite: str) -> None:
        """Stop serving every series of ``suite`` (a suite removed from the config)."""
        with self._lock:
            kept: list[Metric] = []
            for family in self._families:
                samples = [s for s in family.samples if s.labels.get("suite") != suite]
                if samples:
                    copy = Metric(family.name, family.documentation, family.type, family.unit)
                    copy.samples = samples
                    kept.append(copy)
            self._families = kept

    def collect(self) -> Iterator[Metric]:
        """Yield the latest families of every suite."""
        with self._lock:
            return iter(list(self._families))

    def close(self) -> None:
        """Stop serving and free the port; closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> HttpExporter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def start_http_exporter(address: str = "127.0.0.1", port: int = 9108) -> HttpExporter:
    """Start serving ``/metrics`` on ``address:port`` in a background thread.

    ``port`` 0 picks a free port (see :attr:`HttpExporter.port`). Raise ExportError if the
    address cannot be listened on (a port in use, an address not on this host).
    """
    return HttpExporter(address, port)


def _family(address: str, port: int) -> tuple[socket.AddressFamily, str]:
    """Return the socket family and host to bind ``address`` with (IPv4 or IPv6)."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise ExportError(
            f"http {address}:{port}", f"cannot resolve the address: {error}"
        ) from error
    family, _, _, _, sockaddr = infos[0]
    return family, str(sockaddr[0])

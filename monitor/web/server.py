"""Run the web app in a background thread of another process (the daemon's ``--ui-port``)."""

from __future__ import annotations

import threading
import time

from monitor.errors import UsageError
from monitor.web.app import WebSettings, create_app

#: How long :meth:`WebServer.start` waits for the server to listen.
START_SECONDS = 10.0


class WebServer:
    """The app served by uvicorn from a daemon thread until :meth:`stop`."""

    def __init__(self, settings: WebSettings, address: str, port: int) -> None:
        from monitor.web.extra import require_web

        require_web()
        import uvicorn

        config = uvicorn.Config(
            create_app(settings), host=address, port=port, log_level="warning", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="web-ui", daemon=True)
        self.address, self.port = address, port

    @property
    def url(self) -> str:
        """Return the app's address as a URL, with the port it listens on."""
        return f"http://{self.address}:{self.bound_port}/"

    @property
    def bound_port(self) -> int:
        """Return the port listened on (the one chosen by the system for port 0)."""
        for server in getattr(self._server, "servers", []):
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        return self.port

    def start(self) -> None:
        """Start serving; raise UsageError when the server does not come up (port taken)."""
        self._thread.start()
        deadline = time.monotonic() + START_SECONDS
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise UsageError(
                    f"the web app could not listen on {self.address}:{self.port} "
                    "(is the port taken?)"
                )
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop serving and wait for the thread to end."""
        self._server.should_exit = True
        self._thread.join(timeout=START_SECONDS)

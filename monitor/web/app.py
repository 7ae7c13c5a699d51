"""The web app: pages over the store, the simulator's JSON endpoint, labeling.

:func:`create_app` builds a Starlette app from :class:`WebSettings`; ``retrieval-monitor
serve`` and ``daemon --ui-port`` run it with uvicorn. Pages are rendered on the server with
Jinja2 (autoescaped) and read without JavaScript; only the simulator and the grade buttons
use the app's own small scripts. Everything served ships in the package.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from monitor.errors import LayersChangedError, MonitorError, UsageError
from monitor.web import limits, security
from monitor.web.labels import UNAVAILABLE, Label, LabelSink, default_sink
from monitor.web.views import Cache, Views

if TYPE_CHECKING:
    from jinja2 import Environment
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from monitor.config.model import MonitorConfig
    from monitor.evalset import EvalSet
    from monitor.store import Store

#: Default address and port of ``serve``.
DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 8321

#: What a grade is told when others' grades kept landing while it was checked.
BUSY = "others are grading this suite at the same moment; give your grade again"

#: What a request without the token is told (the error page links to the sign-in form).
SIGN_IN = "this server needs its token: sign in at /login"


@dataclass(frozen=True, slots=True)
class WebSettings:
    """How the app reads and what it allows.

    ``store`` opens a store per request; ``auth_token`` (when set) is required of every
    request; ``allow_labeling`` turns the grade buttons and their endpoint on; ``label_sink``
    records a grade (default: the store's judgment layers, when there are any);
    ``next_runs`` gives each suite's next scheduled run (daemon mode); ``warm`` computes each
    suite's latest comparison in the background at start-up, so the first pages are fast,
    and then every ``refresh_seconds`` (None: never) looks for runs stored since and computes
    theirs, so the first view after a run is as fast as after start-up (a look that finds
    nothing new reads each suite's judgment layers and newest runs, and computes nothing).
    ``address`` is where the server is bound and ``allowed_hosts`` the further names it
    answers to (a request naming any other Host is refused: see
    :func:`security.host_refusal`). ``session_key`` signs the sign-in cookie.
    """

    config: MonitorConfig
    store: Callable[[], Store]
    auth_token: str | None = None
    allow_labeling: bool = False
    label_sink: LabelSink | None = None
    next_runs: Callable[[], Mapping[str, datetime | None]] | None = None
    warm: bool = True
    refresh_seconds: float | None = 5.0
    address: str = DEFAULT_ADDRESS
    allowed_hosts: tuple[str, ...] = ()
    csrf_token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    session_key: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)


def create_app(settings: WebSettings) -> Starlette:
    """Return the app serving ``settings``' config and store."""
    from monitor.web.extra import require_web

    require_web()
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    pages = _Pages(settings)
    routes = [
        Route("/", pages.suites),
        Route("/login", pages.login, methods=["GET", "POST"]),
        Route("/simulator", pages.simulator),
        Route("/definitions", pages.definitions),
        Route("/api/simulate", pages.simulate, methods=["POST"]),
        Route("/api/labels", pages.label, methods=["POST"]),
        Route("/suites/{suite}", pages.suite),
        Route("/suites/{suite}/verify", pages.verify),
        Route("/suites/{suite}/runs/{run_id:int}", pages.run),
        Route("/suites/{suite}/runs/{run_id:int}/queries/{query_id:path}", pages.query),
        Mount("/static", app=StaticFiles(packages=[("monitor.web", "static")]), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stop = threading.Event()
        if settings.warm:
            threading.Thread(target=pages.warm, name="web-warm", daemon=True).start()
            if settings.refresh_seconds is not None:
                refresh = (stop, settings.refresh_seconds)
                threading.Thread(
                    target=pages.refresh, args=refresh, name="web-refresh", daemon=True
                ).start()
        yield
        stop.set()

    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(_Guard, settings=settings, render=pages.error)],
    )


class _Guard:
    """ASGI middleware: the Host, auth, same-origin writes with the CSRF token, the body's
    size, security headers, and a ``Server-Timing`` header with the time the app spent on
    the request."""

    def __init__(
        self, app: Any, settings: WebSettings, render: Callable[[int, str, str], Response]
    ) -> None:
        self.app = app
        self.settings = settings
        self.render = render
        self.hosts = security.allowed_hosts(settings.address, settings.allowed_hosts)
        self.session = (
            None
            if settings.auth_token is None
            else security.session_value(settings.session_key, settings.auth_token)
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.requests import Request

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is None and request.method not in security.SAFE_METHODS:
            # Read the body here, within its limit, so that no handler reads a larger one.
            try:
                if limits.declared_too_large(scope.get("headers", [])):
                    raise limits.BodyTooLarge
                receive = limits.replay(await limits.read_body(receive), receive)
            except limits.BodyTooLarge as error:
                refusal = 413, str(error)

        async def send_with_headers(message: Mapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k.encode(), v.encode()) for k, v in security.HEADERS.items()]
                elapsed = (time.perf_counter() - started) * 1000
                headers.append((b"server-timing", f"app;dur={elapsed:.1f}".encode()))
                message = {**message, "headers": [*message.get("headers", []), *headers]}
            await send(message)

        if refusal is not None:
            from starlette.responses import JSONResponse

            status, text = refusal
            response = (
                JSONResponse({"error": text}, status_code=status)
                if request.url.path.startswith("/api/")
                else self.render(status, text, _here(request))
            )
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> tuple[int, str] | None:
        server = request.scope.get("server")
        local = (str(server[0]), int(server[1])) if server else None
        wrong_host = security.host_refusal(request.headers.get("host"), self.hosts, local)
        if wrong_host is not None:
            return 421, f"refused a request for another host: {wrong_host}"
        token = self.settings.auth_token
        path = request.url.path
        if token is not None and not path.startswith(("/login", "/static/")):
            given = security.bearer(request.headers.get("authorization"))
            cookie = request.cookies.get(security.TOKEN_COOKIE)
            if not (
                security.token_matches(token, given)
                or (self.session is not None and security.token_matches(self.session, cookie))
            ):
                return 401, SIGN_IN
        if request.method not in security.SAFE_METHODS:
            host = request.headers.get("host", "")
            why = security.cross_site(request.headers, host)
            if why is not None:
                return 403, f"refused a cross-site request: {why}"
            if path != "/login" and not security.token_matches(
                self.settings.csrf_token, request.headers.get("x-csrf-token")
            ):
                return 403, "refused a request without this server's CSRF token (X-CSRF-Token)"
        return None


class _Pages:
    """The route handlers, reading through one :class:`Views`."""

    def __init__(self, settings: WebSettings) -> None:
        self.settings = settings
        self.views = Views(
            settings.config, settings.store, next_runs=settings.next_runs, cache=Cache()
        )
        self.env = _environment()
        self.sink = settings.label_sink or default_sink(self._frozen)

    def warm(self) -> None:
        """Compile every template, then compute what the first pages read (see
        :meth:`Views.warm`): the first view of each page kind then pays for neither."""
        for name in self.env.list_templates():
            self.env.get_template(name)
        self.views.warm()

    def refresh(self, stop: threading.Event, every: float) -> None:
        """Until ``stop`` is set, every ``every`` seconds compute what runs stored since the
        last look need (:meth:`Views.warm`: unchanged suites cost a store read each)."""
        from monitor.logs import get_logger

        while not stop.wait(every):
            try:
                self.views.warm()
            except Exception as error:  # a bug: logged, and the pages still work
                get_logger("monitor.web").exception("refresh_failed", error=repr(error))

    def _frozen(self, name: str) -> EvalSet | None:
        return self.views.evalset(self.views.suite(name))

    # Rendering ---------------------------------------------------------------------------

    def page(self, template: str, status: int = 200, **context: Any) -> Response:
        from starlette.responses import HTMLResponse

        html = self.env.get_template(template).render(
            csrf_token=self.settings.csrf_token,
            allow_labeling=self.settings.allow_labeling,
            labeling_available=self.sink is not None,
            suites=list(self.settings.config.suites),
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def error(self, status: int, message: str, back: str = "/") -> Response:
        """Return an error page saying what went wrong; a 401's links to the sign-in page,
        which comes back to ``back`` after signing in."""
        return self.page(
            "error.html",
            status=status,
            status_code=status,
            message=message,
            sign_in=status == 401,
            back=back,
        )

    async def _guarded(self, build: Callable[[], Response]) -> Response:
        from starlette.concurrency import run_in_threadpool

        try:
            return await run_in_threadpool(build)
        except UsageError as error:
            return self.error(404, str(error))
        except MonitorError as error:
            return self.error(500, str(error))
        except Exception as error:  # a bug: logged with its traceback, the page says so
            from monitor.logs import get_logger

            get_logger("monitor.web").exception("page_failed", error=repr(error))
            return self.error(500, f"unexpected error: {type(error).__name__}")

    # Pages -------------------------------------------------------------------------------

    async def suites(self, request: Request) -> Response:
        return await self._guarded(lambda: self.page("suites.html", cards=self.views.suites()))

    async def suite(self, request: Request) -> Response:
        name = request.path_params["suite"]
        return await self._guarded(
            lambda: self.page(
                "suite.html", view=self.views.suite_page(name, _int_param(request, "page", 1))
            )
        )

    async def verify(self, request: Request) -> Response:
        from monitor.web.verify import Draw, parse_share, verify_view

        name, params = request.path_params["suite"], request.query_params

        def build() -> Response:
            by = params.get("by", "pair")
            if by not in ("pair", "query"):
                raise UsageError(f"by: expected pair or query, found {by!r}")
            share = parse_share(params.get("share", "0.1"))
            seed = _int_param(request, "seed", 0)
            view = verify_view(self.views, name, share=share, seed=seed, by=cast(Draw, by))
            return self.page("verify.html", view=view)

        return await self._guarded(build)

    async def run(self, request: Request) -> Response:
        name, run_id = request.path_params["suite"], request.path_params["run_id"]
        return await self._guarded(
            lambda: self.page(
                "run.html",
                suite=name,
                report=self.views.run_page(name, _int_value(run_id, "run id")),
            )
        )

    async def query(self, request: Request) -> Response:
        name, run_id = request.path_params["suite"], request.path_params["run_id"]
        query_id = request.path_params["query_id"]
        return await self._guarded(
            lambda: self.page(
                "query.html",
                view=self.views.query_page(name, _int_value(run_id, "run id"), query_id),
            )
        )

    async def simulator(self, request: Request) -> Response:
        params = request.query_params

        def build() -> Response:
            from monitor.web.simulate import (
                parse_simulation,
                relevant_of,
                seed_of,
                simulate,
                texts_of,
            )

            view = None
            if "suite" in params and "run" in params and "query" in params:
                view = self.views.query_page(
                    params["suite"], _int_value(params["run"], "run"), params["query"]
                )
            seed = seed_of(view)
            first = simulate(parse_simulation(seed))
            return self.page(
                "simulator.html",
                seed=json.dumps(seed),
                source=view,
                result=first,
                sim=seed,
                texts=json.dumps(texts_of(view)),
                relevant=json.dumps(relevant_of(view)),
            )

        return await self._guarded(build)

    async def definitions(self, request: Request) -> Response:
        from monitor.web.definitions import families

        return await self._guarded(lambda: self.page("definitions.html", families=families()))

    # API ---------------------------------------------------------------------------------

    async def simulate(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        from monitor.web.simulate import parse_simulation, simulate

        try:
            return JSONResponse(simulate(parse_simulation(limits.parse_json(await request.body()))))
        except UsageError as error:
            return JSONResponse({"error": str(error)}, status_code=400)

    async def label(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import JSONResponse

        if not self.settings.allow_labeling:
            return JSONResponse(
                {"error": "labeling is off: start the server with --allow-labeling"},
                status_code=403,
            )
        sink = self.sink
        if sink is None:
            return JSONResponse({"error": UNAVAILABLE}, status_code=501)
        try:
            body = limits.parse_json(await request.body())
            if not isinstance(body, dict):
                raise UsageError("the request body: expected a JSON object")
            self.views.suite(str(body.get("suite", "")))
            label = Label(
                suite=str(body.get("suite", "")),
                query_id=str(body.get("query_id", "")),
                doc_id=str(body.get("doc_id", "")),
                grade=_int_value(body.get("grade"), "grade"),
                who=str(body.get("who") or "web"),
                at=datetime.now(timezone.utc),
            )
        except UsageError as error:
            return JSONResponse({"error": str(error)}, status_code=400)

        def record() -> None:
            with self.settings.store() as store:
                sink(store, label)
            self.views.forget_runs()

        try:
            await run_in_threadpool(record)
        except UsageError as error:  # a conflicting grade, a query the set lacks
            return JSONResponse({"error": str(error)}, status_code=409)
        except LayersChangedError:
            return JSONResponse({"error": BUSY}, status_code=409)
        except MonitorError as error:
            return JSONResponse({"error": str(error)}, status_code=500)
        return JSONResponse(
            {
                "recorded": {
                    "query_id": label.query_id,
                    "doc_id": label.doc_id,
                    "grade": label.grade,
                    "who": label.who,
                    "at": label.at.isoformat(),
                }
            }
        )

    async def login(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        if request.method == "GET":
            back = security.local_path(request.query_params.get("next"))
            return self.page("login.html", failed=False, back=back)
        form = await request.form()
        given = str(form.get("token", ""))
        back = security.local_path(str(form.get("next", "/")))
        token = self.settings.auth_token
        if token is None or not security.token_matches(token, given):
            return self.page("login.html", status=401, failed=True, back=back)
        response = RedirectResponse(back, status_code=303)
        response.set_cookie(
            security.TOKEN_COOKIE,
            security.session_value(self.settings.session_key, token),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response


@functools.cache
def _environment() -> Environment:
    """Return the templates' environment, one per process: each app (a test's, a daemon's
    after a reload) reads the templates compiled once; jinja2 still recompiles one whose
    file changed."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
    from markupsafe import Markup

    from monitor.config.model import config_option
    from monitor.report.svg import trend_chart, unit_label
    from monitor.web import definitions
    from monitor.web.charts import sparkline

    env = Environment(
        loader=PackageLoader("monitor.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
    )
    env.filters["num"] = _num
    env.filters["signed"] = _signed
    env.filters["when"] = _when
    env.filters["figure"] = figure_text
    env.filters["docstring"] = definitions.as_html
    env.globals["unit_label"] = unit_label
    env.globals["config_option"] = config_option
    env.globals["sparkline"] = lambda *a, **k: Markup(sparkline(*a, **k))
    env.globals["trend_chart"] = lambda *a, **k: Markup(trend_chart(*a, **k))
    return env


def _num(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _signed(value: float | None, digits: int = 4) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:+.{digits}f}"


def figure_text(value: float | None, figure: str, *, signed: bool = False) -> str:
    """Return a rule's figure in its unit: latency (``*_seconds``) in ms (µs under one
    millisecond), rates (``*_rate``) in percent, scores as they are."""
    if value is None or math.isnan(value):
        return "-"
    sign = "+" if signed else ""
    if figure.endswith("_seconds"):
        ms = value * 1000
        if abs(ms) >= 1 or value == 0:
            return f"{ms:{sign},.1f} ms"
        # Under a millisecond, microseconds: 0.00053 s read as "0.001 ms" doubled it.
        us = value * 1e6
        return f"{us:{sign}.1f} µs" if abs(us) >= 1 else f"{us:{sign}.3f} µs"
    if figure.endswith("_rate"):
        return f"{value * 100:{sign}.2f}%"
    return f"{value:{sign}.4f}"


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _here(request: Request) -> str:
    """Return the path and query of ``request``, to come back to after signing in."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    return default if raw is None else _int_value(raw, name)


def _int_value(raw: object, name: str) -> int:
    return limits.bounded_int(raw, name)

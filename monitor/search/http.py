"""The ``http`` search kind: ask a JSON search endpoint over HTTP.

Options:

``url`` (required)
    The endpoint; ``{query}`` and ``{k}`` in it are replaced (the query percent-encoded).
``method`` (default ``GET``)
    ``GET`` or ``POST``.
``params``
    Query-string parameters; ``{query}`` and ``{k}`` in the values are replaced. They are
    added after the parameters of ``url``'s own query string, which are kept as written; a
    name given in both is sent once, with the value from ``params``.
``body``
    A JSON body template (a mapping, a list, or a string holding JSON). ``{query}`` and ``{k}``
    are replaced inside the parsed structure, so any query text gives valid JSON; a string
    that is exactly ``"{k}"`` becomes the number k.
``ids`` (required), ``scores``, ``texts``
    Paths (:mod:`monitor.search.paths`) to the doc ids, scores and texts in the response,
    e.g. ``results[*].id`` or ``hits.hits[*]._id``. Integer ids are read as strings.
``headers``
    Header values as strings, where ``${VAR}`` is replaced by environment variable VAR, or as
    ``{env: VAR}``. A variable that is not set is a setup error naming it.
``timeout`` (default 10)
    Seconds for connecting and for reading one response.
``verify`` (default true)
    TLS certificate verification: true, false, or a CA bundle file.

A code-level caller may also pass ``transport`` (an ``httpx.BaseTransport``, such as
``httpx.MockTransport`` in tests). One ``httpx.Client`` serves every query, so connections are
reused; it is safe to call from several threads. ``close()`` releases it.

Failures raise :class:`~monitor.errors.SearchCallError` with the type the run records
(its message scrubbed by :mod:`monitor.secrets` of the header values, the secret-named
parameters and the URL's credentials, so an error page that quotes the request shows none):
``HTTPStatusError 503`` for an error status, the httpx class name (``ConnectError``,
``ReadTimeout``) for transport failures, and ``SearchOutputError`` for a body that is not JSON
or lacks a path. Status 429, 5xx and transport failures are retryable.
"""

from __future__ import annotations

import json
import os
import re
import ssl
from collections.abc import Mapping
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote_plus

import httpx

from monitor.errors import SearchCallError, SearchOutputError, SearchSetupError
from monitor.records import Hit
from monitor.search.options import Options
from monitor.search.paths import JsonPath
from monitor.secrets import Scrubber, is_secret_name, url_secrets
from monitor.tls import verifying

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# One pass over the template, so that a query holding "{k}" is not filled in again.
_PLACEHOLDER = re.compile(r"\{(query|k)\}")
_K = "{k}"


class HttpSearch:
    """A search function that asks a JSON endpoint: ``(query, k) -> [Hit, ...]``."""

    def __init__(
        self,
        url: str,
        *,
        ids: str,
        scores: str | None = None,
        texts: str | None = None,
        method: str = "GET",
        params: Mapping[str, object] | None = None,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        verify: bool | str = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url
        self.method = method.upper()
        if self.method not in ("GET", "POST"):
            raise SearchSetupError(
                "http", f"option 'method': expected GET or POST, found {method!r}"
            )
        self.params = dict(params or {})
        self.body = body
        headers = dict(headers or {})
        #: Masks this search's secrets in the messages it raises.
        self.scrub = Scrubber.of(
            [
                *headers.values(),
                *(str(v) for n, v in self.params.items() if is_secret_name(n)),
                *url_secrets(url, path=False),
            ]
        )
        self._ids = _path("ids", ids)
        self._scores = None if scores is None else _path("scores", scores)
        self._texts = None if texts is None else _path("texts", texts)
        tls: bool | ssl.SSLContext
        if isinstance(verify, str):
            try:
                tls = ssl.create_default_context(cafile=verify)
            except (OSError, ssl.SSLError) as exc:
                raise SearchSetupError(
                    "http", f"option 'verify': cannot read {verify!r}: {exc}", option="verify"
                ) from exc
        else:
            tls = verify
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            verify=verifying(tls),
            transport=transport,
            follow_redirects=True,
        )

    def __call__(self, query: str, k: int) -> list[Hit]:
        """Send one request for ``query`` and return its hits, best first."""
        params = {name: _fill_text(value, query, k) for name, value in self.params.items()}
        url = merge_query(_fill_text(self.url, quote(query, safe=""), k), params)
        body = None if self.body is None else _fill(self.body, query, k)
        try:
            response = self._client.request(self.method, url, json=body)
        except httpx.TransportError as exc:
            raise SearchCallError(
                type(exc).__name__, self.scrub(str(exc) or repr(exc)), retryable=True
            ) from exc
        except httpx.HTTPError as exc:
            raise SearchCallError(type(exc).__name__, self.scrub(str(exc) or repr(exc))) from exc
        status = response.status_code
        if status >= 400:
            # Scrubbed before it is cut, so that a cut cannot leave part of a secret behind.
            answer = self.scrub(response.text)[:200]
            raise SearchCallError(
                f"HTTPStatusError {status}",
                f"{self.method} {_shown(response.request.url)} answered {status} "
                f"{response.reason_phrase}: {answer}",
                retryable=status == 429 or status >= 500,
            )
        try:
            document = response.json()
        except (ValueError, RecursionError):  # bad JSON, a 5,000-digit number, deep nesting
            found = self.scrub(response.text)[:80]
            raise SearchOutputError("a JSON response", found=found) from None
        return self._hits(document)

    def _hits(self, document: object) -> list[Hit]:
        """Pick ids, scores and texts out of a parsed response."""
        ids = [_doc_id(value) for value in self._ids.values(document)]
        scores: list[Any] = [None] * len(ids)
        texts: list[Any] = [None] * len(ids)
        if self._scores is not None:
            scores = _aligned(self._scores, document, len(ids))
            for score in scores:
                if score is not None and (
                    isinstance(score, bool) or not isinstance(score, int | float)
                ):
                    raise SearchOutputError(f"numeric scores at {self._scores.text!r}", found=score)
        if self._texts is not None:
            texts = _aligned(self._texts, document, len(ids))
            for text in texts:
                if text is not None and not isinstance(text, str):
                    raise SearchOutputError(f"string texts at {self._texts.text!r}", found=text)
        return [
            Hit(doc, None if score is None else float(score), text)
            for doc, score, text in zip(ids, scores, texts, strict=True)
        ]

    def close(self) -> None:
        """Close the HTTP client and its connections."""
        self._client.close()

    def __enter__(self) -> HttpSearch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def build(options: Mapping[str, object]) -> HttpSearch:
    """Build an :class:`HttpSearch` from the ``http`` kind's options."""
    opts = Options("http", options)
    url = opts.required_string("url")
    opts.spec = f"http:{url}"
    if not url.startswith(("http://", "https://")):
        raise opts.fail("url", "an http:// or https:// URL", url)
    method = (opts.string("method") or "GET").upper()
    if method not in ("GET", "POST"):
        raise opts.fail("method", "GET or POST", method)
    body = opts.raw("body")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except json.JSONDecodeError as exc:
            raise opts.fail("body", f"a JSON template ({exc.msg})", body) from None
    verify = opts.raw("verify")
    if verify is not None and not isinstance(verify, bool | str):
        raise opts.fail("verify", "true, false or a CA bundle file", verify)
    transport = opts.typed("transport", httpx.BaseTransport, "an httpx transport")
    search_options: dict[str, Any] = {
        "ids": opts.required_string("ids"),
        "scores": opts.string("scores"),
        "texts": opts.string("texts"),
        "params": opts.mapping("params"),
        "headers": _headers(opts),
        "timeout": opts.seconds("timeout", 10.0),
    }
    opts.done()
    for key in ("ids", "scores", "texts"):
        if search_options[key] is not None:
            try:
                JsonPath.parse(search_options[key])
            except ValueError as exc:
                raise opts.fail(key, "a path such as 'results[*].id'", str(exc)) from None
    try:
        return HttpSearch(
            url,
            method=method,
            body=body,
            verify=True if verify is None else verify,
            transport=transport,
            **search_options,
        )
    except SearchSetupError as exc:
        raise SearchSetupError(opts.spec, exc.reason, option=exc.option) from exc


def _headers(opts: Options) -> dict[str, str]:
    """Resolve header values, reading ``${VAR}`` and ``{env: VAR}`` from the environment."""
    headers: dict[str, str] = {}
    for name, value in opts.mapping("headers").items():
        key = f"headers.{name}"
        if isinstance(value, Mapping):
            var = value.get("env")
            if set(value) != {"env"} or not isinstance(var, str) or not var:
                raise opts.fail(key, "a string or {env: VARIABLE}", dict(value))
            headers[name] = _env(opts, key, var)
        elif isinstance(value, str):
            headers[name] = _substitute_env(opts, key, value)
        else:
            raise opts.fail(key, "a string or {env: VARIABLE}", value)
    return headers


def _substitute_env(opts: Options, key: str, value: str) -> str:
    """Replace each ``${VAR}`` in ``value`` by the environment variable's value."""

    def lookup(match: re.Match[str]) -> str:
        return _env(opts, key, match.group(1))

    return _ENV.sub(lookup, value)


def _env(opts: Options, key: str, var: str) -> str:
    value = os.environ.get(var)
    if value is None:
        raise opts.fail(key, f"environment variable {var} to be set (it is not)")
    return value


def _path(key: str, text: str) -> JsonPath:
    try:
        return JsonPath.parse(text)
    except ValueError as exc:
        raise SearchSetupError("http", f"option {key!r}: {exc}") from None


def _fill(template: object, query: str, k: int) -> object:
    """Return ``template`` with ``{query}`` and ``{k}`` replaced in every string inside it."""
    if isinstance(template, str):
        if template == _K:
            return k
        return _fill_text(template, query, k)
    if isinstance(template, Mapping):
        return {key: _fill(value, query, k) for key, value in template.items()}
    if isinstance(template, list | tuple):
        return [_fill(value, query, k) for value in template]
    return template


def _fill_text(value: object, query: str, k: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    values = {"query": query, "k": str(k)}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)


def _doc_id(value: object) -> str:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise SearchOutputError("a string doc id in the response", found=value)


def _aligned(path: JsonPath, document: object, count: int) -> list[object]:
    values = path.values(document)
    if len(values) != count:
        raise SearchOutputError(f"{count} values at {path.text!r}, one per id", found=len(values))
    return values


def merge_query(url: str, params: Mapping[str, str]) -> httpx.URL:
    """Return ``url`` with ``params`` added after its own query parameters.

    The URL's parameters keep their order and their encoding as written, except those that
    ``params`` names too: the value from ``params`` replaces them.
    """
    target = httpx.URL(url)
    if not params:
        return target
    kept = [
        part
        for part in target.query.decode("ascii").split("&")
        if part and unquote_plus(part.partition("=")[0]) not in params
    ]
    query = "&".join([*kept, str(httpx.QueryParams(params))])
    return target.copy_with(query=query.encode("ascii"))


def _shown(url: httpx.URL) -> str:
    """Return ``url`` without credentials or query string (which may carry an API key)."""
    return str(url.copy_with(userinfo=b"", query=None, fragment=None))

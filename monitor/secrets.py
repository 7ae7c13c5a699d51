"""Keep secrets out of every message the monitor stores or prints.

A :class:`Scrubber` replaces two kinds of secret by ``***``:

- known values, the strings the config marks secret (:func:`secret_values`): a
  :class:`~monitor.config.model.Secret` option (headers, tokens, ``${VAR}`` values of secret
  keys), and from a secret URL its password, its query values and its path (a webhook's
  credential), each also as it looks percent-encoded, since an error page quotes the request;
- secrets recognisable by their shape, known or not: a URL's ``user:password@`` or
  ``token@``, a ``name=value`` or quoted ``"name": "value"`` pair whose name says key, token,
  secret, password, signature or auth (``api_key=...``, ``&sig=...``), an ``Authorization``
  header's value and a ``Bearer`` token.

The search (:mod:`monitor.search.http`), the runner's stored query errors, the notifiers'
quoted receiver answers (:mod:`monitor.alerts.http`) and the log handler
(:mod:`monitor.logs`) all scrub with it. Values shorter than :data:`SHORTEST` characters are
not replaced: they would mask ordinary words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

if TYPE_CHECKING:
    from monitor.config.model import SuiteConfig

#: What a secret is replaced by.
MASK = "***"
#: Known values shorter than this are not replaced.
SHORTEST = 4

#: A parameter, field or header name that says it holds a secret.
SECRET_NAME = r"[\w.-]*(?:key|token|secret|password|passwd|signature|sig|auth|authorization)"
_IS_SECRET_NAME = re.compile(rf"(?i){SECRET_NAME}")

# scheme://user:password@ or scheme://token@ (a credential in a URL's user part).
_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^/\s:@]+)(?P<password>:[^/\s@]*)?@"
)
# api_key=value, &sig=value: a query string, a form body, a logfmt field.
_ASSIGNED = re.compile(rf"(?i)(?<![\w.-])(?P<name>{SECRET_NAME})=(?P<value>[^&\s#;,\"'<>]+)")
# "token": "value" or 'x-api-key': 'value' (JSON, a Python repr).
_QUOTED = re.compile(
    rf"(?i)(?P<name>(?P<q>[\"']){SECRET_NAME}(?P=q)\s*:\s*)(?P<open>[\"'])(?P<value>[^\"']+)"
)
# An HTTP header line of a secret header, as an error page quotes the request.
_HEADER = re.compile(rf"(?im)^(?P<name>[ \t]*(?:{SECRET_NAME}|cookie)[ \t]*:[ \t]*)(?P<value>.+)$")
# Authorization: Basic ..., Bearer ... anywhere.
_SCHEME_TOKEN = re.compile(r"(?i)\b(?P<name>bearer|basic|token)\s+(?P<value>[\w.~+/=-]{8,})")


def is_secret_name(name: str) -> bool:
    """Return whether a parameter or header called ``name`` holds a secret by its name."""
    return _IS_SECRET_NAME.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class Scrubber:
    """Replaces known secret ``values`` and secret-shaped text by ``***`` (call it)."""

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, values: Iterable[str]) -> Scrubber:
        """Return a scrubber for ``values`` and their percent-encoded forms, longest first."""
        forms: set[str] = set()
        for value in values:
            if len(value) >= SHORTEST:
                forms.update((value, quote(value, safe=""), quote(value), quote_plus(value)))
        return cls(tuple(sorted(forms, key=lambda form: (-len(form), form))))

    def __or__(self, other: Scrubber) -> Scrubber:
        """Return a scrubber that knows the values of both."""
        return Scrubber.of((*self.values, *other.values))

    def __call__(self, text: str) -> str:
        """Return ``text`` with every known value and every secret-shaped part masked."""
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        return scrub_shapes(text)


def scrub_shapes(text: str) -> str:
    """Return ``text`` with the secrets recognisable by their shape masked (no known values)."""
    text = _CREDENTIALS.sub(_masked_credentials, text)
    text = _ASSIGNED.sub(lambda m: f"{m.group('name')}={MASK}", text)
    text = _QUOTED.sub(lambda m: f"{m.group('name')}{m.group('open')}{MASK}", text)
    text = _HEADER.sub(lambda m: f"{m.group('name')}{MASK}", text)
    return _SCHEME_TOKEN.sub(lambda m: f"{m.group('name')} {MASK}", text)


def _masked_credentials(match: re.Match[str]) -> str:
    scheme = match.group("scheme")
    if match.group("password"):
        return f"{scheme}{match.group('user')}:{MASK}@"
    return f"{scheme}{MASK}@"


def url_secrets(url: str, *, path: bool) -> set[str]:
    """Return the secret parts of ``url``: its user part, its secret-named query values, and,
    when ``path`` (a webhook's URL), the whole URL and its path."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return {url}
    found = {parts.password or "", parts.username or ""} if parts.password else set()
    if parts.username and not parts.password:
        found.add(parts.username)
    found.update(value for name, value in parse_qsl(parts.query) if is_secret_name(name) or path)
    if path:
        found.update((url, parts.path, parts.path.strip("/"), parts.query))
    return {value for value in found if len(value) >= SHORTEST}


def secret_values(value: object) -> set[str]:
    """Return the secrets in a config value: every Secret in it (a URL one with its user part
    and secret-named query values), and the same parts of a plain ``url`` string."""
    from monitor.config.model import Secret

    found: set[str] = set()
    if isinstance(value, Secret):
        text = value.reveal()
        found.add(text)
        if "://" in text:
            found.update(url_secrets(text, path=False))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key == "url" and isinstance(item, str):
                found.update(url_secrets(item, path=False))
            found.update(secret_values(item))
    elif isinstance(value, tuple | list):
        for item in value:
            found.update(secret_values(item))
    return {text for text in found if len(text) >= SHORTEST}


def suite_scrubber(suite: SuiteConfig, environ: Mapping[str, str] | None = None) -> Scrubber:
    """Return the scrubber that knows every secret of ``suite``: its search (and reference
    search), its judge (headers, tokens, the URL's credentials), its exporters, its
    notifiers (a webhook URL's path too) and their signing secrets, read from ``environ``
    (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    found = secret_values(suite.search.options)
    if suite.evalset.reference is not None:
        found |= secret_values(suite.evalset.reference.options)
    if suite.judge is not None:
        found |= secret_values(suite.judge.options)
    for exporter in suite.exporters:
        found |= secret_values(getattr(exporter, "url", None))
    for notifier in suite.notifiers:
        found |= secret_values(notifier.options)
        if notifier.url is not None:
            found |= {notifier.url.reveal()} | url_secrets(notifier.url.reveal(), path=True)
        if notifier.secret_env is not None:
            found.add(env.get(notifier.secret_env, ""))
    return Scrubber.of(found)

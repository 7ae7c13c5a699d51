"""What the built-in notifiers share: reading their options, secrets and timestamps."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

from monitor.alerts.base import NotifierContext
from monitor.config.common import NotifierConfig
from monitor.config.model import Secret
from monitor.errors import NotifierSetupError


class Options:
    """A notifier's own options, checked: unknown keys and wrong types raise
    NotifierSetupError naming the notifier and the key (never a secret value)."""

    def __init__(self, name: str, config: NotifierConfig, known: Iterable[str]) -> None:
        self.name = name
        self.values = config.plugin_options()
        allowed = sorted(known)
        for key in self.values:
            if key not in allowed:
                expected = ", ".join(allowed) if allowed else "none"
                raise NotifierSetupError(
                    name, f"unknown option {key!r}; known options: {expected}", option=key
                )

    def string(self, key: str, default: str | None = None) -> str | None:
        """Return the string option ``key``, or ``default``."""
        value = self.values.get(key, default)
        if value is not None and not isinstance(value, str):
            raise NotifierSetupError(self.name, f"option {key!r} must be a string", option=key)
        return value

    def number(self, key: str, default: float) -> float:
        """Return the numeric option ``key`` (above 0), or ``default``."""
        value = self.values.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise NotifierSetupError(self.name, f"option {key!r} must be a number", option=key)
        if not value > 0 or not math.isfinite(value):
            raise NotifierSetupError(self.name, f"option {key!r} must be above 0", option=key)
        return float(value)

    def verify(self) -> bool | str:
        """Return the ``verify`` option: true (default), false, or a CA bundle file."""
        value = self.values.get("verify", True)
        if not isinstance(value, bool) and not (isinstance(value, str) and value):
            raise NotifierSetupError(
                self.name, "option 'verify' must be true, false or the path of a CA bundle file"
            )
        return value

    def headers(self) -> dict[str, str]:
        """Return the ``headers`` option: a mapping of names to string values."""
        value = self.values.get("headers", {})
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise NotifierSetupError(
                self.name, "option 'headers' must map names to strings", option="headers"
            )
        return dict(value)


def require_url(name: str, config: NotifierConfig) -> Secret:
    """Return the notifier's ``url``; raise NotifierSetupError when it has none."""
    if config.url is None:
        raise NotifierSetupError(name, "needs a 'url'")
    return config.url


def env_secret(name: str, context: NotifierContext, variable: str, what: str) -> Secret:
    """Return the value of environment variable ``variable`` as a Secret."""
    value = context.environ.get(variable)
    if not value:
        raise NotifierSetupError(
            name, f"environment variable {variable} ({what}) is not set", option="secret_env"
        )
    return Secret(value, f"${variable}")


def rfc3339(moment: datetime) -> str:
    """Return ``moment`` in UTC as ``2024-05-01T09:30:00.000000Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

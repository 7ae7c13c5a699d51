"""Read a plug-in's options mapping, naming the plug-in and the key in every error."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

from monitor.errors import SearchSetupError

_T = TypeVar("_T")


class Options:
    """Typed, checked access to one plug-in's options; :meth:`done` rejects unknown keys."""

    def __init__(
        self,
        spec: str,
        options: Mapping[str, object],
        *,
        error: type[SearchSetupError] = SearchSetupError,
    ) -> None:
        #: The error class raised (an embedder's options raise EmbedderSetupError).
        self.error = error
        if not isinstance(options, Mapping):
            raise error(spec, f"expected a mapping of options, found {_short(options)}")
        self.spec = spec
        self._options = options
        self._read: set[str] = set()

    def _get(self, key: str) -> object:
        self._read.add(key)
        return self._options.get(key)

    def fail(self, key: str, expected: str, found: object = None) -> SearchSetupError:
        """Return the setup error for option ``key`` (to raise)."""
        reason = f"option {key!r}: expected {expected}"
        if found is not None:
            reason += f", found {_short(found)}"
        return self.error(self.spec, reason, option=key)

    def typed(self, key: str, kind: type[_T] | tuple[type[_T], ...], expected: str) -> _T | None:
        """Return option ``key`` when it is an instance of ``kind``, None when absent."""
        value = self._get(key)
        if value is None:
            return None
        if isinstance(value, bool) and kind is not bool and bool not in _as_tuple(kind):
            raise self.fail(key, expected, value)
        if not isinstance(value, kind):
            raise self.fail(key, expected, value)
        return value

    def string(self, key: str, default: str | None = None) -> str | None:
        """Return a non-empty string option."""
        value = self.typed(key, str, "a non-empty string")
        if value == "":
            raise self.fail(key, "a non-empty string", value)
        return default if value is None else value

    def required_string(self, key: str) -> str:
        """Return a non-empty string option that must be given."""
        value = self.string(key)
        if value is None:
            raise self.fail(key, "a non-empty string (required)")
        return value

    def integer(self, key: str, default: int, *, minimum: int = 1) -> int:
        """Return an integer option of at least ``minimum``."""
        expected = f"an integer of at least {minimum}"
        value = self.typed(key, int, expected)
        if value is None:
            return default
        if value < minimum:
            raise self.fail(key, expected, value)
        return value

    def flag(self, key: str, default: bool) -> bool:
        """Return a boolean option."""
        value = self.typed(key, bool, "true or false")
        return default if value is None else value

    def seconds(self, key: str, default: float | None) -> float | None:
        """Return a positive number of seconds."""
        value = self.typed(key, (int, float), "a positive number of seconds")
        if value is None:
            return default
        if not value > 0:
            raise self.fail(key, "a positive number of seconds", value)
        return float(value)

    def mapping(self, key: str) -> Mapping[str, object]:
        """Return a mapping option with string keys (empty when absent)."""
        value = self.typed(key, Mapping, "a mapping")
        if value is None:
            return {}
        if not all(isinstance(name, str) for name in value):
            raise self.fail(key, "a mapping with string keys", value)
        return value

    def env_string(self, key: str, environ: Mapping[str, str] | None = None) -> str | None:
        """Return the value of the environment variable that option ``key`` names (None when
        the option is absent); a variable that is not set is an error naming the variable."""
        name = self.string(key)
        if name is None:
            return None
        value = (os.environ if environ is None else environ).get(name)
        if not value:
            raise self.fail(key, f"environment variable {name} to be set (it is not)")
        return value

    def raw(self, key: str) -> object:
        """Return option ``key`` unchecked (None when absent)."""
        return self._get(key)

    def done(self) -> None:
        """Raise a SearchSetupError naming any option that no reader asked for."""
        unknown = sorted(set(self._options) - self._read)
        if unknown:
            known = ", ".join(sorted(self._read))
            raise self.error(
                self.spec,
                f"unknown option(s) {', '.join(map(repr, unknown))}; known: {known}",
                option=unknown[0],
            )


def _as_tuple(kind: type[_T] | tuple[type[_T], ...]) -> tuple[type[_T], ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _short(value: object, limit: int = 80) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""The values a parsed config holds besides its sections: secrets, plug-in options and where
each plug-in section was written. Re-exported by :mod:`monitor.config.model`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: An option value kept from YAML: scalars, tuples and read-only mappings of them, or a Secret.
OptionValue = object


def _freeze_map(value: Mapping[str, object]) -> Mapping[str, object]:
    """Return a read-only copy of ``value``."""
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True, eq=True)
class Secret:
    """A secret string: ``repr`` and ``str`` show ``masked``, :meth:`reveal` gives the value.

    ``masked`` keeps what is safe to show (``https://hooks.slack.com/***``,
    ``postgresql://monitor:***@db/monitor``) so that logs and errors still say which endpoint
    is meant.
    """

    value: str = field(repr=False)
    masked: str = "***"

    def reveal(self) -> str:
        """Return the secret value, for the one call that sends it."""
        return self.value

    def sha256(self) -> str:
        """Return the hex SHA-256 of the value, to compare secrets without showing them."""
        return hashlib.sha256(self.value.encode("utf-8")).hexdigest()

    def __repr__(self) -> str:
        return f"Secret({self.masked!r})"

    def __str__(self) -> str:
        return self.masked


def thaw(value: OptionValue) -> object:
    """Return a plain copy of an option value: dicts, lists, and secrets revealed.

    Plug-ins get plain JSON-like values they may keep or change without touching the config.
    """
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a plug-in's section was written: the file, its key path and line, and the key
    path and line of each of its options (``headers.Authorization`` -> its own), so that an
    option the plug-in refuses when it is built is reported where it was written."""

    source: str
    path: str
    line: int | None
    options: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _freeze_map(self.options))

    def at(self, option: str | None) -> tuple[str, int | None]:
        """Return the key path and line of ``option``, or of its nearest written parent."""
        name = option or ""
        while name:
            if name in self.options:
                return self.options[name]
            name = name.rpartition(".")[0]
        return self.path, self.line

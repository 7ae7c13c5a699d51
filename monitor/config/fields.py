"""Read typed values out of a :class:`~monitor.config.nodes.Node` tree.

Every reader either returns a checked Python value or raises a ConfigError that names the
file, the key path, the line and what was expected. Values of secret fields never appear in
an error: they are shown as ``'***'``.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit, urlunsplit

from monitor.config.model import OptionValue, Origin, Secret
from monitor.config.nodes import Node
from monitor.errors import ConfigError

#: Option keys whose values are secrets, wherever they appear in plug-in options.
SECRET_KEYS = frozenset(
    {
        "access_token",
        "api_key",
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "client_secret",
        "credentials",
        "headers",
        "integration_key",
        "password",
        "private_key",
        "routing_key",
        "secret",
        "token",
    }
)
_SECRET_SUFFIXES = ("_token", "_secret", "_password", "_api_key")

# YAML 1.1 (and so PyYAML) reads `1e-3` as text; accept it where a number is expected.
# ASCII only: int() and float() would also read other scripts' digits and "1_0".
_EXPONENT_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+", re.ASCII)
_DECIMAL = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)", re.ASCII)
_INTEGER = re.compile(r"[-+]?[0-9]{1,30}", re.ASCII)
#: The longest path and file name accepted (Linux's PATH_MAX and NAME_MAX).
MAX_PATH_CHARS = 4096
MAX_NAME_CHARS = 255
#: The longest duration accepted for a timeout or deadline: a week. Longer ones overflow the
#: event loop's and the OS's timers, and no run should wait that long.
MAX_SECONDS = 7 * 24 * 3600.0


def is_secret_key(key: str) -> bool:
    """Return whether an option called ``key`` holds a secret (token, password, headers)."""
    name = key.lower().replace("-", "_")
    return name in SECRET_KEYS or name.endswith(_SECRET_SUFFIXES)


def mask_url(url: str, *, hide_path: bool) -> str:
    """Return ``url`` with its password (and query) masked, and its path too if ``hide_path``.

    Webhook URLs carry their credential in the path (``https://hooks.slack.com/services/...``),
    so notifier URLs show only scheme and host.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "***"
    if not parts.scheme:
        return "***"
    netloc = host if port is None else f"{host}:{port}"
    if parts.username is not None:
        netloc = f"{parts.username}:***@{netloc}" if parts.password else f"***@{netloc}"
    if hide_path:
        tail = "/***" if (parts.path.strip("/") or parts.query) else parts.path
        return urlunsplit((parts.scheme, netloc, tail, "", ""))
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))


class _Shown:
    """A ``found`` value printed as given, not through ``repr``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def shown(value: object, *, secret: bool = False) -> object:
    """Describe ``value`` for an error's ``found``: masked if secret, kind of container if one."""
    if isinstance(value, Node):
        value = value.value
    if secret and value is not None:
        return _Shown("'***'")
    if isinstance(value, Mapping):
        return _Shown("a mapping")
    if isinstance(value, tuple):
        return _Shown("a list")
    if value is None:
        return _Shown("null (nothing)")
    return value


class Fields:
    """Typed readers bound to one config file: its name (for errors) and folder (for paths)."""

    def __init__(self, source: str, base_dir: Path, *, check_files: bool = False) -> None:
        self.source = source
        self.base_dir = base_dir
        self.check_files = check_files

    # -- errors ---------------------------------------------------------------------------

    def error(
        self,
        node: Node,
        expected: str,
        *,
        found: object = None,
        show: bool = False,
        secret: bool = False,
    ) -> ConfigError:
        """Return a ConfigError at ``node``; with ``show``, ``found`` is the node's value."""
        if show:
            found = shown(node, secret=secret)
        return ConfigError(
            self.source, node.path or "(document)", expected, line=node.line, found=found
        )

    # -- containers -----------------------------------------------------------------------

    def mapping(self, node: Node, keys: Collection[str], what: str) -> Mapping[str, Node]:
        """Return the entries of a mapping whose keys are all in ``keys``.

        An unknown key is an error at that key, suggesting the nearest known one.
        """
        if not isinstance(node.value, Mapping):
            raise self.error(node, f"a mapping ({what})", show=True)
        for key, child in node.value.items():
            if key not in keys:
                raise self.unknown_key(child, key, keys)
        return node.value

    def unknown_key(self, node: Node, key: str, keys: Collection[str]) -> ConfigError:
        """Return the error for an unknown ``key``, with a "did you mean" when one is close."""
        known = sorted(keys)
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return self.error(node, f"a known key{hint}; known keys: {', '.join(known)}")

    def require(self, parent: Node, entries: Mapping[str, Node], key: str, hint: str = "") -> Node:
        """Return ``entries[key]``; raise at ``parent`` when it is missing."""
        if key not in entries:
            raise self.error(parent, f"the key {key!r}{hint}")
        return entries[key]

    def sequence(self, node: Node, what: str) -> tuple[Node, ...]:
        """Return the items of a list."""
        if not isinstance(node.value, tuple):
            raise self.error(node, f"a list ({what})", show=True)
        return node.value

    # -- scalars --------------------------------------------------------------------------

    def string(
        self,
        node: Node,
        what: str = "a string",
        *,
        pattern: re.Pattern[str] | None = None,
        secret: bool = False,
    ) -> str:
        """Return a non-empty string, matching ``pattern`` (full match) when one is given."""
        value = node.value
        if not isinstance(value, str) or not value.strip():
            raise self.error(node, what, show=True, secret=secret)
        if pattern is not None and not pattern.fullmatch(value):
            raise self.error(node, what, show=True, secret=secret)
        return value

    def integer(self, node: Node, *, minimum: int | None = None, maximum: int | None = None) -> int:
        """Return an integer within ``[minimum, maximum]`` (booleans are not integers).

        A string that came from a ``${VAR}`` reference is read as the number it spells.
        """
        value = node.value
        if node.interpolated and isinstance(value, str) and _INTEGER.fullmatch(value):
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(node, f"an integer{_bounds(minimum, maximum)}", show=True)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self.error(node, f"an integer{_bounds(minimum, maximum)}", show=True)
        return value

    def number(
        self,
        node: Node,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        positive: bool = False,
        unit: str = "",
    ) -> float:
        """Return a finite number within ``[minimum, maximum]`` (above 0 if ``positive``).

        A string that came from a ``${VAR}`` reference is read as the number it spells.
        """
        value = node.value
        if isinstance(value, str) and (
            _EXPONENT_FLOAT.fullmatch(value.strip())
            or (node.interpolated and _DECIMAL.fullmatch(value.strip()))
        ):
            value = float(value)
        wanted = "a number above 0" if positive else "a number"
        wanted += _bounds(minimum, maximum) + unit
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.error(node, wanted, show=True)
        number = float(value)
        if number != number or number in (float("inf"), float("-inf")):
            raise self.error(node, wanted, show=True)
        if (
            (positive and number <= 0)
            or (minimum is not None and number < minimum)
            or (maximum is not None and number > maximum)
        ):
            raise self.error(node, wanted, show=True)
        return number

    def seconds(self, node: Node) -> float:
        """Return a duration in seconds above 0 and at most :data:`MAX_SECONDS` (a week)."""
        return self.number(node, positive=True, maximum=MAX_SECONDS, unit=" (seconds)")

    def path(self, node: Node, what: str = "a file path", *, must_exist: bool = False) -> Path:
        """Return an absolute path: ``~`` expanded, relative paths under the config's folder.

        A path holds at most :data:`MAX_PATH_CHARS` characters, and no NUL. With
        ``must_exist`` and a checking load (:func:`monitor.cli.validate.check_config`), the file
        must exist.
        """
        text = self.string(node, what)
        longest = max((len(part) for part in text.split("/")), default=0)
        if len(text) > MAX_PATH_CHARS or longest > MAX_NAME_CHARS:
            raise self.error(
                node,
                f"{what}: a path of at most {MAX_PATH_CHARS} characters, "
                f"{MAX_NAME_CHARS} per file or folder name",
                found=_Shown(f"{len(text)} characters"),
            )
        if "\x00" in text:
            raise self.error(node, f"{what}: a path without NUL", show=True)
        path = Path(os.path.expanduser(text))
        if not path.is_absolute():
            path = self.base_dir / path
        path = Path(os.path.normpath(path))
        if must_exist and self.check_files and not path.exists():
            raise self.error(node, f"{what} that exists", found=_Shown(f"{str(path)!r} (missing)"))
        return path

    def url(
        self,
        node: Node,
        what: str,
        *,
        schemes: Collection[str] = ("http", "https"),
        secret: bool = False,
    ) -> str:
        """Return a URL with one of ``schemes`` and a host."""
        text = self.string(node, what, secret=secret)
        try:
            parts = urlsplit(text)
            # Reading the port checks it: a run would fail on ``:99999`` or ``:http``.
            ok = parts.scheme in schemes and bool(parts.hostname) and parts.port != 0
        except ValueError:
            ok = False
        if not ok or any(c.isspace() for c in text):
            raise self.error(node, what, show=True, secret=secret)
        return text

    # -- plug-in options ------------------------------------------------------------------

    def origin(self, node: Node) -> Origin:
        """Return where the plug-in section ``node`` and each of its (nested) options were
        written, option paths relative to the section (``headers.Authorization``)."""
        options: dict[str, tuple[str, int | None]] = {}

        def walk(child: Node, prefix: str) -> None:
            if isinstance(child.value, Mapping):
                for key, item in child.value.items():
                    name = f"{prefix}.{key}" if prefix else key
                    options[name] = (item.path, item.line)
                    walk(item, name)

        walk(node, "")
        return Origin(self.source, node.path or "(document)", node.line, options)

    def options(self, node: Node, secret: bool = False) -> OptionValue:
        """Return a plug-in option frozen: tuples, read-only mappings, secrets wrapped."""
        value = node.value
        if isinstance(value, Mapping):
            return MappingProxyType(
                {
                    key: self.options(child, secret or is_secret_key(key))
                    for key, child in value.items()
                }
            )
        if isinstance(value, tuple):
            return tuple(self.options(child, secret) for child in value)
        if secret and isinstance(value, str):
            return Secret(value)
        if isinstance(value, float) and (value != value or value in (_INF, -_INF)):
            raise self.error(node, "a finite number (not .nan or .inf)", show=True)
        return value


_INF = float("inf")


def _bounds(minimum: float | None, maximum: float | None) -> str:
    """Return `` from 0 to 1`` style text for an error message."""
    if minimum is not None and maximum is not None:
        return f" from {_num(minimum)} to {_num(maximum)}"
    if minimum is not None:
        return f" of at least {_num(minimum)}"
    if maximum is not None:
        return f" of at most {_num(maximum)}"
    return ""


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)

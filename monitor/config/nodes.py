"""Compose YAML into a tree of values that remember their key path and line.

PyYAML's constructors drop the marks; this module composes the node graph instead, keeps the
line of every key and list item, expands ``${VAR}`` / ``${VAR:-default}`` in string values,
and hands :mod:`monitor.config.load` a :class:`Node` tree to check. Mapping keys stay the text
that was written (``on:`` is the key ``"on"``, never ``True``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import yaml

from monitor.errors import ConfigError

#: A scalar as read from YAML (timestamps stay the text that was written).
Scalar = str | int | float | bool | None

_STR = "tag:yaml.org,2002:str"
_TYPED = frozenset(
    {
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:null",
    }
)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MAX_DEPTH = 64

# `$${` writes a literal `${`; `${...}` is a reference; a `${` left open is an error.
_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}|\$\{")
_BODY = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Node:
    """A YAML value with its dotted key path (``suites.nightly.rules[1]``) and 1-based line.

    ``value`` is a scalar, a mapping of key to Node, or a tuple of Nodes. ``interpolated``
    tells that a ``${VAR}`` reference was expanded in it.
    """

    value: Scalar | Mapping[str, Node] | tuple[Node, ...]
    path: str
    line: int | None
    interpolated: bool = False


def child_path(path: str, key: str | int) -> str:
    """Return the key path of ``key`` (a mapping key or a list index) under ``path``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Placeholders(Mapping[str, str]):
    """An environment that reads a variable it does not hold, with no default, as a
    placeholder (an ``https`` URL naming it) and keeps its name: for checking a config's
    structure where its deployment's environment is not at hand."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.missing: list[str] = []

    def __getitem__(self, name: str) -> str:
        return self._environ[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)

    def unset(self, name: str) -> str:
        """Return the placeholder of the unset variable ``name``, and remember it."""
        if name not in self.missing:
            self.missing.append(name)
        return f"https://unset.invalid/{name}"


def compose(text: str, source: str, env: Mapping[str, str]) -> Node:
    """Parse one YAML document into a :class:`Node` tree, expanding ``${VAR}`` from ``env``.

    An empty document gives a Node whose value is ``None``. Raise ConfigError for a YAML
    syntax error, a second document, an unsupported tag, a duplicate key, a non-scalar key,
    a recursive alias or a missing environment variable.
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "a syntax error"
            raise ConfigError(
                source,
                "(yaml)",
                f"well-formed YAML ({problem})",
                line=None if mark is None else mark.line + 1,
            ) from None
        except yaml.YAMLError as exc:
            raise ConfigError(source, "(yaml)", f"well-formed YAML ({exc})") from None
        if root is None:
            return Node(None, "", 1)
        return _Walker(loader, source, env).node(root, "", root.start_mark.line + 1, ())
    finally:
        loader.dispose()


class _Walker:
    """Turn composed YAML nodes into :class:`Node` values, keeping paths and lines."""

    def __init__(self, loader: yaml.SafeLoader, source: str, env: Mapping[str, str]) -> None:
        self.loader = loader
        self.source = source
        self.env = env

    def fail(self, path: str, line: int | None, expected: str, found: object = None) -> ConfigError:
        return ConfigError(self.source, path or "(document)", expected, line=line, found=found)

    def node(self, node: yaml.Node, path: str, line: int, stack: tuple[int, ...]) -> Node:
        if id(node) in stack or len(stack) > _MAX_DEPTH:
            raise self.fail(path, line, "no recursive or deeply nested alias")
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path, line, (*stack, id(node)))
        if isinstance(node, yaml.SequenceNode):
            items = tuple(
                self.node(item, child_path(path, i), item.start_mark.line + 1, (*stack, id(node)))
                for i, item in enumerate(node.value)
            )
            return Node(items, path, line)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path, line)
        raise self.fail(path, line, "a YAML mapping, list or scalar")  # pragma: no cover

    def mapping(self, node: yaml.MappingNode, path: str, line: int, stack: tuple[int, ...]) -> Node:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.key(key_node, path)
            key_line = key_node.start_mark.line + 1
            if key in seen:
                raise self.fail(
                    child_path(path, key),
                    key_line,
                    f"each key once in a mapping (first given on line {seen[key]})",
                )
            seen[key] = key_line
        try:
            # Resolve YAML merge keys (`<<: *defaults`); later keys override merged ones.
            self.loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as exc:
            raise self.fail(path, line, f"a valid merge key ({exc.problem})") from None
        out: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = self.key(key_node, path)
            out[key] = self.node(
                value_node, child_path(path, key), key_node.start_mark.line + 1, stack
            )
        return Node(out, path, line)

    def key(self, node: yaml.Node, path: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(path, node.start_mark.line + 1, "a plain text key, not a list or map")
        return self.text(str(node.value), path, node.start_mark.line + 1)

    def text(self, text: str, path: str, line: int) -> str:
        """Return ``text``; refuse a lone surrogate or a NUL (a ``"\\ud800"`` or ``"\\0"``
        escape, or an environment value that was not UTF-8), which no store, log or JSON
        output can hold."""
        if "\x00" in text:
            raise self.fail(path, line, "text without a NUL character")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail(path, line, "text of valid Unicode (no lone surrogate)") from None
        return text

    def scalar(self, node: yaml.ScalarNode, path: str, line: int) -> Node:
        if node.tag == _STR:
            text, expanded = self.interpolate(str(node.value), path, line)
            text = self.text(text, path, line)
            if expanded and node.style is None:
                # An unquoted `${PORT}` types its result as YAML would have: `9108` an int.
                return Node(self.retype(text), path, line, interpolated=True)
            return Node(text, path, line, interpolated=expanded)
        if node.tag == _TIMESTAMP:
            return Node(str(node.value), path, line)
        if node.tag in _TYPED:
            value = self.loader.construct_object(node, deep=True)
            return Node(value, path, line)
        raise self.fail(path, line, "a plain YAML value without a tag", found=node.tag)

    def retype(self, text: str) -> Scalar:
        # types-PyYAML leaves Resolver.resolve unannotated.
        tag = self.loader.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
        # An empty or `null` expansion stays text: a variable set to "" is not "no value".
        if tag not in _TYPED or tag == "tag:yaml.org,2002:null":
            return text
        value: Scalar = self.loader.construct_object(yaml.ScalarNode(tag, text), deep=True)
        return value

    def interpolate(self, text: str, path: str, line: int) -> tuple[str, bool]:
        """Return ``text`` with ``${VAR}`` references expanded, and whether there were any."""
        if "${" not in text:
            return text, False
        expanded = False

        def replace(match: re.Match[str]) -> str:
            nonlocal expanded
            whole, body = match.group(0), match.group("body")
            if whole == "$${":
                return "${"
            spec = None if body is None else _BODY.fullmatch(body)
            if spec is None:
                raise self.fail(
                    path,
                    line,
                    "an environment reference ${NAME} or ${NAME:-default}",
                    found=whole,
                )
            expanded = True
            name, default = spec.group("name"), spec.group("default")
            value = self.env.get(name)
            if value is None and default is None and isinstance(self.env, Placeholders):
                return self.env.unset(name)
            if value is None or (value == "" and default is not None):
                if default is None:
                    raise self.fail(
                        path,
                        line,
                        f"the environment variable {name} to be set "
                        f"(or a default: ${{{name}:-value}})",
                    )
                return default
            return value

        return _REFERENCE.sub(replace, text), expanded

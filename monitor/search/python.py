"""The ``python`` search kind: a callable named by ``package.module:attribute``.

Options:

``target`` (required)
    ``package.module:callable`` (the attribute may be dotted: ``module:Class.method``).
``factory`` (default false)
    When true the target is called once with ``kwargs`` and must return the search function
    (load an index or a model once, then answer every query).
``kwargs`` (default empty)
    Keyword arguments for the factory.
``path`` (default none)
    A directory, or a list of them, put in front of ``sys.path`` before importing, so that a
    module in a source tree (``examples.bm25_search`` from the repository root: ``path: "."``)
    imports even when the command is an installed script. Relative paths are taken from the
    current directory.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from monitor.errors import SearchSetupError
from monitor.search.base import Search
from monitor.search.options import Options


def build(options: Mapping[str, object]) -> Search:
    """Import ``options["target"]`` and return it, or what its factory returns."""
    opts = Options("python", options)
    target = opts.required_string("target")
    opts.spec = f"python:{target}"
    factory = opts.flag("factory", default=False)
    kwargs = opts.mapping("kwargs")
    paths = _paths(opts)
    opts.done()
    if kwargs and not factory:
        raise opts.fail("kwargs", "no kwargs unless 'factory' is true", dict(kwargs))
    for directory in reversed(paths):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    obj = load_target(target, spec=opts.spec)
    if not callable(obj):
        raise SearchSetupError(opts.spec, f"{type(obj).__name__} object is not callable")
    if not factory:
        return cast(Search, obj)
    try:
        search = obj(**kwargs)
    except Exception as exc:
        raise SearchSetupError(opts.spec, f"factory raised {type(exc).__name__}: {exc}") from exc
    if not callable(search):
        raise SearchSetupError(
            opts.spec, f"factory returned a {type(search).__name__}, not a search function"
        )
    return cast(Search, search)


def load_target(target: str, *, spec: str | None = None) -> Any:
    """Return the object named by ``package.module:attribute``; raise SearchSetupError."""
    spec = spec or f"python:{target}"
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise SearchSetupError(spec, "expected a target of the form 'package.module:callable'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise SearchSetupError(
            spec, f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    except Exception as exc:  # a module that fails while importing
        raise SearchSetupError(
            spec, f"importing module {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SearchSetupError(
                spec, f"module {module_name!r} has no attribute {attribute!r}"
            ) from None
    return obj


def _paths(opts: Options) -> list[str]:
    """Return the ``path`` option as absolute directory names."""
    raw = opts.raw("path")
    if raw is None:
        return []
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(item, str) and item for item in items):
        raise opts.fail("path", "a directory or a list of directories", raw)
    return [str(Path(item).resolve()) for item in items]

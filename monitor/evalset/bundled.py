"""The bundled example data: the Larkfield eval set, its saved runs and its passages.

Everything is read as package data through :mod:`importlib.resources`, so an installed
copy works without the source tree. See ``monitor/data/larkfield/README.md`` for the
source, license and caveats (the relevance labels are one unreviewed labelling).
"""

from __future__ import annotations

import atexit
import json
from contextlib import ExitStack
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from monitor.errors import InputError, UsageError
from monitor.evalset import EvalSet
from monitor.evalset._files import decode

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

#: The search methods whose saved rankings ship with the Larkfield set.
LARKFIELD_METHODS = ("hybrid", "keyword", "rerank", "vector")

# Holds files extracted from a zipped install until the interpreter exits; created on the
# first such extraction, never at import time.
_extracted: ExitStack | None = None


def data_path(*parts: str) -> Path:
    """Return a filesystem path to the bundled file or folder ``monitor/data/<parts...>``.

    The path works with :func:`open` (``data_path("larkfield")`` is the folder of the set and
    its runs). When the package is installed as a zip file, it is extracted to a temporary
    location that lives until the interpreter exits.
    """
    resource = _resource(*parts, folder=True)
    if isinstance(resource, Path):
        return resource
    global _extracted
    if _extracted is None:
        _extracted = ExitStack()
        atexit.register(_extracted.close)
    return _extracted.enter_context(resources.as_file(resource))


def larkfield_evalset() -> EvalSet:
    """Return the Larkfield eval set: 67 queries, 8 of them with no relevant passage."""
    text, source = _read("larkfield", "evalset.jsonl")
    return EvalSet.parse(text, "jsonl", source, name="larkfield")


def larkfield_run(method: str) -> dict[str, list[str]]:
    """Return question id -> passage ids best first, as ``method`` ranked them."""
    if method not in LARKFIELD_METHODS:
        raise UsageError(
            f"unknown Larkfield method {method!r}; known methods: {', '.join(LARKFIELD_METHODS)}"
        )
    text, source = _read("larkfield", "runs", f"{method}.json")
    run = _json(text, source)
    if not isinstance(run, dict) or not all(
        isinstance(ranked, list) and all(isinstance(doc, str) for doc in ranked)
        for ranked in run.values()
    ):
        raise InputError(source, "an object of question id -> list of passage ids")
    return {str(qid): list(ranked) for qid, ranked in run.items()}


def larkfield_passages() -> list[dict[str, str]]:
    """Return the Larkfield passages: id, doc_id, section, version, language, access, text.

    ``text`` holds only the first 18 words of each passage (the source's ``start`` field).
    """
    text, source = _read("larkfield", "passages.jsonl")
    passages = []
    for number, line in enumerate(text.splitlines(), start=1):
        passage = _json(line, source, number)
        if not isinstance(passage, dict) or not all(
            isinstance(value, str) for value in passage.values()
        ):
            raise InputError(source, "a passage object of strings", line=number)
        passages.append({str(key): str(value) for key, value in passage.items()})
    return passages


def _resource(*parts: str, folder: bool = False) -> Traversable:
    """Return the package data file (or, with ``folder``, folder) ``monitor/data/<parts...>``."""
    relative = PurePosixPath(*parts) if parts else PurePosixPath()
    if not parts or relative.is_absolute() or ".." in relative.parts:
        raise UsageError(f"expected a relative path inside the bundled data, got {parts!r}")
    resource = resources.files("monitor").joinpath("data", *relative.parts)
    if not (resource.is_file() or (folder and resource.is_dir())):
        raise UsageError(f"no bundled data file {relative.as_posix()!r}")
    return resource


def _read(*parts: str) -> tuple[str, str]:
    """Return the text of a bundled file and the name to use for it in errors."""
    resource = _resource(*parts)
    source = "monitor/data/" + "/".join(parts)
    return decode(resource.read_bytes(), source), source


def _json(text: str, source: str, line: int | None = None) -> object:
    """Return the JSON value in ``text``; raise InputError if it does not parse."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = error.lineno if line is None else line
        raise InputError(source, f"valid JSON ({error.msg})", line=where) from None

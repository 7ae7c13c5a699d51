"""The search plug-in point: hit shapes, declarations, kinds, python targets, entry points."""

from __future__ import annotations

import inspect
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.errors import SearchOutputError, SearchSetupError, UnknownSearchKindError
from monitor.records import Hit, Query
from monitor.search import (
    build_search,
    close_search,
    is_async,
    known_kinds,
    normalise_hits,
    search_stats,
    takes_query,
    wants_query,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["a", "b"], (Hit("a"), Hit("b"))),
        (("a",), (Hit("a"),)),
        ([], ()),
        ([Hit("a", 1.0, "x")], (Hit("a", 1.0, "x"),)),
        ([{"id": "a"}], (Hit("a"),)),
        ([{"id": "a", "score": 2, "text": "t"}], (Hit("a", 2.0, "t"),)),
        ([{"id": "a", "score": float("nan")}], (Hit("a"),)),
        (["a", {"id": "b", "score": 0.5}, Hit("c")], (Hit("a"), Hit("b", 0.5), Hit("c"))),
    ],
    ids=["ids", "tuple", "empty", "hit", "dict", "dict-full", "nan-score", "mixed"],
)
def test_normalise_hits_accepts_every_hit_shape(raw: object, expected: tuple[Hit, ...]) -> None:
    """Doc id strings, Hit records and dicts with an id all become Hit records, in order."""
    assert expected == normalise_hits(raw)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "abc",
        b"abc",
        {"id": "a"},
        42,
        (x for x in ["a"]),
        [None],
        [1],
        [""],
        [{"score": 1.0}],
        [{"id": 7}],
        [{"id": ""}],
        [{"id": "a", "score": "high"}],
        [{"id": "a", "score": True}],
        [{"id": "a", "text": 3}],
        [("a", 1.0)],
    ],
    ids=[
        "none", "str", "bytes", "dict", "int", "generator", "none-item", "int-id",
        "empty-id", "dict-without-id", "dict-int-id", "dict-empty-id", "text-score",
        "bool-score", "int-text", "tuple-item",
    ],
)  # fmt: skip
def test_normalise_hits_rejects_bad_shapes(raw: object) -> None:
    """Anything but a sequence of hits raises SearchOutputError."""
    with pytest.raises(SearchOutputError):
        normalise_hits(raw)


def test_normalise_hits_rejects_an_unawaited_coroutine_and_closes_it() -> None:
    """A coroutine returned by a sync call is refused with advice, and closed (no warning)."""

    async def answer() -> list[str]:
        return ["a"]

    coroutine = answer()
    with pytest.raises(SearchOutputError, match="async def"):
        normalise_hits(coroutine)
    assert "CORO_CLOSED" == inspect.getcoroutinestate(coroutine)


def test_takes_query_marks_a_function() -> None:
    """A function decorated with takes_query asks for the Query."""

    @takes_query
    def search(query: Query, k: int) -> list[str]:
        return [query.id]

    assert wants_query(search)


def test_plain_function_takes_the_text() -> None:
    """An undecorated function is called with the query text."""
    assert not wants_query(lambda query, k: [])


def test_is_async_sees_coroutine_functions_and_async_call_methods() -> None:
    """Both ``async def`` functions and objects with ``async def __call__`` are async."""

    async def search(query: str, k: int) -> list[str]:
        return []

    class Searcher:
        async def __call__(self, query: str, k: int) -> list[str]:
            return []

    assert (True, True, False) == (is_async(search), is_async(Searcher()), is_async(len))


def test_search_stats_reads_stats_and_strings_non_scalars() -> None:
    """stats() is recorded; values that are not scalars are kept as their str."""

    class Searcher:
        def stats(self) -> dict[str, object]:
            return {"index_size": 10, "versions": [1, 2]}

    assert {"index_size": 10, "versions": "[1, 2]"} == search_stats(Searcher())


def test_search_stats_is_empty_without_stats() -> None:
    """A plug-in without stats() reports nothing."""
    assert {} == search_stats(lambda query, k: [])


def test_close_search_calls_close_when_present() -> None:
    """close_search calls close() when the plug-in has one, and ignores it otherwise."""
    closed = []

    class Searcher:
        def close(self) -> None:
            closed.append(True)

    close_search(Searcher())
    close_search(lambda query, k: [])
    assert [True] == closed


def test_unknown_kind_names_it_and_lists_the_known_ones() -> None:
    """An unknown kind raises an error naming it and listing every known kind."""
    with pytest.raises(UnknownSearchKindError) as caught:
        build_search("elastic", {})
    assert ("elastic", ("http", "interleave", "python", "replay")) == (
        caught.value.kind,
        caught.value.known,
    )
    assert "'elastic'" in str(caught.value)
    assert "http, interleave, python, replay" in str(caught.value)


def test_known_kinds_lists_the_builtins() -> None:
    """The built-in kinds are always known."""
    assert {"http", "interleave", "python", "replay"} <= set(known_kinds())


# -- python ----------------------------------------------------------------------------------


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Iterator[Path]:
    """Write a plug-in module into a fresh folder; forget it from sys.modules afterwards."""
    (tmp_path / "monitor_test_plugin.py").write_text(
        textwrap.dedent(
            """
            def search(query, k):
                return ["d1", "d2"][:k]

            def make_search(prefix="d", size=2):
                def search(query, k):
                    return [f"{prefix}{i}" for i in range(size)][:k]
                return search

            def broken_factory():
                raise RuntimeError("no index")

            NOT_CALLABLE = 3
            """
        )
    )
    (tmp_path / "monitor_test_broken.py").write_text("raise ValueError('bad module')\n")
    yield tmp_path
    for name in ("monitor_test_plugin", "monitor_test_broken"):
        sys.modules.pop(name, None)
    while str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def test_python_target_is_the_search(plugin_dir: Path) -> None:
    """A python target names the search function itself."""
    search = build_search(
        "python", {"target": "monitor_test_plugin:search", "path": str(plugin_dir)}
    )
    assert ["d1"] == search("q", 1)  # type: ignore[arg-type]


def test_python_factory_is_called_once_with_kwargs(plugin_dir: Path) -> None:
    """With factory: true the target is called with kwargs and returns the search."""
    search = build_search(
        "python",
        {
            "target": "monitor_test_plugin:make_search",
            "factory": True,
            "kwargs": {"prefix": "x", "size": 3},
            "path": [str(plugin_dir)],
        },
    )
    assert ["x0", "x1", "x2"] == search("q", 10)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"target": "monitor_no_such_module:search"}, "cannot import module"),
        ({"target": "monitor_test_broken:search"}, "raised ValueError: bad module"),
        ({"target": "monitor_test_plugin:missing"}, "has no attribute 'missing'"),
        ({"target": "monitor_test_plugin:NOT_CALLABLE"}, "is not callable"),
        ({"target": "monitor_test_plugin"}, "package.module:callable"),
        (
            {"target": "monitor_test_plugin:broken_factory", "factory": True},
            "factory raised RuntimeError: no index",
        ),
        ({"target": "monitor_test_plugin:search", "kwargs": {"a": 1}}, "'factory' is true"),
        ({"target": "monitor_test_plugin:search", "factroy": True}, "unknown option(s) 'factroy'"),
    ],
    ids=[
        "unimportable", "import-raises", "no-attribute", "not-callable", "no-colon",
        "factory-raises", "kwargs-without-factory", "typo",
    ],
)  # fmt: skip
def test_python_setup_errors_name_the_spec(
    plugin_dir: Path, options: dict[str, object], reason: str
) -> None:
    """A python target that cannot be built raises SearchSetupError naming the target."""
    with pytest.raises(SearchSetupError) as caught:
        build_search("python", {**options, "path": str(plugin_dir)})
    assert f"python:{options['target']}" == caught.value.spec
    assert reason in caught.value.reason
    assert str(options["target"]) in str(caught.value)


def test_python_requires_a_target() -> None:
    """Without a target the error says it is required."""
    with pytest.raises(SearchSetupError, match="'target': expected a non-empty string"):
        build_search("python", {})


# -- entry points ----------------------------------------------------------------------------


@pytest.fixture
def installed_plugin(tmp_path: Path) -> Iterator[None]:
    """Install a distribution with a 'retrieval_monitor.search' entry point on sys.path."""
    (tmp_path / "monitor_ep_plugin.py").write_text(
        "def build(options):\n"
        "    size = options.get('size', 1)\n"
        "    return lambda query, k: [f'ep{i}' for i in range(size)]\n"
        "def fails(options):\n"
        "    raise KeyError('size')\n"
    )
    info = tmp_path / "monitor_ep_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: monitor-ep-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[retrieval_monitor.search]\n"
        "thirdparty = monitor_ep_plugin:build\n"
        "failing = monitor_ep_plugin:fails\n"
        "missing = monitor_ep_plugin:nothing\n"
    )
    sys.path.insert(0, str(tmp_path))
    yield
    sys.path.remove(str(tmp_path))
    sys.modules.pop("monitor_ep_plugin", None)


@pytest.mark.usefixtures("installed_plugin")
@pytest.mark.parametrize("kind", ["thirdparty", "entrypoint:thirdparty"])
def test_entry_point_kind_builds_a_search(kind: str) -> None:
    """A kind registered under retrieval_monitor.search is built from its options."""
    search = build_search(kind, {"size": 2})
    assert ["ep0", "ep1"] == search("q", 10)  # type: ignore[arg-type]


@pytest.mark.usefixtures("installed_plugin")
def test_entry_point_kinds_are_listed_as_known() -> None:
    """Installed kinds appear in the list an unknown kind shows."""
    with pytest.raises(UnknownSearchKindError) as caught:
        build_search("nope", {})
    assert "thirdparty" in caught.value.known


@pytest.mark.usefixtures("installed_plugin")
@pytest.mark.parametrize(
    ("kind", "reason"),
    [("failing", "KeyError: 'size'"), ("missing", "cannot load entry point")],
)
def test_entry_point_failures_are_setup_errors(kind: str, reason: str) -> None:
    """A third-party builder that raises, or does not load, gives a SearchSetupError."""
    with pytest.raises(SearchSetupError, match=reason):
        build_search(kind, {})


def test_entrypoint_prefix_does_not_reach_builtins() -> None:
    """'entrypoint:http' looks only at entry points."""
    with pytest.raises(UnknownSearchKindError, match="entrypoint:http"):
        build_search("entrypoint:http", {})

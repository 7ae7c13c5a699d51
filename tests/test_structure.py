"""The package's structure: no import cycle, and one exit-code table that the README repeats."""

from __future__ import annotations

import ast
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from monitor import errors
from monitor.cli.exits import SERIOUSNESS, ExitCode, classify, most_serious

PACKAGE = Path(__file__).resolve().parent.parent / "monitor"
README = PACKAGE.parent / "README.md"


def _modules() -> dict[str, Path]:
    """Return every module of the package by its dotted name."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Return the package modules that ``name`` imports anywhere, lazily or for typing too.

    ``from a.b import c`` is an edge to ``a.b`` (importing from a package runs its
    ``__init__``) and to ``a.b.c`` when that is a module. A module's own packages, whose
    ``__init__`` has run before it, and the root package are not edges.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                keep = len(base) - node.level + (path.name == "__init__.py")
                target = ".".join([*base[:keep], *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {
        module
        for module in (_owner(found_name, modules) for found_name in found)
        if module is not None
        and module != name
        and module != "monitor"
        and not name.startswith(module + ".")
    }


def _owner(dotted: str, modules: dict[str, Path]) -> str | None:
    """Return the module that ``dotted`` (a module, or a name inside one) belongs to."""
    while dotted and dotted not in modules:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def import_cycles() -> list[list[str]]:
    """Return the package's import cycles (strongly connected components of two or more)."""
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


@pytest.mark.slow
def test_the_package_has_no_import_cycle() -> None:
    """No two modules of the package import each other, directly or through others."""
    assert [] == import_cycles()


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path) -> None:
    """The import graph sees a cycle made of a lazy import and a typing-only import."""
    modules = {"monitor.a": tmp_path / "a.py", "monitor.b": tmp_path / "b.py"}
    modules["monitor.a"].write_text("def f():\n    from monitor.b import g\n")
    modules["monitor.b"].write_text("if TYPE_CHECKING:\n    from monitor import a\n")
    modules["monitor"] = tmp_path / "__init__.py"
    assert {"monitor.b"} == _imports("monitor.a", modules["monitor.a"], modules)
    assert {"monitor.a"} == _imports("monitor.b", modules["monitor.b"], modules)


def test_importing_from_a_package_is_an_edge_to_the_package(tmp_path: Path) -> None:
    """``from monitor.p import m`` runs ``monitor/p/__init__.py``: an edge to both."""
    modules = {
        "monitor": tmp_path / "__init__.py",
        "monitor.p": tmp_path / "p" / "__init__.py",
        "monitor.p.m": tmp_path / "p" / "m.py",
        "monitor.q": tmp_path / "q.py",
    }
    modules["monitor.q"].write_text("from monitor.p import m, name_in_p\n")
    assert {"monitor.p", "monitor.p.m"} == _imports("monitor.q", modules["monitor.q"], modules)


def _readme_exit_table() -> dict[int, str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d) \| (.+) \|$", section, flags=re.MULTILINE)
    return {int(code): meaning for code, meaning in rows}


def test_the_readme_exit_table_is_the_exit_code_table() -> None:
    """Each row of the README's exit-code table is a code of ExitCode with its meaning."""
    assert {code.value: code.meaning for code in ExitCode} == _readme_exit_table()


def test_the_readme_states_the_seriousness_order() -> None:
    """The README gives the order in which the most serious code wins."""
    order = ", ".join(str(code.value) for code in SERIOUSNESS[:-1]) + f", {SERIOUSNESS[-1].value}"
    assert order in " ".join(README.read_text(encoding="utf-8").split())


@pytest.mark.parametrize(
    ("error", "code", "outcome"),
    [
        (
            errors.StoreLockedError("db", "nightly", "host", 7, datetime.now(timezone.utc)),
            ExitCode.OK,
            "skipped",
        ),
        (errors.ErrorBudgetExceeded(3, 10, 0.1), ExitCode.BACKEND, "error"),
        (errors.StoreError("db", "disk full"), ExitCode.UNEXPECTED, "error"),
        (errors.ConfigError("monitor.yaml", "store", "a store"), ExitCode.USAGE, "error"),
        (RuntimeError("a bug"), ExitCode.UNEXPECTED, "error"),
    ],
)
def test_each_error_family_has_one_exit_code(
    error: BaseException, code: ExitCode, outcome: str
) -> None:
    """An error maps to its family's code and outcome: a held lock is a skip with 0."""
    row = classify(error)
    assert (code, outcome) == (row.code, row.outcome)


def test_the_most_serious_code_wins() -> None:
    """With several suites, 1 beats 3 beats 2 beats 4 beats 0."""
    assert ExitCode.BACKEND == most_serious([ExitCode.OK, ExitCode.USAGE, ExitCode.BACKEND])
    assert ExitCode.OK == most_serious([])

"""The package's layering: each stage imports only the stages before it, and no module is huge.

The data flows config -> evalset -> search -> run -> runner -> metrics -> store -> compare ->
alerts and exporters -> job (the composer) -> cli, daemon, web, report and gate. Every module
under ``monitor/`` is read with :mod:`ast`, never imported, and each ``import`` in it counts:
at the top, inside a function (a lazy import) and under ``TYPE_CHECKING``, since a typing-only
import is knowledge of the other stage all the same.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "monitor"

#: Cross-cutting modules every stage may import; they import no stage themselves.
INFRASTRUCTURE = (
    "monitor.errors",
    "monitor.records",
    "monitor.io",
    "monitor.logs",
    "monitor.secrets",
    "monitor.plugins",
    "monitor.texts",
    "monitor.terminal",
    "monitor.testing",
    "monitor.tls",
)
#: Alerts and exporters: the two outputs of a run, each on its own.
PUBLISH = ("monitor.alerts", "monitor.exporters")
#: The composer and the modules that are its steps.
JOB = (
    "monitor.job",
    "monitor.job.publish",
    "monitor.job.outcome",
    "monitor.job.shards",
    "monitor.job.lockskips",
)
#: The programs built on the composer.
FRONTENDS = ("monitor.cli", "monitor.daemon", "monitor.web", "monitor.report", "monitor.gate")

#: The stages in the order the data flows; a stage may import its own layer's and earlier ones.
FLOW: tuple[tuple[str, ...], ...] = (
    ("monitor.config",),
    ("monitor.evalset", "monitor.traffic"),
    ("monitor.search",),
    ("monitor.run",),
    ("monitor.runner",),
    ("monitor.metrics",),
    ("monitor.store",),
    ("monitor.compare", "monitor.judgments"),
    PUBLISH,
    JOB,
    FRONTENDS,
)


def later(package: str) -> tuple[str, ...]:
    """Return every stage after ``package``'s layer of :data:`FLOW`."""
    layer = next(n for n, stages in enumerate(FLOW) if package in stages)
    return tuple(stage for stages in FLOW[layer + 1 :] for stage in stages)


#: (package, the packages it must not import, why).
RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "monitor.config",
        later("monitor.config"),
        "the config is read first: every stage reads its records, it reads none of theirs",
    ),
    (
        "monitor.evalset",
        later("monitor.evalset"),
        "an eval set is data: it knows nothing of how it is searched, scored or compared",
    ),
    (
        "monitor.traffic",
        (*later("monitor.traffic"), "monitor.evalset"),
        "traffic logs are data beside the eval set: the CLI joins them to suites and layers",
    ),
    (
        "monitor.search",
        later("monitor.search"),
        "a search answers queries; what is done with the answers comes later",
    ),
    (
        "monitor.run",
        later("monitor.run"),
        "the run table is the data type runner, metrics, store and compare read: below them all",
    ),
    (
        "monitor.runner",
        later("monitor.runner"),
        "the runner records what the search answered; scoring it is the next stage",
    ),
    (
        "monitor.metrics",
        later("monitor.metrics"),
        "a metric scores a run and judgments, wherever the run is kept and whatever follows",
    ),
    (
        "monitor.store",
        later("monitor.store"),
        "the store keeps figures; comparing and publishing them read the store, not the reverse",
    ),
    (
        "monitor.compare",
        (*later("monitor.compare"), "monitor.judgments"),
        "a comparison reads stored runs and qrels; labels enter as qrels, not judgment layers",
    ),
    (
        "monitor.judgments",
        (*later("monitor.judgments"), "monitor.compare"),
        "judgment layers change the labels runs are scored with; they compare nothing",
    ),
    (
        "monitor.alerts",
        (*later("monitor.alerts"), "monitor.exporters"),
        "notifiers send a comparison's alerts; gauges are the exporters' (each output alone)",
    ),
    (
        "monitor.exporters",
        (*later("monitor.exporters"), "monitor.alerts"),
        "exporters write a snapshot's gauges; alerts are the notifiers' (each output alone)",
    ),
    *(
        (step, FRONTENDS, "the composer runs the stages; the programs built on it call it")
        for step in JOB
    ),
    (
        "monitor.daemon",
        ("monitor.web", "monitor.report", "monitor.gate"),
        "the daemon schedules the composer; it needs no other program",
    ),
    (
        "monitor.report",
        ("monitor.daemon", "monitor.web", "monitor.gate"),
        "a report renders stored runs; the programs that show it import it",
    ),
    (
        "monitor.gate",
        ("monitor.daemon", "monitor.web", "monitor.report"),
        "the gate composes and renders its own result",
    ),
    (
        "monitor.web",
        ("monitor.daemon", "monitor.gate"),
        "the web app reads the store and the reports; it schedules and gates nothing",
    ),
    *(
        (
            module,
            tuple(stage for stages in FLOW for stage in stages),
            "infrastructure is shared by every stage, so it imports none",
        )
        for module in INFRASTRUCTURE
    ),
)

#: Modules inside a stage's package that hold a grammar or a record every stage speaks, and so
#: any stage may import (they import nothing but infrastructure and their own package). Each
#: is an import from an earlier stage into a later one's package.
SHARED = {
    # one owner for a metric's name, parsed once (STYLE: "Metrics"); the config reads it
    "monitor.metrics.spec": "the metric grammar: ndcg@10 parses to a Metric",
    "monitor.metrics.names": "the metric aliases and display names",
    # one owner for what a mean reads as; the config reads its families and default edges
    "monitor.metrics.bands": "the reading bands of each metric family",
    # the config checks a store URL and a retention policy where it reads them
    "monitor.store.location": "the store URL grammar (sqlite, postgresql)",
    "monitor.store.retention": "the retention policy grammar",
    # imported lazily, so a config without cron loads no apscheduler
    "monitor.daemon.cron": "the crontab grammar (a 5-field line to a trigger)",
    # run.table reads search.trec_columns, but search returns this record: it imports nothing
    "monitor.run.answers": "the bulk answer record a search returns and the run table holds",
}

#: Imports that break a rule today, each with why it is there and what would remove it: (the
#: importing module or a package holding it, the module imported). An entry whose import is
#: gone fails test_every_known_exception_is_still_needed: delete it.
KNOWN_EXCEPTIONS = {
    ("monitor.config.kinds", "monitor.search.registry"): (
        "the registry owns the search kinds (STYLE: one fact, one owner); imported lazily"
    ),
    ("monitor.config.kinds", "monitor.alerts.registry"): (
        "the registry owns the notifier kinds (STYLE: one fact, one owner); imported lazily"
    ),
    ("monitor.job.lockskips", "monitor.daemon.schedule"): (
        "a skip streak is too long after one schedule interval; the interval of a cron "
        "schedule is the daemon's shortest_gap (imported lazily); belongs beside daemon.cron"
    ),
    ("monitor.secrets", "monitor.config.model"): (
        "the scrubber collects the values the config marks Secret from a SuiteConfig"
    ),
}

#: The modules over MAX_LINES today; each comes off the list once it is under.
BEING_SPLIT: frozenset[str] = frozenset()
MAX_LINES = 600


@dataclass(frozen=True, slots=True)
class Edge:
    """One import: the importing module, the module imported, the line it is on."""

    importer: str
    imported: str
    line: int


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Return every module under ``package`` by its dotted name (a package by its own)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: Iterable[str]) -> Iterator[Edge]:
    """Yield the modules of ``known`` that module ``name`` imports anywhere in its source.

    ``from a import b`` names the module ``a.b`` when there is one, else ``a`` (``b`` is a
    name in it). A relative import is resolved against ``name``'s package.
    """
    names = set(known)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, path, node)
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            owner = _owner(target, names)
            if owner is not None and owner != name:
                yield Edge(name, owner, node.lineno)


def _absolute(name: str, path: Path, node: ast.ImportFrom) -> str:
    """Return the module an ``ImportFrom`` names, relative ones resolved from ``name``."""
    if not node.level:
        return node.module or ""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _owner(dotted: str, names: set[str]) -> str | None:
    """Return the module ``dotted`` (a module, or a name inside one) belongs to."""
    while dotted and dotted not in names:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


@functools.cache
def edges() -> tuple[Edge, ...]:
    """Return every import between two modules of the package (read once per test run)."""
    known = modules()
    return tuple(edge for name, path in known.items() for edge in imports(name, path, known))


def within(module: str, package: str) -> bool:
    """Return whether ``module`` is ``package`` or inside it."""
    return module == package or module.startswith(package + ".")


def breaches(found: Iterable[Edge]) -> list[tuple[Edge, str]]:
    """Return each import that breaks a rule of :data:`RULES`, with the rule's reason."""
    out = []
    for edge in found:
        if edge.imported in SHARED or excused(edge):
            continue
        for package, forbidden, reason in RULES:
            if within(edge.importer, package) and any(within(edge.imported, f) for f in forbidden):
                out.append((edge, reason))
    return out


def excused(edge: Edge) -> bool:
    """Return whether ``edge`` is a known exception (its importer, or a package holding it)."""
    return any(
        within(edge.importer, importer) and edge.imported == imported
        for importer, imported in KNOWN_EXCEPTIONS
    )


def _lines(found: Iterable[tuple[Edge, str]]) -> list[str]:
    return [f"{e.importer}:{e.line} imports {e.imported} ({why})" for e, why in found]


@pytest.mark.slow
def test_each_stage_imports_only_earlier_stages() -> None:
    """No module imports a stage its package's rule forbids, outside the known exceptions."""
    assert [] == _lines(breaches(edges()))


def test_nothing_but_the_cli_imports_the_cli() -> None:
    """Only the command line itself and ``python -m monitor`` import monitor.cli."""
    found = [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in edges()
        if within(e.imported, "monitor.cli")
        and not within(e.importer, "monitor.cli")
        and e.importer != "monitor.__main__"
    ]
    assert [] == found


@pytest.mark.parametrize("shared", sorted(SHARED))
def test_a_shared_module_imports_no_other_stage(shared: str) -> None:
    """A module every stage may import imports only infrastructure and its own package."""
    package = shared.rpartition(".")[0]
    found = [
        f"{e.importer}:{e.line} imports {e.imported}"
        for e in edges()
        if e.importer == shared
        and not within(e.imported, package)
        and not any(within(e.imported, m) for m in INFRASTRUCTURE)
    ]
    assert [] == found


def test_every_known_exception_is_still_needed() -> None:
    """Each known exception is an import the package still makes (a fixed one comes off)."""
    found = edges()
    unused = [
        (importer, imported)
        for importer, imported in KNOWN_EXCEPTIONS
        if not any(within(e.importer, importer) and e.imported == imported for e in found)
    ]
    assert [] == sorted(unused)


def test_every_rule_names_packages_that_exist() -> None:
    """Each package the rules name exists, so a rename cannot empty a rule unseen."""
    known = modules()
    named = {p for p, forbidden, _ in RULES for p in (p, *forbidden)} | set(SHARED)
    named |= {m for pair in KNOWN_EXCEPTIONS for m in pair}
    missing = sorted(name for name in named if not any(within(m, name) for m in known))
    assert [] == missing


def test_the_rules_catch_an_upward_import(tmp_path: Path) -> None:
    """An import of a later stage, lazy or typing-only, is a breach; an earlier one is not."""
    (tmp_path / "monitor" / "store").mkdir(parents=True)
    (tmp_path / "monitor" / "__init__.py").write_text("")
    (tmp_path / "monitor" / "store" / "__init__.py").write_text("")
    (tmp_path / "monitor" / "store" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from monitor.metrics import b\n"
        "if TYPE_CHECKING:\n"
        "    from monitor.compare.c import Comparison\n"
        "def f():\n"
        "    from ..alerts import d\n"
    )
    known = {
        **modules(tmp_path / "monitor"),
        **dict.fromkeys(["monitor.metrics.b", "monitor.compare.c", "monitor.alerts.d"], Path()),
    }
    found = list(imports("monitor.store.a", known["monitor.store.a"], known))
    assert ["monitor.alerts.d", "monitor.compare.c"] == sorted(
        e.imported for e, _ in breaches(found)
    )


def test_no_module_is_over_the_line_limit() -> None:
    """Every module has at most MAX_LINES lines, but those on the list being split."""
    long = {
        str(path.relative_to(PACKAGE.parent)): count
        for path in PACKAGE.rglob("*.py")
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert {} == {path: count for path, count in long.items() if path not in BEING_SPLIT}


def test_every_module_being_split_is_still_long() -> None:
    """A module on the list being split is still over the limit (once split, it comes off)."""
    done = [
        path
        for path in BEING_SPLIT
        if not (PACKAGE.parent / path).is_file()
        or len((PACKAGE.parent / path).read_text(encoding="utf-8").splitlines()) <= MAX_LINES
    ]
    assert [] == done

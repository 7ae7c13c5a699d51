"""The JSON Schema of the config file agrees with the loader on good and bad files."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config import config_schema, load_config, load_config_text, vocab
from monitor.errors import ConfigError

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data" / "config"
DEFAULT = resources.files("monitor").joinpath("data/default_config.yaml")
GOOD = [
    ROOT / "config" / "monitor.example.yaml",
    ROOT / "config" / "larkfield.yaml",
    *sorted((DATA / "valid").glob("*.yaml")),
    DATA / "project" / "monitor.yaml",
]
#: Each invalid test file and where the schema finds its fault.
BAD = {
    "bad-metric.yaml": "$.suites.nightly.metrics[0]",
    "exporter-kind.yaml": "$.suites.nightly.exporters[0]",
    "label-name.yaml": "$.suites.nightly.labels",
    "notifier-without-url.yaml": "$.suites.nightly.notifiers[0]",
    "rule-metric-missing.yaml": "$.suites.nightly.rules[0]",
    "rule-two-checks.yaml": "$.suites.nightly.rules[0]",
    "schedule-both.yaml": "$.suites.nightly.schedule",
    "store-both.yaml": "$.store",
    "suite-name.yaml": "$.suites",
    "unknown-key.yaml": "$.suites.nightly.runner",
}


def validator() -> jsonschema.Draft202012Validator:
    """Return a draft 2020-12 validator of the config schema."""
    return jsonschema.Draft202012Validator(config_schema())


@pytest.mark.slow
def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    """The schema itself passes the draft 2020-12 metaschema."""
    jsonschema.Draft202012Validator.check_schema(config_schema())


def test_schema_declares_its_draft() -> None:
    """The schema names draft 2020-12 in $schema."""
    assert "https://json-schema.org/draft/2020-12/schema" == config_schema()["$schema"]


def test_default_config_validates() -> None:
    """The embedded default config passes the schema."""
    assert [] == list(validator().iter_errors(yaml.safe_load(DEFAULT.read_text("utf-8"))))


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_files_validate(path: Path) -> None:
    """Every example and valid test file passes the schema."""
    assert [] == [
        error.message for error in validator().iter_errors(yaml.safe_load(path.read_text()))
    ]


def test_every_invalid_file_is_listed() -> None:
    """Each file in tests/data/config/invalid has its expected fault listed."""
    assert sorted(BAD) == sorted(p.name for p in (DATA / "invalid").glob("*.yaml"))


@pytest.mark.parametrize(("name", "where"), BAD.items())
def test_schema_rejects_bad_files_at_the_fault(name: str, where: str) -> None:
    """Each invalid test file fails the schema at the place of its fault."""
    errors = validator().iter_errors(yaml.safe_load((DATA / "invalid" / name).read_text()))
    best = jsonschema.exceptions.best_match(errors)
    assert where == (best.json_path if best is not None else None)


@pytest.mark.parametrize("name", BAD)
def test_loader_rejects_the_same_bad_files(name: str) -> None:
    """The loader rejects every file the schema rejects, naming the file."""
    with pytest.raises(ConfigError, match=name):
        load_config(DATA / "invalid" / name, env={})


def test_evalset_formats_mirror_the_evalset_package() -> None:
    """The config's list of eval set formats is the eval set package's list."""
    formats = pytest.importorskip("monitor.evalset.formats")
    assert (tuple(formats.FORMATS), {s for s, f in formats.SUFFIXES.items() if f == "trec"}) == (
        vocab.EVALSET_FORMATS,
        set(vocab.TREC_SUFFIXES),
    )


@pytest.mark.parametrize(
    ("registry_module", "section"),
    [
        ("monitor.search.registry", lambda suite: suite["search"]),
        ("monitor.alerts.registry", lambda suite: suite["notifiers"]["items"]),
    ],
    ids=["search", "notifiers"],
)
def test_the_schema_lists_the_registry_tables_kinds(
    monkeypatch: pytest.MonkeyPatch,
    registry_module: str,
    section: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """A kind added to a registry's alias table is one the schema accepts, with no other edit."""
    registry = importlib.import_module(registry_module)
    added = replace(registry.KINDS, builtins={**registry.BUILTINS, "solr": "solr_plugin:build"})
    monkeypatch.setattr(registry, "KINDS", added)
    kind = section(config_schema()["$defs"]["suite"]["properties"])["properties"]["kind"]
    assert sorted([*registry.BUILTINS, "solr"]) == kind["anyOf"][0]["enum"]


def test_the_loader_accepts_a_kind_added_to_the_search_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search kind added to the registry's alias table loads, with no other edit."""
    registry = importlib.import_module("monitor.search.registry")
    added = replace(registry.KINDS, builtins={**registry.BUILTINS, "solr": "solr_plugin:build"})
    monkeypatch.setattr(registry, "KINDS", added)
    text = "suites:\n  s:\n    evalset: {bundled: larkfield}\n    search: {kind: solr}\n"
    assert "solr" == load_config_text(text).suite("s").search.kind

"""A stable fingerprint of a suite's effective configuration, recorded with every run."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from enum import Enum
from pathlib import Path

from monitor.config.model import ScoringConfig, Secret, SuiteConfig
from monitor.metrics.spec import Metric

#: Bumped when the canonical form changes, so old and new fingerprints never collide.
HASH_FORMAT = 1


def config_hash(suite: SuiteConfig) -> str:
    """Return the hex SHA-256 of ``suite``'s canonical effective config.

    The canonical form is sorted-key JSON of every field, defaults filled in. Secrets enter
    only as their own SHA-256, and paths under the config file's folder as relative paths,
    so moving a checkout keeps the fingerprint.
    """
    text = json.dumps(
        canonical(suite), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical(suite: SuiteConfig) -> object:
    """Return the JSON-ready canonical form that :func:`config_hash` digests."""
    plain = _plain(suite, suite.search.base_dir)
    if isinstance(plain, dict) and not suite.invariants:
        # A suite without invariants keeps the fingerprint it had before they existed.
        del plain["invariants"]
    if isinstance(plain, dict):
        # Retention decides what is kept, not what is measured: runs stay comparable.
        del plain["retention"]
        # Bands only read the figures: moving their edges measures nothing differently.
        del plain["bands"]
        # Nor does what else starts a run: a suite keeps the fingerprint it had before
        # triggers existed.
        del plain["trigger"]
        # Nor does how much of the set a run must answer to count: it measures the same.
        runner = plain["runner"]
        if isinstance(runner, dict):
            del runner["min_measured"]
    if isinstance(plain, dict) and suite.scoring == ScoringConfig():
        # Nor does a suite scored the default way, from before scoring options existed.
        del plain["scoring"]
    return {"format": HASH_FORMAT, "suite": plain}


def _plain(value: object, base: Path) -> object:
    if isinstance(value, Secret):
        return {"secret_sha256": value.sha256()}
    if isinstance(value, Metric):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        try:
            return "./" + value.relative_to(base).as_posix()
        except ValueError:
            return value.as_posix()
    if isinstance(value, str) and value.startswith(f"{base}{os.sep}"):
        # An absolute path option (replay `path`) written relative to the config's folder.
        return "./" + Path(value).relative_to(base).as_posix()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: _plain(getattr(value, field.name), base)
            for field in dataclasses.fields(value)
            # Where a section was written (compare=False) is not what it configures.
            if field.name != "base_dir" and field.compare
        }
    if isinstance(value, Mapping):
        return {str(key): _plain(item, base) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item, base) for item in value]
    return value

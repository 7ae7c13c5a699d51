"""The verification sample on a page: the suite judge's grades drawn for people to grade blind.

The same draw as ``retrieval-monitor judgments verify`` (:func:`monitor.judgments.verify.
verify_sample`: stratified by the judge's grade and the suite's first segment key, seeded),
shown without the judge's grades, each pair with grade buttons that add to the suite's human
judgment layer, as a query page's do. The agreement figures then read that layer.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from monitor.config.model import config_option
from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.judgments.todo import TodoItem
    from monitor.web.views import Views

#: How a verification sample draws: single pairs, or whole queries.
Draw = Literal["pair", "query"]


@dataclass(frozen=True, slots=True)
class VerifyView:
    """The drawn pairs of a suite's judge, blind, with the command that draws the same."""

    suite: str
    items: tuple[TodoItem, ...]
    strata: tuple[str, ...]
    population: int
    share: float
    seed: int
    by: Draw
    command: str


def parse_share(text: str) -> float:
    """Return the share of the judge's grades to draw, above 0 and at most 1; raise
    UsageError otherwise."""
    try:
        share = float(text)
    except ValueError:
        share = math.nan
    if not 0.0 < share <= 1.0:  # NaN fails too
        raise UsageError(f"share: expected a number above 0 and at most 1, got {text[:40]!r}")
    return share


def verify_view(views: Views, name: str, *, share: float, seed: int, by: Draw) -> VerifyView:
    """Return the verification sample of suite ``name``'s judge; raise UsageError when the
    suite has no judge or its eval set cannot be loaded."""
    from monitor.judgments.verify import suite_verify_sample

    suite = views.suite(name)
    frozen = views.evalset(suite)
    if frozen is None:
        raise UsageError(f"suite {name!r}: its eval set cannot be loaded")
    with views.store() as store:
        sample = suite_verify_sample(suite, store, frozen, share=share, seed=seed, by=by)
    command = (
        f"retrieval-monitor judgments verify --suite {shlex.quote(name)} --share {share:g} "
        f"--seed {seed} --by {by}{config_option(suite.config_file)}"
    )
    return VerifyView(
        suite=name,
        items=sample.items,
        strata=tuple(stratum.describe() for stratum in sample.strata),
        population=sample.population,
        share=share,
        seed=seed,
        by=by,
        command=command,
    )

"""How a drift check decides, as one frozen record (no numpy: the config reads it).

``alpha`` is the level of the MMD permutation test, ``permutations`` its count and ``seed``
every random draw's; a side with fewer than ``min_queries`` queries is ``no data``; each side
is compared on at most ``max_rows`` rows; ``folds`` split the domain classifier's
cross-validation; ``max_auc`` and ``max_centroid_distance`` (off when None) make a drift of
an AUC or a centroid distance above them too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from monitor.errors import UsageError

#: Rows kept of each sample at most (a seeded subsample above it).
MAX_ROWS: Final = 1000
#: Permutations of the MMD test unless told otherwise.
PERMUTATIONS: Final = 200
#: Folds of the domain classifier's cross-validation.
FOLDS: Final = 5
#: The fewest queries of a window the check reads (below: ``no data``).
MIN_QUERIES: Final = 50


@dataclass(frozen=True, slots=True)
class DriftSettings:
    """How a drift check decides: its level, its permutations, seed, sizes and thresholds."""

    alpha: float = 0.05
    permutations: int = PERMUTATIONS
    seed: int = 0
    min_queries: int = MIN_QUERIES
    max_rows: int = MAX_ROWS
    folds: int = FOLDS
    max_auc: float | None = None
    max_centroid_distance: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise UsageError(f"alpha: expected a level above 0 and below 1, found {self.alpha}")
        if self.permutations < 1:
            raise UsageError(f"permutations: expected at least 1, found {self.permutations}")
        if self.min_queries < self.folds:
            raise UsageError(
                f"min_queries: expected at least {self.folds} (the folds), found {self.min_queries}"
            )
        if self.max_rows < self.min_queries:
            raise UsageError(
                f"max_rows: expected at least min_queries ({self.min_queries}), "
                f"found {self.max_rows}"
            )
        if self.max_auc is not None and not 0.5 <= self.max_auc <= 1.0:
            raise UsageError(f"max_auc: expected a number from 0.5 to 1, found {self.max_auc}")
        distance = self.max_centroid_distance
        if distance is not None and not (math.isfinite(distance) and 0.0 <= distance <= 2.0):
            raise UsageError(f"max_centroid_distance: expected 0 to 2, found {distance}")

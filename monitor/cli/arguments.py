"""Option types of the command line: each reads one value strictly or refuses it in one line.

``argparse``'s own ``type=int`` takes Arabic-Indic digits and ``1_0`` (as ``int()`` does)
of any size, so a run id past 64 bits reached the store and failed there with a traceback;
its ``type=float`` takes ``inf``, ``nan`` and ``1e300``. These types read ASCII digits only,
within the range the store keeps (a 64-bit signed integer), and finite seconds within
bounds; an output path must name a file that can be written. A refused value exits 2 with
``argument --run: expected ...``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

#: The largest integer the store keeps (SQLite's and PostgreSQL's BIGINT).
LARGEST_ID: Final = 2**63 - 1
#: The longest duration in seconds an option takes: a week, as the config's timeouts.
LONGEST_SECONDS: Final = 604_800.0
#: The most shards a run is split into.
MOST_SHARDS: Final = 10_000

_DIGITS = re.compile(r"[0-9]{1,19}", re.ASCII)
_DECIMAL = re.compile(r"[+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)
_SHARD = re.compile(r"([0-9]{1,5})/([0-9]{1,5})", re.ASCII)


def integer(
    minimum: int = 0, maximum: int = LARGEST_ID, what: str = "an integer"
) -> Callable[[str], int]:
    """Return an option type reading an integer from ``minimum`` to ``maximum``."""
    expected = f"{what} from {minimum} to {maximum} (ASCII digits)"

    def read(text: str) -> int:
        if not _DIGITS.fullmatch(text.strip()):
            raise argparse.ArgumentTypeError(f"expected {expected}, found {_shown(text)}")
        value = int(text.strip())
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"expected {expected}, found {value}")
        return value

    return read


#: A run id, a layer id: a row of the store.
row_id = integer(1, what="an id")
#: A count of items to list or read: at least 1.
count = integer(1, what="a count")
#: A TCP port to listen on (0: any free one).
port = integer(0, 65535, what="a port")


def seconds(maximum: float = LONGEST_SECONDS) -> Callable[[str], float]:
    """Return an option type reading a finite number of seconds above 0, at most ``maximum``."""
    expected = f"a number of seconds above 0 of at most {maximum:g}"

    def read(text: str) -> float:
        if not _DECIMAL.fullmatch(text.strip()):
            raise argparse.ArgumentTypeError(f"expected {expected}, found {_shown(text)}")
        value = float(text)
        if not (math.isfinite(value) and 0 < value <= maximum):
            raise argparse.ArgumentTypeError(f"expected {expected}, found {_shown(text)}")
        return value

    return read


def share(text: str) -> float:
    """Return a number strictly between 0 and 1 (a significance level)."""
    expected = "a number above 0 and below 1"
    if not _DECIMAL.fullmatch(text.strip()) or not 0 < float(text) < 1:
        raise argparse.ArgumentTypeError(f"expected {expected}, found {_shown(text)}")
    return float(text)


def shard(text: str) -> str:
    """Return ``INDEX/COUNT`` as given, once its numbers are ASCII digits of a few places."""
    found = _SHARD.fullmatch(text.strip())
    if found is None or not 1 <= int(found.group(2)) <= MOST_SHARDS:
        raise argparse.ArgumentTypeError(
            f"expected INDEX/COUNT such as 0/4, COUNT from 1 to {MOST_SHARDS}, found {_shown(text)}"
        )
    return text.strip()


def output_file(text: str) -> Path:
    """Return the path of a file to write: not empty, not a folder, in a folder (or one that
    can be made: missing folders are created)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected the path of a file to write, found ''")
    path = Path(text)
    if path.is_dir() or text.endswith(("/", "\\")):
        raise argparse.ArgumentTypeError(
            f"expected the path of a file to write, found the folder {text!r}"
        )
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(
                    f"expected a file in a folder, found {text!r} under the file {str(parent)!r}"
                )
            break
    return path


def output_template(text: str) -> str:
    """Return a path template with ``{suite}`` in it as given, once the path it names for a
    suite passes :func:`output_file`."""
    output_file(text.replace("{suite}", "suite"))
    return text


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")

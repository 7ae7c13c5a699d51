"""``retrieval-monitor --version``: the installed distribution's version."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

DISTRIBUTION = "retrieval-monitor"


def version() -> str:
    """Return the installed distribution's version, else the package's own ``__version__``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that is not installed
        from monitor import __version__

        return __version__


class VersionAction(argparse.Action):
    """Print ``retrieval-monitor <version>`` and exit 0.

    argparse's own ``version`` action needs the text when the parser is built; reading the
    distribution's metadata then would slow every command's start.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        """Print the version and exit."""
        sys.stdout.write(f"{parser.prog} {version()}\n")
        parser.exit()

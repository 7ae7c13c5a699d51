"""Run the command line: ``python -m monitor``."""

from __future__ import annotations

import sys

from monitor.cli import main

sys.exit(main())

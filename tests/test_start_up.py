"""What a one-shot command imports: only what its work needs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

_EVALUATE = """
import sys
import monitor.search.trec_arrow as arrow
arrow.ARROW_MIN_BYTES = 0  # the pyarrow reader, as for a big run
from monitor.cli import main
code = main(["evaluate", "--qrels", sys.argv[1], "--run", sys.argv[2], "--format", "json"])
print(sorted(name for name in ("pandas", "structlog") if name in sys.modules))
sys.exit(code)
"""


def test_evaluate_as_json_imports_neither_pandas_nor_structlog(tmp_path: Path) -> None:
    """Printing JSON needs no data frame and, with nothing logged, no log renderer: a big
    run pays for neither at start-up."""
    pytest.importorskip("pyarrow")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d3 2 1.0 t\nq2 Q0 d2 1 1.0 t\n")
    done = subprocess.run(
        [sys.executable, "-c", _EVALUATE, str(qrels), str(run)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    assert "[]" == done.stdout.splitlines()[-1]

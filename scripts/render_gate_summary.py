"""Render the gate's markdown summary of the bundled demo as a picture, for the README.

Gates the bundled keyword ranking against a rerank baseline file, renders the markdown the
gate writes (`--markdown`) to HTML with GitHub-like styling, and has headless Chromium take
a screenshot of it::

    python3 scripts/render_gate_summary.py jobs/ci/gate-summary.png

Needs markdown-it-py (the `docs` extra: `pip install -e '.[docs]'`) and Debian's chromium
(`apt-get install chromium`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from markdown_it import MarkdownIt

from monitor.cli import main

CONFIG = """\
store: {{path: {store}}}
suites:
  nightly:
    evalset: {{bundled: larkfield}}
    search: {{kind: replay, bundled: larkfield/rerank}}
    baseline: {{bundled_run: larkfield/rerank}}
    metrics: [mrr@10, recall@5, ndcg@10]
    rules:
      - {{metric: mrr@10, max_drop: 0.05}}
      - {{metric: recall@5, max_drop: 0.05}}
    invariants: [{{no_lost_hits: {{k: 5}}}}]
"""

STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1f2328;
  max-width: 980px; margin: 24px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; }
th { background: #f6f8fa; }
code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; }
h1, h2 { border-bottom: 1px solid #d8dee4; padding-bottom: 4px; }
"""


def render(output: Path) -> None:
    """Gate the demo, render its summary, and write the screenshot to ``output``."""
    output = output.resolve()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        os.chdir(work)  # the summary names the files as given: keep them short
        config = work / "monitor.yaml"
        config.write_text(textwrap.dedent(CONFIG).format(store=work / "m.db"))
        main(["run", "--config", str(config), "--no-progress"])
        baseline = Path("baseline.json")
        main(["baseline", "export", "--config", str(config), "--suite", "nightly",
              "--output", str(baseline)])  # fmt: skip
        summary = work / "gate.md"
        main(["gate", "--config", str(config), "--suite", "nightly", "--no-progress",
              "--baseline-file", str(baseline), "--candidate", "replay:larkfield/keyword",
              "--markdown", str(summary)])  # fmt: skip
        body = MarkdownIt("commonmark").enable("table").render(summary.read_text())
        page = work / "gate.html"
        page.write_text(f"<!doctype html><meta charset=utf-8><style>{STYLE}</style>{body}")
        browser = [
            "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={work / 'profile'}", "--hide-scrollbars", "--window-size=1040,1400",
        ]  # fmt: skip
        subprocess.run(
            [*browser, f"--screenshot={output}", page.as_uri()], check=True, capture_output=True
        )


if __name__ == "__main__":
    render(Path(sys.argv[1] if len(sys.argv) > 1 else "jobs/ci/gate-summary.png"))

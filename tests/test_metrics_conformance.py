"""trec_eval's own expected outputs, reproduced: every measure with a trec_eval name.

The files are trec_eval 10.0's test folder (``/work/shared/conformance/peers/trec_eval``,
see its README): ``out.test.aq`` is ``trec_eval -q -m all_trec qrels.test results.test``,
``out.test.aqcM`` adds ``-c -M100`` on ``results.trunc``, ``out.test.aql`` is
``-l2`` on ``qrels.rel_level``. trec_eval prints four decimals, so values must agree to
5e-5. Skipped when the folder is absent.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from monitor.metrics.evaluation import evaluate
from monitor.metrics.spec import parse_metric

PEERS = Path("/work/shared/conformance/peers/trec_eval")
pytestmark = pytest.mark.skipif(not PEERS.is_dir(), reason="trec_eval's test files are absent")

#: trec_eval measures the engine offers (its name resolves to one of ours).
MEASURES = (
    "P_5", "P_10", "P_100", "recall_10", "recall_1000", "map", "map_cut_10", "ndcg",
    "ndcg_cut_10", "recip_rank", "Rprec", "success_1", "success_10", "bpref", "num_ret",
    "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F", "rbp", "infAP",
)  # fmt: skip


def expected(name: str) -> dict[str, dict[str, float]]:
    """Return measure -> query id (``all`` for the summary) -> trec_eval's value."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (PEERS / name).read_text().splitlines():
        measure, qid, value = line.split()
        if measure in MEASURES:
            out[measure][qid] = float(value)
    return out


def ours(qrels: str, run: str, **options: Any) -> dict[str, dict[str, float]]:
    """Return our values in the same shape, the counts summed as trec_eval's summary does."""
    result = evaluate(PEERS / qrels, PEERS / run, list(MEASURES), average="trec_eval", **options)
    out: dict[str, dict[str, float]] = {}
    for measure in MEASURES:
        metric = parse_metric(measure)
        values = result.values[metric]
        summary = result.summary[str(metric)]
        out[measure] = {"all": summary} | dict(zip(result.query_ids, values.tolist(), strict=True))
    return out


def differences(
    want: dict[str, dict[str, float]], got: dict[str, dict[str, float]]
) -> list[tuple[str, str, float, float | None]]:
    """Return (measure, query, trec_eval's, ours) wherever they differ by more than 5e-5."""
    out = []
    for measure, by_query in want.items():
        for qid, value in by_query.items():
            mine = got[measure].get(qid)
            if mine is None or abs(mine - value) > 5.0001e-5 * max(1.0, abs(value)):
                out.append((measure, qid, value, mine))
    return out


@pytest.mark.parametrize(
    ("out_file", "qrels", "run", "options"),
    [
        ("out.test.aq", "qrels.test", "results.test", {}),
        ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}),
    ],
)
def test_every_value_equals_trec_evals_output(
    out_file: str, qrels: str, run: str, options: dict[str, Any]
) -> None:
    """Each query's value and each summary equal what trec_eval printed."""
    want = expected(out_file)
    assert set(MEASURES) <= set(want)
    assert [] == differences(want, ours(qrels, run, **options))


def test_max_docs_and_every_query_equal_trec_eval_c_m100(tmp_path: Path) -> None:
    """--max-docs 100 with --average all equals trec_eval -c -M100 on the truncated run."""
    want = expected("out.test.aqcM")
    # results.trunc has words after the run id, which trec_eval ignores: keep six fields.
    lines = (PEERS / "results.trunc").read_text().splitlines()
    run = tmp_path / "results.trunc"
    run.write_text("".join(" ".join(line.split()[:6]) + "\n" for line in lines))
    result = evaluate(
        PEERS / "qrels.test",
        run,
        list(MEASURES),
        average="all",
        max_docs=100,
    )
    got = {
        m: {"all": result.summary[str(parse_metric(m))]}
        | dict(zip(result.query_ids, result.values[parse_metric(m)].tolist(), strict=True))
        for m in MEASURES
    }
    assert [] == differences(want, got)

"""``--format trec_eval`` prints the summary trec_eval prints, to the last decimal: each
measure's per-query values added one after another in trec_eval's query order, then divided."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from monitor.metrics.evaluation import evaluate

#: Per-query recall@10 whose pairwise sum (np.mean's) rounds to 0.5563, and whose sum in
#: sequence (trec_eval's) rounds to 0.5562: a mean on a rounding boundary of %6.4f.
RECALLS = [Fraction(1), Fraction(5, 6), Fraction(1), Fraction(1, 6), Fraction(1, 4),
           Fraction(2, 3), Fraction(1), Fraction(0), Fraction(4, 5), Fraction(1, 2),
           Fraction(1, 3), Fraction(1, 3), Fraction(2, 3), Fraction(3, 8), Fraction(1),
           Fraction(0), Fraction(1, 5), Fraction(0), Fraction(1), Fraction(1)]  # fmt: skip


def boundary_case() -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Return qrels and a run whose query q<i> finds RECALLS[i] of its relevant documents."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for i, recall in enumerate(RECALLS):
        qid = f"q{i:02d}"
        relevant = recall.denominator
        qrels[qid] = {f"r{j}": 1 for j in range(relevant)}
        run[qid] = [f"r{j}" for j in range(recall.numerator)] + ["n"]
    return qrels, run


def test_the_case_sits_on_a_rounding_boundary() -> None:
    """The sum in sequence and numpy's pairwise mean round to different fourth decimals."""
    values = [float(r) for r in RECALLS]
    total = 0.0
    for value in values:
        total += value
    assert ("0.5562", "0.5563") == (f"{total / 20:6.4f}", f"{float(np.mean(values)):6.4f}")


def test_the_trec_eval_summary_is_summed_in_sequence() -> None:
    """The summary line is trec_eval's 0.5562, not the pairwise mean's 0.5563."""
    qrels, run = boundary_case()
    text = evaluate(qrels, run, ["recall@10"]).to_trec_eval()
    assert "recall_10             \tall\t0.5562" == text.splitlines()[-1]


def test_the_trec_eval_summary_is_summed_in_query_id_order() -> None:
    """Queries are added in trec_eval's order (by id), whatever the order of the qrels."""
    qrels, run = boundary_case()
    reversed_qrels = dict(reversed(list(qrels.items())))
    text = evaluate(reversed_qrels, run, ["recall@10"]).to_trec_eval()
    assert "recall_10             \tall\t0.5562" == text.splitlines()[-1]

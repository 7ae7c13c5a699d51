"""Other tools' measure names resolve to canonical metrics and print back as those tools do."""

from __future__ import annotations

import pytest

from monitor.errors import MetricError, UnknownMetricError
from monitor.metrics.names import IR_MEASURES, RANX, TREC_EVAL, display_name
from monitor.metrics.spec import parse_metric, parse_metrics

#: (another tool's name, the canonical name it stands for)
ALIASES = [
    # trec_eval
    ("P_5", "precision@5"),
    ("recall_10", "recall@10"),
    ("map", "map"),
    ("map_cut_10", "map@10"),
    ("ndcg", "ndcg"),
    ("ndcg_cut_10", "ndcg@10"),
    ("recip_rank", "mrr"),
    ("Rprec", "r_precision"),
    ("success_5", "hit_rate@5"),
    ("bpref", "bpref"),
    ("num_ret", "num_ret"),
    ("num_rel", "num_rel"),
    ("num_rel_ret", "num_rel_ret"),
    ("set_P", "set_precision"),
    ("set_recall", "set_recall"),
    ("set_F", "set_f1"),
    ("rbp", "rbp"),
    ("P.5", "precision@5"),
    # ir_measures
    ("P@5", "precision@5"),
    ("R@10", "recall@10"),
    ("AP", "map"),
    ("AP@10", "map@10"),
    ("RR", "mrr"),
    ("RR@10", "mrr@10"),
    ("nDCG", "ndcg"),
    ("nDCG@10", "ndcg@10"),
    ("Success@5", "hit_rate@5"),
    ("Bpref", "bpref"),
    ("Judged@10", "judged@10"),
    ("ERR@20", "err@20"),
    ('nDCG(dcg="exp-log2")@10', "ndcg_burges@10"),
    ("NumRelRet", "num_rel_ret"),
    ("SetF", "set_f1"),
    # ranx
    ("r-precision", "r_precision"),
    ("hits@5", "num_rel_ret@5"),
    ("precision", "set_precision"),
    ("recall", "set_recall"),
    ("f1", "set_f1"),
    ("dcg@10", "dcg@10"),
    ("dcg_burges@10", "dcg_burges@10"),
    ("mrr@10", "mrr@10"),
    # case does not matter when the spelling is not exact
    ("ap@10", "map@10"),
    ("NDCG_CUT_10", "ndcg@10"),
]


@pytest.mark.parametrize(("name", "canonical"), ALIASES)
def test_another_tools_name_resolves_to_the_canonical_metric(name: str, canonical: str) -> None:
    """A trec_eval, ir_measures or ranx name parses to the metric of the canonical name."""
    assert canonical == str(parse_metric(name))


def test_a_list_mixing_spellings_of_one_metric_keeps_it_once() -> None:
    """P_5, P@5 and precision@5 are one metric."""
    assert ("precision@5",) == tuple(map(str, parse_metrics("P_5,P@5,precision@5")))


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("ndgc@10", "ndcg@10"),
        ("recal@5", "recall@5"),
        ("recip_rnk", "recip_rank"),
        ("Judgd@10", "judged@10"),
    ],
)
def test_an_unknown_name_suggests_the_closest_known_one(name: str, suggestion: str) -> None:
    """The error for an unknown measure names the closest canonical or other-tool name."""
    with pytest.raises(UnknownMetricError) as caught:
        parse_metric(name)
    assert suggestion == caught.value.suggestion
    assert f"did you mean {suggestion!r}?" in str(caught.value)


def test_a_bad_cutoff_on_a_known_measure_is_still_a_cutoff_error() -> None:
    """ndcg@x is not an unknown measure: the error says what a cutoff must be."""
    with pytest.raises(MetricError, match="positive integer"):
        parse_metric("ndcg@x")


@pytest.mark.parametrize(
    ("canonical", "trec_eval", "ir_measures"),
    [
        ("precision@5", "P_5", "P@5"),
        ("recall@10", "recall_10", "R@10"),
        ("map", "map", "AP"),
        ("map@10", "map_cut_10", "AP@10"),
        ("mrr", "recip_rank", "RR"),
        ("mrr@10", "mrr@10", "RR@10"),  # trec_eval has no cut reciprocal rank
        ("ndcg@10", "ndcg_cut_10", "nDCG@10"),
        ("hit_rate@5", "success_5", "Success@5"),
        ("r_precision", "Rprec", "Rprec"),
        ("bpref", "bpref", "Bpref"),
        ("judged@10", "judged@10", "Judged@10"),
        ("set_f1", "set_F", "SetF"),
        ("rbp", "rbp", "rbp"),  # ir_measures' RBP is another measure on graded qrels
        ("rbp_80", "rbp_80", "rbp_80"),
        ("f1@5", "f1@5", "f1@5"),  # neither tool has it
    ],
)
def test_a_metric_prints_under_each_tools_name(
    canonical: str, trec_eval: str, ir_measures: str
) -> None:
    """display_name spells a canonical metric as trec_eval and ir_measures do."""
    assert (canonical, trec_eval, ir_measures) == (
        display_name(canonical, "canonical"),
        display_name(canonical, "trec_eval"),
        display_name(canonical, "ir_measures"),
    )


@pytest.mark.parametrize("table", [TREC_EVAL, IR_MEASURES, RANX], ids=["trec", "irm", "ranx"])
def test_every_alias_names_a_valid_canonical_metric(table: dict[str, str]) -> None:
    """Every entry of the alias tables resolves, at a cutoff where it takes one."""
    for foreign, canonical in table.items():
        name = foreign.replace("{k}", "7")
        assert canonical.replace("{k}", "7") == str(parse_metric(name)), foreign


@pytest.mark.parametrize("style", ["trec_eval", "ir_measures"])
def test_a_printed_name_parses_back_to_the_same_metric(style: str) -> None:
    """Every name --names prints is itself accepted and means the same metric."""
    from monitor.metrics.spec import MEASURES, Cutoff

    for measure, rule in MEASURES.items():
        name = measure if rule is Cutoff.NONE else f"{measure}@7"
        assert name == str(parse_metric(display_name(name, style)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("P(rel=2)@5", "ask for precision@5 with --relevance-level 2"),
        ("AP(rel=2)", "ask for map with --relevance-level 2"),
        ("P(judged_only=True)@4", "ask for precision@4 with --judged-only"),
        ("nDCG@4(judged_only)", "ask for ndcg@4 with --judged-only"),
    ],
)
def test_a_parameter_that_is_an_option_here_says_which_option(name: str, hint: str) -> None:
    """ir_measures' rel= and judged_only parameters point to the option that does it."""
    with pytest.raises(MetricError) as caught:
        parse_metric(name)
    assert hint in str(caught.value)

"""Other tools' measure names: trec_eval's, ir_measures' and ranx's, read and printed.

A name written as trec_eval (``P_5``, ``map_cut_10``, ``recip_rank``), ir_measures
(``P@5``, ``AP@10``, ``nDCG@10``, ``Judged@10``) or ranx (``hits@5``, ``r-precision``,
``precision`` without a cutoff) spells it resolves to the canonical name (``precision@5``,
``map@10``, ``mrr``, ...); :func:`monitor.metrics.spec.parse_metric` asks this module when
a name is not canonical, so every place that names a metric accepts them. The tables are also
read backwards to print a metric under another tool's name (``--names``).

Each table maps a pattern, ``{k}`` standing for a cutoff, to a canonical pattern. A name is
matched exactly first, then ignoring case (``ap@10``, ``ndcg_cut_10``). Where two tools give
one spelling different meanings, the exact spelling decides.

ir_measures' ``RBP`` and ranx's ``rbp.8`` are refused with a message saying why
(:func:`option_hint`): on graded qrels they mean other measures than this project's rbp,
which gains grade / the query's highest grade. ranx gains each document its grade (a
grade of 3 gains 3); ir_measures is binary with ``rel=`` (a grade of ``rel`` or more gains
1) and, without it, leaves the gain to its trectools provider. On binary qrels all of them agree,
and the message names the canonical measure with the same persistence.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Literal, TypeAlias, get_args

#: The name styles a metric can be printed in.
NameStyle: TypeAlias = Literal["canonical", "trec_eval", "ir_measures"]
NAME_STYLES: tuple[str, ...] = get_args(NameStyle)

#: trec_eval's measure names (as its output prints them) -> canonical names.
TREC_EVAL: Mapping[str, str] = {
    "P_{k}": "precision@{k}",
    "recall_{k}": "recall@{k}",
    "map": "map",
    "map_cut_{k}": "map@{k}",
    "ndcg": "ndcg",
    "ndcg_cut_{k}": "ndcg@{k}",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "success_{k}": "hit_rate@{k}",
    "bpref": "bpref",
    "infAP": "infap",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "set_P": "set_precision",
    "set_recall": "set_recall",
    "set_F": "set_f1",
    "rbp": "rbp",
    # trec_eval's -m spelling of a parameter: P.5, ndcg_cut.10
    "P.{k}": "precision@{k}",
    "recall.{k}": "recall@{k}",
    "map_cut.{k}": "map@{k}",
    "ndcg_cut.{k}": "ndcg@{k}",
    "success.{k}": "hit_rate@{k}",
}

#: ir_measures' names -> canonical names.
IR_MEASURES: Mapping[str, str] = {
    "P@{k}": "precision@{k}",
    "R@{k}": "recall@{k}",
    "AP": "map",
    "AP@{k}": "map@{k}",
    "RR": "mrr",
    "RR@{k}": "mrr@{k}",
    "nDCG": "ndcg",
    "nDCG@{k}": "ndcg@{k}",
    "nDCG(dcg='exp-log2')": "ndcg_burges",
    "nDCG(dcg='exp-log2')@{k}": "ndcg_burges@{k}",
    "Success@{k}": "hit_rate@{k}",
    "Rprec": "r_precision",
    "Bpref": "bpref",
    "infAP": "infap",
    "Judged@{k}": "judged@{k}",
    "ERR@{k}": "err@{k}",
    "ERR": "err",
    "NumRet": "num_ret",
    "NumRel": "num_rel",
    "NumRelRet": "num_rel_ret",
    "NumRelRet@{k}": "num_rel_ret@{k}",
    "SetP": "set_precision",
    "SetR": "set_recall",
    "SetF": "set_f1",
}

#: ranx's names that are not already canonical -> canonical names.
RANX: Mapping[str, str] = {
    "r-precision": "r_precision",
    "hits@{k}": "num_rel_ret@{k}",
    "hits": "num_rel_ret",
    "precision": "set_precision",
    "recall": "set_recall",
    "f1": "set_f1",
}

_TABLES: Mapping[str, Mapping[str, str]] = {
    "trec_eval": TREC_EVAL,
    "ir_measures": IR_MEASURES,
    "ranx": RANX,
}
_K = r"(?P<k>[1-9]\d*)"


def canonical_name(name: str) -> str | None:
    """Return the canonical name another tool's ``name`` stands for, or None if none does."""
    text = name.strip().replace('"', "'")
    if _rbp_hint(text.replace(" ", "")) is not None:
        return None  # not "rbp" ignoring case: option_hint says why
    for flags in (0, re.IGNORECASE):
        for pattern, canonical in _patterns():
            match = pattern.fullmatch(text) if not flags else pattern_ci(pattern).fullmatch(text)
            if match is not None:
                k = match.groupdict().get("k")
                return canonical.replace("{k}", k) if k is not None else canonical
    return None


#: The canonical rbp of each persistence another tool's RBP may name.
_RBP_BY_P: Mapping[float, str] = {
    0.5: "rbp_50",
    0.8: "rbp_80",
    0.9: "rbp",
    0.95: "rbp_95",
    0.99: "rbp_99",
}
_IR_MEASURES_RBP = re.compile(r"RBP(?:\((?P<params>[^)]*)\))?(?:@(?P<k>[1-9]\d*))?")
_RANX_RBP = re.compile(r"rbp\.(?P<p>\d+)(?:@(?P<k>[1-9]\d*))?", re.IGNORECASE)


def option_hint(name: str) -> str | None:
    """Return why another tool's name is not read here and what to ask for instead: a
    measure parameter that is an option here (``P(rel=2)@5``), or an RBP that means another
    measure on graded qrels (ir_measures' ``RBP``, ranx's ``rbp.8``)."""
    text = name.replace(" ", "")
    rbp = _rbp_hint(text)
    if rbp is not None:
        return rbp
    rel = re.search(r"\(rel=(\d+)\)", text)
    if rel is not None:
        bare = canonical_name(text.replace(rel.group(0), "")) or "the measure"
        return (
            f"a relevance level is an option, not part of a name: ask for {bare} with "
            f"--relevance-level {rel.group(1)} (scoring: {{relevance_level: {rel.group(1)}}})"
        )
    judged = re.search(r"\(judged_only(=True)?\)", text)
    if judged is not None:
        bare = canonical_name(text.replace(judged.group(0), "")) or "the measure"
        return (
            f"judged-only is an option, not part of a name: ask for {bare} with "
            "--judged-only (scoring: {judged_only: true})"
        )
    return None


def _rbp_hint(text: str) -> str | None:
    """Return why ir_measures' or ranx's RBP is refused, naming the canonical rbp to ask
    for (the same measure on binary qrels); None if ``text`` is neither."""
    ranx, ir = _RANX_RBP.fullmatch(text), _IR_MEASURES_RBP.fullmatch(text)
    if ranx is not None:
        p, k = float(f"0.{ranx.group('p')}"), ranx.group("k")
        tool = f"ranx's {text} gains each document its grade (a grade of 3 gains 3)"
    elif ir is not None:
        params = dict(
            part.partition("=")[::2] for part in (ir.group("params") or "").split(",") if part
        )
        try:
            p, k = float(params.get("p", "0.8")), ir.group("k")
        except ValueError:
            return None
        if "rel" in params:
            tool = f"ir_measures' {text} is binary (a grade of {params['rel']} or more gains 1)"
        else:
            tool = f"ir_measures' {text} leaves graded gains to its trectools provider"
    else:
        return None
    tool += (
        ", where rbp here gains grade / the query's highest grade (and ignores "
        "--relevance-level): they agree on binary qrels only"
    )
    p_name = _RBP_BY_P.get(p)
    if p_name is None:
        return f"{tool}; no rbp here has persistence {p:g} (0.5, 0.8, 0.9, 0.95 and 0.99 do)"
    return f"{tool}; on binary qrels ask for {p_name}{'@' + k if k else ''}"


def display_name(name: str, style: NameStyle) -> str:
    """Return a canonical metric name as ``style`` spells it (the canonical one if it has none)."""
    if style == "canonical":
        return name
    if style not in _TABLES:
        raise ValueError(f"unknown name style {style!r}")
    measure, _, k = name.partition("@")
    for foreign, canonical in _TABLES[style].items():
        if "." in foreign and style == "trec_eval":
            continue  # the -m spelling is read, never printed
        c_measure, _, c_k = canonical.partition("@")
        if c_measure == measure and bool(c_k) == bool(k):
            return foreign.replace("{k}", k)
    return name


def suggest(name: str, canonical: Iterable[str]) -> str | None:
    """Return the known name closest to ``name``: a canonical one first, else another tool's."""
    text = name.strip()
    measure, _, k = text.partition("@")
    at_k = f"@{k}" if k else ""
    close = difflib.get_close_matches(measure.lower(), list(canonical), n=1, cutoff=0.6)
    if close:
        return close[0] + at_k
    cut = re.fullmatch(r"(?P<stem>.+?)(?P<sep>[_.@])(?P<k>[1-9]\d*)", text)
    stem, k = (cut.group("stem"), cut.group("k")) if cut else (text, k)
    foreign: dict[str, str] = {}
    for table in _TABLES.values():
        for pattern in table:
            foreign.setdefault(re.split(r"[_.@]\{k\}", pattern)[0].lower(), pattern)
    close = difflib.get_close_matches(stem.lower(), list(foreign), n=1, cutoff=0.6)
    if not close:
        return None
    pattern = foreign[close[0]]
    return pattern.replace("{k}", k or "10") if "{k}" in pattern else pattern


def alias_pattern() -> str:
    """Return one regular expression (JSON Schema's dialect) matching every alias exactly."""
    special = set(".()[]{}*+?^$|\\")
    out = []
    for table in _TABLES.values():
        for foreign in table:
            escaped = "".join("\\" + c if c in special else c for c in foreign.replace("{k}", "\0"))
            out.append(escaped.replace("\0", "[1-9][0-9]*"))
    return "|".join(out)


@cache
def _patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    for table in _TABLES.values():
        for foreign, canonical in table.items():
            regex = re.escape(foreign).replace(r"\{k\}", _K)
            out.append((re.compile(regex), canonical))
    return tuple(out)


@cache
def pattern_ci(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """Return ``pattern`` ignoring case."""
    return re.compile(pattern.pattern, re.IGNORECASE)

"""A draft eval set of synthetic questions: each generated question checked, kept or rejected.

:func:`generate_draft` asks a generator (:mod:`monitor.evalset.generate`) for ``per_doc``
questions about each passage drawn, and checks each question in turn; the first check it
fails is its reason for being rejected (:data:`REASONS`):

- ``empty``: no word; ``too_long``: over :data:`MAX_QUESTION_CHARS` characters.
- ``leakage``: the hygiene's own near leak (:func:`monitor.evalset.hygiene.leak_overlap`): at
  least :data:`~monitor.evalset.hygiene.LEAK_OVERLAP` of the question's word 3-grams are in
  its passage, so a search would find it by copying, not by understanding.
- ``duplicate``: the same words as a question kept before (or one of the set it goes
  ``into``), or a Jaccard similarity of their word sets of at least
  :data:`~monitor.evalset.hygiene.NEAR_DUPLICATE`, as ``evalset check`` finds them.
- ``judge``: with a judge check (:func:`monitor.judgments.generators.judge_check`), a grade
  below the relevance level for (question, passage), or an answer the judge's parser refused.

A passage whose generator answer is refused is recorded as ``malformed_answer`` (no
question), one whose call failed as ``call_failed``. A kept question has its passage as its
one relevant document, at grade 1 (or the top grade of the set it goes ``into``), and the
metadata ``{"synthetic": true, "draft": true, "generator": ID, "source_doc": PASSAGE_ID}``,
so a segment by ``synthetic`` tells it apart in reports.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from monitor.evalset.corpus import Corpus, Passage
from monitor.evalset.generate import Generator, GeneratorAnswerError, GeneratorError, passage_seed
from monitor.evalset.hygiene import LEAK_OVERLAP, NEAR_DUPLICATE, jaccard, leak_overlap, words
from monitor.evalset.model import EvalSet
from monitor.records import Query
from monitor.terminal import counted

#: Returns why a (question, passage text) pair is rejected, or None to keep it: a judge as
#: :func:`monitor.judgments.generators.judge_check` wraps one.
QuestionCheck = Callable[[str, str], str | None]

#: A question longer than this (characters) is rejected: no user types a paragraph.
MAX_QUESTION_CHARS: Final = 300

#: Why a question (or a passage's answer) is rejected, in the order the checks run.
REASONS: Final = (
    "malformed_answer",
    "call_failed",
    "empty",
    "too_long",
    "leakage",
    "duplicate",
    "judge",
)


@dataclass(frozen=True, slots=True)
class Rejected:
    """A question not kept (``question`` None for a passage whose answer was refused)."""

    source_doc: str
    question: str | None
    reason: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """Return the row of the rejected file."""
        return {
            "source_doc": self.source_doc,
            "question": self.question,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Draft:
    """What :func:`generate_draft` made: the draft set (the ``into`` set's queries first),
    the rejections, how many questions were generated from how many passages, and, when
    the generator's call cap stopped it, which cap (``stopped``) and the passages left."""

    evalset: EvalSet
    rejected: tuple[Rejected, ...]
    generated: int
    passages: int
    kept: int
    grade: int
    stopped: str | None = None
    left: int = 0

    def reasons(self) -> dict[str, int]:
        """Return how many rejections each reason has, in :data:`REASONS` order."""
        found = Counter(r.reason for r in self.rejected)
        return {reason: found[reason] for reason in REASONS if found[reason]}

    def __str__(self) -> str:
        questions = sum(1 for r in self.rejected if r.question is not None)
        lines = [
            f"generated {counted(self.generated, 'question')} from "
            f"{counted(self.passages, 'passage')}: {self.kept} kept, {questions} rejected"
        ]
        if self.rejected:
            shown = ", ".join(f"{reason} {count}" for reason, count in self.reasons().items())
            lines.append(f"rejected: {shown}")
        if self.stopped is not None:
            lines.append(f"stopped at {self.stopped}: {counted(self.left, 'passage')} left")
        return "\n".join(lines)


def draw_passages(corpus: Corpus, max_docs: int | None, seed: int) -> list[Passage]:
    """Return the passages to ask about: all, or ``max_docs`` drawn with ``seed`` (in corpus
    order either way)."""
    passages = list(corpus)
    if max_docs is None or max_docs >= len(passages):
        return passages
    chosen = set(random.Random(seed).sample(range(len(passages)), max_docs))
    return [passage for at, passage in enumerate(passages) if at in chosen]


class _Seen:
    """The questions kept so far (and the ``into`` set's), for the duplicate check."""

    def __init__(self, queries: Sequence[Query]) -> None:
        self.exact: dict[tuple[str, ...], str] = {}
        self.bags: list[tuple[str, frozenset[str]]] = []
        for query in queries:
            self.add(query.id, query.text)

    def add(self, query_id: str, text: str) -> None:
        tokens = tuple(words(text))
        self.exact.setdefault(tokens, query_id)
        self.bags.append((query_id, frozenset(tokens)))

    def repeated(self, text: str) -> str | None:
        """Return why ``text`` repeats a question seen, or None."""
        tokens = tuple(words(text))
        if tokens in self.exact:
            return f"repeats query {self.exact[tokens]}"
        bag = frozenset(tokens)
        for other, other_bag in self.bags:
            similarity = jaccard(bag, other_bag)
            if similarity >= NEAR_DUPLICATE:
                return f"nearly repeats query {other} (word Jaccard {similarity:.2f})"
        return None


def _ask(generator: Generator, passage: Passage, n: int, seed: int) -> list[str] | Rejected:
    """Return the generator's questions about ``passage``, or why it gave none."""
    try:
        found = generator(passage.text, n, passage_seed(seed, passage.id))
    except GeneratorAnswerError as error:
        return Rejected(passage.id, None, "malformed_answer", error.reason)
    except GeneratorError as error:
        return Rejected(passage.id, None, "call_failed", error.reason)
    except Exception as error:  # a plug-in's own failure: recorded, the other passages go on
        return Rejected(passage.id, None, "call_failed", f"raised {type(error).__name__}: {error}")
    if (
        isinstance(found, str)
        or not isinstance(found, Sequence)
        or not all(isinstance(q, str) for q in found)
    ):
        detail = f"expected a list of question strings, found {type(found).__name__}"
        return Rejected(passage.id, None, "malformed_answer", detail)
    if len(found) > n:
        detail = f"expected at most {n} questions, found {len(found)}"
        return Rejected(passage.id, None, "malformed_answer", detail)
    return list(found)


def _reason(
    question: str, passage: Passage, seen: _Seen, judge: QuestionCheck | None
) -> tuple[str, str] | None:
    """Return the first check ``question`` fails (reason, detail), or None."""
    if not words(question):
        return "empty", "no word"
    if len(question) > MAX_QUESTION_CHARS:
        return "too_long", f"{len(question)} characters, above {MAX_QUESTION_CHARS}"
    overlap = leak_overlap(question, passage.text)
    if overlap >= LEAK_OVERLAP:
        return "leakage", f"{overlap:.0%} of its word 3-grams are in passage {passage.id}"
    repeated = seen.repeated(question)
    if repeated is not None:
        return "duplicate", repeated
    judged = judge(question, passage.text) if judge is not None else None
    return None if judged is None else ("judge", judged)


def generate_draft(
    corpus: Corpus,
    generator: Generator,
    generator_id: str,
    *,
    per_doc: int,
    max_docs: int | None = None,
    seed: int = 0,
    into: EvalSet | None = None,
    judge: QuestionCheck | None = None,
    spent: Callable[[], str | None] | None = None,
    name: str = "draft",
) -> Draft:
    """Ask ``generator`` for ``per_doc`` questions about each passage drawn; return the draft.

    ``seed`` draws ``max_docs`` passages and seeds the generator per passage. ``into``'s
    queries open the draft, and a question repeating one of them is rejected. ``spent``
    (the generator's call cap) stops cleanly before a passage when it names a cap reached.
    """
    existing = into.queries if into is not None else ()
    grade = max([1, *(g for q in existing for g in q.judgments.values())])
    draft = EvalSet(name, existing)
    seen = _Seen(existing)
    rejected: list[Rejected] = []
    drawn = draw_passages(corpus, max_docs, seed)
    generated = kept = asked = 0
    stopped = None
    for passage in drawn:
        stopped = spent() if spent is not None else None
        if stopped is not None:
            break
        asked += 1
        found = _ask(generator, passage, per_doc, seed)
        if isinstance(found, Rejected):
            rejected.append(found)
            continue
        number = 0
        for raw in found:
            question = raw.strip()
            generated += 1
            why = _reason(question, passage, seen, judge)
            if why is not None:
                rejected.append(Rejected(passage.id, question, *why))
                continue
            number += 1
            query_id = f"syn-{passage.id}-{number}"
            while query_id in draft:
                query_id += "x"
            draft.add(
                query_id,
                question,
                relevant={passage.id: grade},
                metadata={
                    "synthetic": True,
                    "draft": True,
                    "generator": generator_id,
                    "source_doc": passage.id,
                },
            )
            seen.add(query_id, question)
            kept += 1
    if asked and all(r.reason == "call_failed" for r in rejected) and len(rejected) == asked:
        raise GeneratorError(generator_id, f"every call failed; the first: {rejected[0].detail}")
    return Draft(
        evalset=draft,
        rejected=tuple(rejected),
        generated=generated,
        passages=asked,
        kept=kept,
        grade=grade,
        stopped=stopped,
        left=len(drawn) - asked,
    )

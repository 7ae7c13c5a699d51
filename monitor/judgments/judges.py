"""Judges: plug-ins that grade unjudged (query, document text) pairs after a run.

A judge is a callable ``(query, doc_text) -> grade`` (an integer). Built-in kinds: ``python``
(``target: package.module:callable``, optionally a ``factory``, loaded as a python search
is), ``http`` (an LLM server speaking the chat-completions JSON shape), and
``entrypoint:<name>`` from the entry-point group ``retrieval_monitor.judges``. Grades form a
layer whose source is :func:`judge_source`: the judge id, its model and a hash of its
prompt, so a changed model or prompt never reuses old grades.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

import httpx

from monitor.config.model import JudgeConfig, thaw
from monitor.errors import MonitorError, SearchSetupError, UsageError
from monitor.evalset import EvalSet
from monitor.judgments.layers import _now, add_layer
from monitor.judgments.todo import DocText, todo_items
from monitor.store import JudgmentLayer, RunRecord, Store

#: Grades one (query, document text) pair.
Judge = Callable[[str, str], int]

#: The entry-point group of third-party judges.
JUDGE_GROUP = "retrieval_monitor.judges"

#: The prompt of the ``http`` judge when the suite names none; ``{query}`` and ``{document}``
#: are filled in.
DEFAULT_PROMPT = (
    "Grade how well the document answers the query: 0 not relevant, 1 relevant, "
    "2 highly relevant. Answer with the grade only.\n\nQuery: {query}\n\nDocument: {document}"
)


class JudgeError(MonitorError):
    """A judge could not be built, or its answer held no grade.

    ``option`` is the option at fault (``url``, ``headers``) when building refused one.
    """

    def __init__(self, judge: str, reason: str, *, option: str | None = None) -> None:
        self.judge = judge
        self.reason = reason
        self.option = option
        super().__init__(f"judge {judge!r}: {reason}")


def judge_source(config: JudgeConfig) -> str:
    """Return the layer source of a judge: ``judge:<id>:<model>:<prompt sha256[:12]>``."""
    digest = hashlib.sha256(config.prompt.encode("utf-8")).hexdigest()[:12]
    return f"judge:{config.judge_id}:{config.model}:{digest}"


_GRADE = re.compile(r"-?\d+")


def parse_grade(answer: str, judge: str = "http") -> int:
    """Return the first integer in ``answer``; raise JudgeError quoting it when there is none."""
    found = _GRADE.search(answer)
    if found is None:
        shown = answer if len(answer) <= 80 else answer[:77] + "..."
        raise JudgeError(judge, f"expected an integer grade in the answer, found {shown!r}")
    return int(found.group())


class HttpJudge:
    """Ask an LLM server's ``/chat/completions`` endpoint for a grade.

    The request is ``{"model", "messages": [{"role": "user", "content": prompt}],
    "temperature": 0}``; the grade is the first integer of ``choices[0].message.content``.
    """

    def __init__(
        self,
        url: str,
        *,
        model: str,
        prompt: str = "",
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        name: str = "http",
    ) -> None:
        self._url = url
        self._model = model
        self._prompt = prompt or DEFAULT_PROMPT
        self._name = name
        self._client = httpx.Client(
            timeout=timeout, headers=dict(headers or {}), transport=transport
        )

    def __call__(self, query: str, doc_text: str) -> int:
        """Return the grade the server gives the pair."""
        content = self._prompt.replace("{query}", query).replace("{document}", doc_text)
        body = {
            "model": self._model,
            "messages": [{"role": "user", "content": content}],
            "temperature": 0,
        }
        try:
            response = self._client.post(self._url, json=body)
        except httpx.HTTPError as error:
            raise JudgeError(self._name, f"{type(error).__name__}: {error}") from None
        if response.status_code != 200:
            raise JudgeError(self._name, f"expected status 200, found {response.status_code}")
        try:
            answer = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeError(
                self._name,
                "expected a chat-completions answer with choices[0].message.content, found "
                f"{response.text[:80]!r}",
            ) from None
        if not isinstance(answer, str):
            raise JudgeError(self._name, f"expected text content, found {answer!r}")
        return parse_grade(answer, self._name)

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()


def build_judge(config: JudgeConfig, *, transport: httpx.BaseTransport | None = None) -> Judge:
    """Return the judge ``config`` names; raise JudgeError when it cannot be built."""
    options = {key: thaw(value) for key, value in config.options.items()}
    if config.kind == "http":
        url = options.get("url")
        if not isinstance(url, str) or not url:
            raise JudgeError(
                config.judge_id, "expected a 'url' (the chat-completions endpoint)", option="url"
            )
        timeout = options.get("timeout_seconds", 30.0)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise JudgeError(
                config.judge_id,
                f"expected timeout_seconds > 0, found {timeout!r}",
                option="timeout_seconds",
            )
        headers = options.get("headers", {})
        if not isinstance(headers, dict) or not all(
            isinstance(value, str) for value in headers.values()
        ):
            raise JudgeError(
                config.judge_id, "expected 'headers' to map names to strings", option="headers"
            )
        return HttpJudge(
            url,
            model=config.model,
            prompt=config.prompt,
            timeout=float(timeout),
            headers=headers,
            transport=transport,
            name=config.judge_id,
        )
    if config.kind == "python":
        from monitor.search import build_search

        # A relative ``path`` is the config file's folder's, as for a python search.
        paths = options.get("path")
        if isinstance(paths, str):
            options["path"] = str(config.base_dir / paths)
        elif isinstance(paths, list):
            options["path"] = [str(config.base_dir / item) for item in paths]
        try:
            built = build_search("python", options)
        except SearchSetupError as error:
            raise JudgeError(config.judge_id, str(error), option=error.option) from None
        return cast(Judge, built)
    if config.kind.startswith("entrypoint:"):
        from importlib.metadata import entry_points

        name = config.kind.removeprefix("entrypoint:")
        found = {point.name: point for point in entry_points(group=JUDGE_GROUP)}
        if name not in found:
            known = ", ".join(sorted(found)) or "none installed"
            raise JudgeError(config.judge_id, f"no entry point {name!r} in {JUDGE_GROUP} ({known})")
        try:
            factory: Any = found[name].load()
            return cast(Judge, factory(**options))
        except Exception as error:  # a plug-in's own refusal, reported as the judge's
            raise JudgeError(config.judge_id, f"raised {type(error).__name__}: {error}") from None
    raise UsageError(f"unknown judge kind {config.kind!r}; known: python, http, entrypoint:NAME")


def judge_holes(
    store: Store,
    suite: str,
    evalset: EvalSet,
    frozen: EvalSet,
    runs: Sequence[RunRecord],
    judge: Judge,
    config: JudgeConfig,
    *,
    depth: int,
    doc_text: DocText,
    clock: Callable[[], datetime] = _now,
) -> JudgmentLayer | None:
    """Grade up to ``config.max_per_run`` unjudged pairs of ``runs``, best ranks first.

    ``evalset`` holds the judgments in force with this judge's earlier grades, so a pair is
    never asked twice. Pairs with no known document text are left for people. Return the
    layer stored, or None when there was nothing to grade.
    """
    grades: dict[str, dict[str, int]] = {}
    asked = 0
    for item in todo_items(evalset, runs, depth=depth, doc_text=doc_text):
        if asked >= config.max_per_run:
            break
        if not item.doc_text:
            continue
        try:
            grade = judge(item.query, item.doc_text)
        except JudgeError:
            raise
        except Exception as error:  # a plug-in's own failure: the run it follows stands
            raise JudgeError(config.judge_id, f"raised {type(error).__name__}: {error}") from None
        if isinstance(grade, bool) or not isinstance(grade, int):
            raise JudgeError(config.judge_id, f"expected an integer grade, found {grade!r}")
        grades.setdefault(item.query_id, {})[item.doc_id] = grade
        asked += 1
    if not grades:
        return None
    return add_layer(
        store,
        suite,
        grades,
        frozen=frozen,
        source=judge_source(config),
        who=f"{config.judge_id} {config.model}".strip(),
        kind="judge",
        clock=clock,
    )

"""Judges: plug-ins that grade unjudged (query, document text) pairs after a run.

A judge is a callable ``(query, doc_text) -> grade`` (an integer). Built-in kinds: ``python``
(``target: package.module:callable``, optionally a ``factory``, loaded as a python search
is), ``http`` (an LLM server speaking the chat-completions JSON shape), and
``entrypoint:<name>`` from the entry-point group ``retrieval_monitor.judges``. Grades form a
layer whose source is :func:`judge_source`: the judge id, its model and a hash of its
prompt, so a changed model or prompt never reuses old grades.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import httpx

from monitor.config.fields import MAX_SECONDS
from monitor.config.model import JudgeConfig, thaw
from monitor.errors import SearchSetupError, UsageError
from monitor.evalset import EvalSet
from monitor.judgments.answers import DEFAULT_LIST_PROMPT as DEFAULT_LIST_PROMPT
from monitor.judgments.answers import DEFAULT_MAX_GRADE as DEFAULT_MAX_GRADE
from monitor.judgments.answers import DEFAULT_PROMPT as DEFAULT_PROMPT
from monitor.judgments.answers import JudgeAnswerError as JudgeAnswerError
from monitor.judgments.answers import JudgeError as JudgeError
from monitor.judgments.answers import fill_list_prompt as fill_list_prompt
from monitor.judgments.answers import fill_prompt as fill_prompt
from monitor.judgments.answers import parse_grade as parse_grade
from monitor.judgments.answers import parse_grades as parse_grades
from monitor.judgments.answers import quote
from monitor.judgments.layers import _now, add_layer
from monitor.judgments.todo import DocText, TodoItem, todo_items
from monitor.store import JudgmentLayer, RunRecord, Store
from monitor.tls import verifying

#: Grades one (query, document text) pair.
Judge = Callable[[str, str], int]

#: The entry-point group of third-party judges.
JUDGE_GROUP = "retrieval_monitor.judges"

#: The most bytes of one judge answer read; a longer body is refused, not held in memory.
MAX_ANSWER_BYTES = 1 << 20


#: How many documents of a query one listwise call grades when ``list_size`` is not given.
DEFAULT_LIST_SIZE = 20


def is_listwise(config: JudgeConfig) -> bool:
    """Return whether the judge grades a query's documents in one call (``listwise: true``)."""
    return config.options.get("listwise") is True


def judge_prompt(config: JudgeConfig) -> str:
    """Return the prompt ``config``'s judge sends: its own or the default (the listwise one
    for a listwise judge), scale filled in."""
    default = DEFAULT_LIST_PROMPT if is_listwise(config) else DEFAULT_PROMPT
    return (config.prompt or default).replace("{max_grade}", str(config.max_grade))


def judge_source(config: JudgeConfig) -> str:
    """Return the layer source of a judge: ``judge:<id>:<model>:<prompt sha256[:12]>``.

    The hash is of the prompt text actually sent (:func:`judge_prompt`), so a change to the
    default prompt or to the scale never reuses old grades.
    """
    digest = hashlib.sha256(judge_prompt(config).encode("utf-8")).hexdigest()[:12]
    return f"judge:{config.judge_id}:{config.model}:{digest}"


class HttpJudge:
    """Ask an LLM server's ``/chat/completions`` endpoint for a grade.

    The request is ``{"model", "messages": [{"role": "user", "content": prompt}],
    "temperature": 0}``; the grade is read from ``choices[0].message.content`` by
    :func:`parse_grade` (``strict``: the JSON object only, as the built-in prompt asks; the
    default when no ``prompt`` is given). ``timeout`` bounds the whole call (connecting,
    sending and reading every byte of the answer), not each read: a server that drips its
    answer is cut off.

    :meth:`grade_list` grades several documents of a query in one call (``listwise``, whose
    prompt is then the listwise one), read by :func:`parse_grades`. ``calls`` and
    ``tokens`` (the ``usage.total_tokens`` the endpoint reports, when it does) count what
    the judge spent; :meth:`spent` says when ``max_calls`` or ``max_tokens`` is reached.
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
        max_grade: int = DEFAULT_MAX_GRADE,
        strict: bool | None = None,
        listwise: bool = False,
        list_size: int = DEFAULT_LIST_SIZE,
        max_calls: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self._url = url
        self._strict = not prompt if strict is None else strict
        self._model = model
        default = DEFAULT_LIST_PROMPT if listwise else DEFAULT_PROMPT
        self._prompt = (prompt or default).replace("{max_grade}", str(max_grade))
        self.listwise = listwise
        self.list_size = list_size
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.calls = self.tokens = 0
        self._name = name
        self._timeout = timeout
        self._max_grade = max_grade
        # No connection is kept between calls, so each call's own socket is the one its
        # deadline closes (see _post).
        self._client = httpx.Client(
            timeout=timeout,
            headers=dict(headers or {}),
            verify=verifying(),
            transport=transport,
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    def __call__(self, query: str, doc_text: str) -> int:
        """Return the grade the server gives the pair."""
        answer = self._ask(fill_prompt(self._prompt, query, doc_text))
        return parse_grade(answer, self._name, self._max_grade, strict=self._strict)

    def grade_list(self, query: str, docs: Sequence[tuple[str, str]]) -> dict[str, int]:
        """Return doc id -> grade for ``docs`` (id, text) of ``query``, asked in one call."""
        answer = self._ask(fill_list_prompt(self._prompt, query, docs))
        return parse_grades(answer, [doc for doc, _ in docs], self._name, self._max_grade)

    def spent(self) -> str | None:
        """Return which cost cap the calls so far reached (``max_calls``, ``max_tokens``), or
        None while both leave room for another call."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"{self.calls} calls (max_calls {self.max_calls})"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"{self.tokens} tokens (max_tokens {self.max_tokens})"
        return None

    def _ask(self, content: str) -> str:
        """Send one user message; return the answer's text, counting the call and tokens."""
        body = {
            "model": self._model,
            "messages": [{"role": "user", "content": content}],
            "temperature": 0,
        }
        self.calls += 1
        status, data = self._post(body)
        if status != 200:
            raise JudgeError(self._name, f"expected status 200, found {status}")
        try:
            reply = json.loads(data)
            answer = reply["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            raise JudgeError(
                self._name,
                "expected a chat-completions answer with choices[0].message.content, found "
                f"{data[:80].decode('utf-8', 'replace')!r}",
            ) from None
        usage = reply.get("usage") if isinstance(reply, dict) else None
        total = usage.get("total_tokens") if isinstance(usage, dict) else None
        if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
            self.tokens += total
        if not isinstance(answer, str):
            raise JudgeError(self._name, f"expected text content, found {answer!r}")
        return answer

    def _post(self, body: dict[str, Any]) -> tuple[int, bytes]:
        """Send ``body``; return the status and the answer's bytes, all within the timeout.

        A timer shuts the call's socket down when the deadline passes, which ends a read
        blocked on a server that sends a byte now and then; the chunks read are checked
        against the same deadline (for transports without a socket).
        """
        deadline = time.monotonic() + self._timeout
        sockets: list[socket.socket] = []

        def trace(event: str, info: dict[str, Any]) -> None:
            if event == "connection.connect_tcp.complete":
                found = info.get("return_value")
                sock = found.get_extra_info("socket") if found is not None else None
                if isinstance(sock, socket.socket):
                    sockets.append(sock)

        def cut() -> None:
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self._timeout, cut)
        timer.daemon = True
        timer.start()
        chunks: list[bytes] = []
        size = status = 0
        try:
            with self._client.stream(
                "POST", self._url, json=body, extensions={"trace": trace}
            ) as response:
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if time.monotonic() > deadline:
                        break
                    if size > MAX_ANSWER_BYTES:
                        raise JudgeError(
                            self._name, f"expected an answer of at most {MAX_ANSWER_BYTES} bytes"
                        )
                    chunks.append(chunk)
                status = response.status_code
        except httpx.HTTPError as error:
            if time.monotonic() < deadline:
                raise JudgeError(self._name, f"{type(error).__name__}: {error}") from None
        finally:
            timer.cancel()
        if time.monotonic() >= deadline:
            raise JudgeError(
                self._name, f"expected a whole answer within {self._timeout:g} s (timeout_seconds)"
            )
        return status, b"".join(chunks)

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
        if (
            not isinstance(timeout, int | float)
            or isinstance(timeout, bool)
            or not 0 < timeout <= MAX_SECONDS
        ):
            raise JudgeError(
                config.judge_id,
                f"expected timeout_seconds above 0 of at most {MAX_SECONDS:g}, found {timeout!r}",
                option="timeout_seconds",
            )
        headers = options.get("headers", {})
        if not isinstance(headers, dict) or not all(
            isinstance(value, str) for value in headers.values()
        ):
            raise JudgeError(
                config.judge_id, "expected 'headers' to map names to strings", option="headers"
            )
        listwise = options.get("listwise", False)
        if not isinstance(listwise, bool):
            raise JudgeError(
                config.judge_id, f"expected listwise true or false, found {listwise!r}",
                option="listwise",
            )  # fmt: skip
        caps = {
            name: _count_option(config.judge_id, options, name, most)
            for name, most in (("list_size", 100), ("max_calls", 10**6), ("max_tokens", 10**12))
        }
        return HttpJudge(
            url,
            model=config.model,
            prompt=judge_prompt(config),
            timeout=float(timeout),
            headers=headers,
            transport=transport,
            name=config.judge_id,
            max_grade=config.max_grade,
            # The built-in prompt asks for the JSON object alone; a prompt of the suite's own
            # may ask for a bare grade or a last line ``grade: N``.
            strict=not config.prompt,
            listwise=listwise,
            list_size=caps["list_size"] or DEFAULT_LIST_SIZE,
            max_calls=caps["max_calls"],
            max_tokens=caps["max_tokens"],
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


def _count_option(judge: str, options: Mapping[str, object], name: str, most: int) -> int | None:
    """Return the whole-number option ``name`` (1 to ``most``), None when not given."""
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise JudgeError(
            judge, f"expected {name} a whole number from 1 to {most}, found {value!r}", option=name
        )
    return value


@dataclass(frozen=True, slots=True)
class JudgeRound:
    """What one round of a judge after a run gave: the layer stored (None when no grade was),
    the answers refused (never stored), the first refusal's reason, and, when a cost cap
    stopped the round, which one (``stopped``) and how many pairs it left unjudged."""

    layer: JudgmentLayer | None
    refused: int = 0
    first_refusal: str | None = None
    stopped: str | None = None
    left: int = 0


def _batches(items: Sequence[TodoItem], judge: Judge) -> list[list[TodoItem]]:
    """Return the calls to make: one pair each, or for a listwise judge up to its
    ``list_size`` pairs of one query, best ranks first."""
    if getattr(judge, "listwise", False) is not True:
        return [[item] for item in items]
    size = int(getattr(judge, "list_size", DEFAULT_LIST_SIZE))
    by_query: dict[str, list[TodoItem]] = {}
    for item in items:
        by_query.setdefault(item.query_id, []).append(item)
    return [group[i : i + size] for group in by_query.values() for i in range(0, len(group), size)]


def _grades(judge: Judge, batch: Sequence[TodoItem], config: JudgeConfig) -> dict[str, int]:
    """Ask ``judge`` for the grades of ``batch`` (one query's pairs); check each is one of
    the scale (JudgeAnswerError if not)."""
    if len(batch) > 1 or getattr(judge, "listwise", False) is True:
        if not isinstance(judge, HttpJudge):
            raise JudgeError(config.judge_id, "expected a listwise judge (kind: http)")
        return judge.grade_list(batch[0].query, [(i.doc_id, i.doc_text or "") for i in batch])
    item = batch[0]
    grade = judge(item.query, item.doc_text or "")
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise JudgeAnswerError(
            config.judge_id, f"expected an integer grade, found {quote(str(grade))}"
        )
    if not 0 <= grade <= config.max_grade:
        raise JudgeAnswerError(
            config.judge_id, f"expected a grade from 0 to {config.max_grade}, found {grade}"
        )
    return {item.doc_id: grade}


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
) -> JudgeRound:
    """Grade up to ``config.max_per_run`` unjudged pairs of ``runs``, best ranks first.

    ``evalset`` holds the judgments in force with this judge's earlier grades, so a pair is
    never asked twice. Pairs with no known document text are left for people. A listwise
    judge grades up to its ``list_size`` pairs of a query per call. An answer that is not
    the grades asked for (each of the scale 0 to ``config.max_grade``) is refused and
    counted, never stored; a judge that cannot be reached or raises stops the round
    (JudgeError). A judge whose ``spent()`` names a cost cap reached stops cleanly before
    its next call: the grades so far are stored, the rest left unjudged and counted.
    """
    items = todo_items(evalset, runs, depth=depth, doc_text=doc_text)
    batches = _batches([item for item in items if item.doc_text][: config.max_per_run], judge)
    spent = getattr(judge, "spent", None)
    grades: dict[str, dict[str, int]] = {}
    refused = left = 0
    first = stopped = None
    for position, batch in enumerate(batches):
        stopped = spent() if callable(spent) else None
        if stopped is not None:
            left = sum(len(rest) for rest in batches[position:])
            break
        try:
            found = _grades(judge, batch, config)
        except JudgeAnswerError as error:
            refused += 1
            first = first or error.reason
            continue
        except JudgeError:
            raise
        except Exception as error:  # a plug-in's own failure: the run it follows stands
            raise JudgeError(config.judge_id, f"raised {type(error).__name__}: {error}") from None
        grades.setdefault(batch[0].query_id, {}).update(found)
    if not grades:
        return JudgeRound(None, refused, first, stopped, left)
    layer = add_layer(
        store,
        suite,
        grades,
        frozen=frozen,
        source=judge_source(config),
        who=f"{config.judge_id} {config.model}".strip(),
        kind="judge",
        clock=clock,
    )
    return JudgeRound(layer, refused, first, stopped, left)

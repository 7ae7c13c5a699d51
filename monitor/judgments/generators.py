"""The built-in question generators of ``evalset generate``, and the judge as a question check.

- :class:`HttpGenerator` asks an OpenAI-compatible chat-completions endpoint through the http
  judge's own call (the same whole-call timeout and answer byte cap), retrying a call that
  fails and stopping at ``max_calls``; it sends :data:`~monitor.evalset.generate.
  DEFAULT_GENERATE_PROMPT` and reads the answer with
  :func:`~monitor.evalset.generate.parse_questions`.
- :func:`python_generator` loads a ``package.module:function`` taking ``(passage, n, seed)``,
  as a ``python`` search is loaded.
- :func:`judge_check` turns a judge into the check :func:`~monitor.evalset.synthetic.
  generate_draft` takes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from monitor.errors import GeneratorError, SearchSetupError
from monitor.evalset.generate import (
    DEFAULT_GENERATE_PROMPT,
    Generator,
    fill_generate_prompt,
    parse_questions,
    prompt_digest,
)
from monitor.evalset.synthetic import QuestionCheck
from monitor.judgments.answers import JudgeAnswerError, JudgeError
from monitor.judgments.judges import HttpJudge, Judge
from monitor.search.python import load_target


class HttpGenerator:
    """Ask a chat-completions endpoint for questions about a passage.

    The request is the http judge's (``model``, one user message, ``temperature`` 0; the
    ``seed`` is not sent, as not every endpoint takes one); ``api_key`` is sent as a bearer
    token and never shown. A call that fails (no
    answer, a status other than 200, not a chat completion, the ``timeout``) is tried
    ``retries`` more times before it raises GeneratorError; an answer of the wrong shape
    raises GeneratorAnswerError at once. :meth:`spent` says when ``max_calls`` is reached.
    """

    def __init__(
        self,
        url: str,
        *,
        model: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        prompt: str = DEFAULT_GENERATE_PROMPT,
        timeout: float = 30.0,
        retries: int = 1,
        max_calls: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        sent = dict(headers or {})
        if api_key:
            sent["Authorization"] = f"Bearer {api_key}"
        self.model = model
        self.prompt = prompt
        self.retries = retries
        self.max_calls = max_calls
        self.id = f"http:{model}:{prompt_digest(prompt)}"
        # The judge's chat call: one transport, timeout and byte cap for both.
        self._chat = HttpJudge(
            url, model=model, timeout=timeout, headers=sent, transport=transport, name=self.id
        )

    @property
    def calls(self) -> int:
        """Return the calls made so far, retries included."""
        return self._chat.calls

    def __call__(self, passage: str, n: int, seed: int) -> list[str]:
        """Return up to ``n`` questions the endpoint writes about ``passage``."""
        content = fill_generate_prompt(self.prompt, passage, n)
        failure = ""
        for _ in range(self.retries + 1):
            if self.spent() is not None:
                break
            try:
                answer = self._chat._ask(content)
            except JudgeError as error:
                failure = error.reason
                continue
            return parse_questions(answer, n, self.id)
        raise GeneratorError(self.id, failure or f"no call left (max_calls {self.max_calls})")

    def spent(self) -> str | None:
        """Return the cap reached (``max_calls``), or None while another call may be made."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"{self.calls} calls (max_calls {self.max_calls})"
        return None

    def close(self) -> None:
        """Close the HTTP client."""
        self._chat.close()


def python_generator(target: str, paths: Sequence[str | Path] = ()) -> tuple[Generator, str]:
    """Return the function ``package.module:function`` names and its id ``python:<target>``.

    ``paths`` go in front of ``sys.path`` first, so a module of a source tree imports from an
    installed script. Raise SearchSetupError (a usage error) when it cannot be loaded.
    """
    spec = f"python:{target}"
    for directory in reversed([str(Path(p).resolve()) for p in paths]):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    function = load_target(target, spec=spec)
    if not callable(function):
        raise SearchSetupError(spec, f"{type(function).__name__} object is not callable")
    return function, spec


def judge_check(judge: Judge, relevance_level: int = 1) -> QuestionCheck:
    """Return a check rejecting a question that ``judge`` grades below ``relevance_level``
    for its passage, or whose grade the judge's parser refused; a judge that cannot be
    reached raises GeneratorError (exit 3)."""

    def check(question: str, passage: str) -> str | None:
        try:
            grade = judge(question, passage)
        except JudgeAnswerError as error:
            return f"answer refused: {error.reason}"
        except JudgeError as error:
            raise GeneratorError(f"judge {error.judge}", error.reason) from None
        if isinstance(grade, bool) or not isinstance(grade, int):
            return f"expected an integer grade, found {grade!r}"
        if grade < relevance_level:
            return f"graded {grade}, below the relevance level {relevance_level}"
        return None

    return check

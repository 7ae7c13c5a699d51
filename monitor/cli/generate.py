"""``retrieval-monitor evalset generate``: a draft eval set of synthetic questions."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.errors import UsageError

if TYPE_CHECKING:
    from monitor.config.model import JudgeConfig
    from monitor.evalset.corpus import Corpus
    from monitor.evalset.generate import Generator
    from monitor.evalset.synthetic import QuestionCheck

#: The calls an http generator makes at most when ``--max-calls`` is not given.
DEFAULT_MAX_CALLS = 1000


def register_generate(actions: Any) -> None:
    """Add ``evalset generate`` to the ``evalset`` actions."""
    from monitor.cli.arguments import count, integer, output_file, seconds
    from monitor.cli.run import add_config_options

    parser = actions.add_parser(
        "generate",
        help="write a draft eval set of questions generated from a corpus's passages",
        description="Ask a generator (a chat-completions endpoint, or a python function) for "
        "questions about each passage; keep each one that passes the hygiene's leakage and "
        "duplicate checks (and the judge of --judge), with its passage as relevant, in a "
        "draft marked synthetic; write the rejected ones with their reason.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", type=Path, metavar="FILE", help="the passages (JSONL/CSV/TSV)")
    source.add_argument("--bundled", choices=("larkfield",), help="a bundled corpus")
    parser.add_argument(
        "--per-doc", type=integer(1, 50, "a count"), required=True, metavar="N", help="questions"
    )
    parser.add_argument(
        "--generator", choices=("http", "python"), required=True, help="who writes the questions"
    )
    parser.add_argument("--model", metavar="M", help="http: the model (default: the judge's)")
    parser.add_argument("--url", metavar="U", help="http: the chat-completions endpoint")
    parser.add_argument(
        "--api-key-env", metavar="VAR", help="http: the environment variable with the API key"
    )
    parser.add_argument(
        "--timeout", type=seconds(), default=30.0, metavar="S", help="http: per call (30)"
    )
    parser.add_argument(
        "--retries", type=integer(0, 10, "a count"), default=1, metavar="N", help="http: 1"
    )
    parser.add_argument(
        "--max-calls", type=count, default=DEFAULT_MAX_CALLS, metavar="N",
        help=f"http: stop after N calls ({DEFAULT_MAX_CALLS})",
    )  # fmt: skip
    parser.add_argument("--function", metavar="MOD:FN", help="python: (passage, n, seed) -> list")
    parser.add_argument(
        "--path", action="append", default=[], metavar="DIR", help="python: import from DIR"
    )
    parser.add_argument("--max-docs", type=count, metavar="K", help="draw K passages (--seed)")
    parser.add_argument("--seed", type=integer(what="a seed"), default=0, metavar="S", help="0")
    parser.add_argument("--into", type=Path, metavar="FILE", help="an eval set the draft extends")
    parser.add_argument(
        "--judge", metavar="SUITE", help="grade each question with this suite's judge"
    )
    add_config_options(parser)
    parser.add_argument(
        "--output", type=output_file, required=True, metavar="FILE", help="the draft eval set"
    )
    parser.add_argument(
        "--rejected", type=output_file, metavar="FILE",
        help="the rejected questions, JSONL (default: OUTPUT's stem + .rejected.jsonl)",
    )  # fmt: skip
    parser.set_defaults(handler=generate_command)


def generate_command(args: argparse.Namespace) -> int:
    """Write the draft and its rejected questions; print the counts; return 0."""
    from monitor.evalset import EvalSet
    from monitor.evalset.synthetic import generate_draft
    from monitor.io import logical_stem, write_text_atomic

    corpus = _corpus(args)
    judge, judge_config = _suite_judge(args)
    into = EvalSet.load(args.into) if args.into is not None else None
    generator, generator_id, spent, close = _generator(args, judge_config)
    try:
        draft = generate_draft(
            corpus,
            generator,
            generator_id,
            per_doc=args.per_doc,
            max_docs=args.max_docs,
            seed=args.seed,
            into=into,
            judge=judge,
            spent=spent,
            name=logical_stem(args.output),
        )
    finally:
        close()
    draft.evalset.save(args.output)
    rejected = args.rejected or args.output.with_name(f"{logical_stem(args.output)}.rejected.jsonl")
    rows = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in draft.rejected)
    write_text_atomic(rejected, rows)
    print(draft)
    print(
        f"draft: {args.output} ({len(draft.evalset)} queries; each new one judges its passage "
        f"grade {draft.grade}, metadata synthetic and draft: review before use)"
    )
    print(f"rejected: {rejected}")
    return 0


def _corpus(args: argparse.Namespace) -> Corpus:
    from monitor.evalset.bundled import data_path
    from monitor.evalset.corpus import Corpus

    if args.corpus is not None:
        return Corpus.load(args.corpus)
    return Corpus.load(data_path(args.bundled, "passages.jsonl"))


def _suite_judge(args: argparse.Namespace) -> tuple[QuestionCheck | None, JudgeConfig | None]:
    """Return the question check of the judge of the suite ``--judge`` names, and its config."""
    from monitor.cli.run import load
    from monitor.judgments.generators import judge_check
    from monitor.judgments.judges import JudgeError, build_judge

    if args.judge is None:
        if args.config is not None:
            raise UsageError("--config goes with --judge SUITE (the suite whose judge to use)")
        return None, None
    suite = load(args).suite(args.judge)
    if suite.judge is None:
        raise UsageError(f"suite {suite.name!r} has no judge to grade the questions with")
    try:
        judge = build_judge(suite.judge)
    except JudgeError as error:
        raise UsageError(str(error)) from None
    return judge_check(judge, suite.scoring.relevance_level), suite.judge


def _generator(
    args: argparse.Namespace, judge: JudgeConfig | None
) -> tuple[Generator, str, Callable[[], str | None] | None, Callable[[], None]]:
    """Return the generator the options name, its id, its call cap and its closer."""
    from monitor.config.model import thaw
    from monitor.judgments.generators import HttpGenerator, python_generator

    http_only = ("model", "url", "api_key_env")
    if args.generator == "python":
        given = [f"--{name.replace('_', '-')}" for name in http_only if getattr(args, name)]
        if given:
            raise UsageError(f"{given[0]} goes with --generator http")
        if not args.function:
            raise UsageError("--generator python needs --function MODULE:FUNCTION")
        function, spec = python_generator(args.function, args.path)
        return function, spec, None, lambda: None
    if args.function or args.path:
        raise UsageError("--function and --path go with --generator python")
    options = {k: thaw(v) for k, v in judge.options.items()} if judge is not None else {}
    from_judge = judge is not None and judge.kind == "http"
    url = args.url or (options.get("url") if from_judge else None)
    model = args.model or (judge.model if from_judge and judge is not None else None)
    if not isinstance(url, str) or not url or not model:
        raise UsageError(
            "--generator http needs --url and --model (or --judge SUITE with an http judge)"
        )
    headers = options.get("headers") if from_judge and args.url is None else None
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise UsageError(f"--api-key-env: the environment variable {args.api_key_env} is unset")
    generator = HttpGenerator(
        url,
        model=model,
        api_key=api_key,
        headers=headers if isinstance(headers, dict) else None,
        timeout=args.timeout,
        retries=args.retries,
        max_calls=args.max_calls,
    )
    return generator, generator.id, generator.spent, generator.close

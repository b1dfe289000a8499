"""Recall's process-wide word caches are one per model, not one per embedder object.

Keyed by ``id(embedder)`` they were never released: every facade (or test) that made its
own embedder added a cache of up to 50,000 words for the process's life, and a dead
embedder's id could be taken by another model's.
"""

from __future__ import annotations

from troth.embedding import HashingEmbedder
from troth.service import interaction
from troth.service.interaction import word_vectors


def test_embedders_of_one_model_share_one_cache_and_add_none() -> None:
    first = word_vectors(HashingEmbedder())
    before = len(interaction._SHARED)
    for _ in range(50):
        assert word_vectors(HashingEmbedder()) is first
    assert len(interaction._SHARED) == before


def test_another_model_has_its_own_cache() -> None:
    small = word_vectors(HashingEmbedder(dim=32, name="hashing-32"))
    assert small is not word_vectors(HashingEmbedder())
    assert small.matrix(["violin"]).shape == (1, 32)

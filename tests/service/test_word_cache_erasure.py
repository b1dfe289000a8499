"""Recall's word cache (service.interaction.WordVectors) keeps no erased memory's words.

The cache is keyed by the words of the memories late interaction re-ranks; an erased
memory's bytes must leave everything the product keeps, this process memory included.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.backends import fresh_store
from tests.conftest import vector_facade
from tests.service.test_restore_roundtrip import sealed
from troth.embedding import HashingEmbedder
from troth.service.interaction import WordVectors, word_vectors
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore

RARE = "quixotrelline"  # a word no other memory and no question holds


def recalled(mind: Memory) -> tuple[str, WordVectors]:
    """Store a memory holding the rare word among others, recall so that late interaction
    re-ranks it; its id and the process-wide cache that recall filled."""
    held = mind.remember(f"my grandmother's violin is called {RARE} and lives in the attic")
    for i in range(4):
        mind.remember(f"the violin lesson number {i} was on a rainy tuesday")
    assert mind.recall("violin attic grandmother")
    assert mind.embedder is not None
    cache = word_vectors(mind.embedder)
    assert RARE in cache
    return held.id, cache


@pytest.mark.parametrize(
    "erase",
    [
        lambda mind, memory_id: mind.forget(memory_id, reason="not mine to keep"),
        lambda mind, memory_id: mind.redact(memory_id, reason="erase it"),
    ],
    ids=["forget", "redact"],
)
def test_an_erased_memorys_rare_word_leaves_the_word_cache(
    tmp_path: Path, erase: Callable[[Memory, str], object]
) -> None:
    mind = vector_facade(SQLiteStore(tmp_path / "t.db"))
    held, cache = recalled(mind)
    erase(mind, held)
    assert RARE not in cache
    # Recall still works after, and never brings the erased word back.
    mind.recall("violin attic grandmother")
    assert RARE not in cache


def test_a_recall_pinned_before_an_erasure_keeps_none_of_its_words() -> None:
    # A recall that read its texts before an erasure committed serves its words but
    # does not keep them: they may be the erased text's.
    cache = WordVectors(HashingEmbedder())
    reading = cache.reading()
    cache.forget()
    rows = reading.matrix([RARE, "violin"])
    assert rows.shape == (2, HashingEmbedder().dim)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert len(cache) == 0
    cache.reading().matrix(["violin"])
    assert "violin" in cache


def test_a_restore_that_erases_a_text_empties_the_word_cache(tmp_path: Path) -> None:
    # A restore from a newer export erases what the older one held: its words go too.
    key = tmp_path / "signing.key"
    cache = word_vectors(HashingEmbedder())
    with fresh_store("sqlite", None) as store, sealed(store, key) as source:  # type: ignore[arg-type]
        secret = source.remember(f"the canary is {RARE}")
        source.export_to("hux", tmp_path / "old.json")
        source.redact(secret.id, reason="erasure request")
        source.export_to("hux", tmp_path / "new.json")
        with fresh_store("sqlite", None) as other, sealed(other, key) as target:  # type: ignore[arg-type]
            target.import_path(tmp_path / "old.json", mode="restore")
            cache.reading().matrix([RARE])  # a recall over the restored text
            assert RARE in cache
            epoch = other.erasure_epoch()
            target.import_path(tmp_path / "new.json", mode="restore")
            assert target.get(secret.id).redacted
            assert RARE not in cache
            # Other processes' caches see it too: the erasure epoch moved with the restore.
            assert other.erasure_epoch() == epoch + 1

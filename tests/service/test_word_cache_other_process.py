"""An erasure another process commits empties this process's word cache at its next recall.

Recall's word cache (``service.interaction.WordVectors``) holds memories' words. An erasure
committed here empties it at once (the ledger's listeners); one committed by another
process (a ``troth redact`` beside a running server, a second server on one PostgreSQL)
moves the store's erasure epoch in the same transaction, and the next recall here, which
reads the epoch before any text, finds a number its cache did not see and empties it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import troth
from tests.backends import reopen
from tests.conftest import vector_facade
from tests.service.test_word_cache_erasure import RARE, recalled
from troth.embedding import HashingEmbedder
from troth.service.interaction import WordVectors
from troth.storage.base import Store
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore

# What the other process runs: open the same database, erase one memory, exit.
_OTHER = """
import json, sys
from troth.config import load_policy
from troth.embedding import HashingEmbedder
from troth.service.memory import Memory
from troth.storage.postgres import PostgresStore
from troth.storage.sqlite import SQLiteStore
kind, where, memory_id, verb = json.loads(sys.argv[1])
store = SQLiteStore(where) if kind == "sqlite" else PostgresStore(where)
with Memory(store, policy=load_policy(None), principal="human:alice",
            embedder=HashingEmbedder()) as mind:
    if verb == "redact":
        mind.redact(memory_id, reason="erase it")
    else:
        mind.forget(memory_id, reason="not mine to keep")
"""


def in_another_process(store: Store, memory_id: str, verb: str) -> None:
    """Erase ``memory_id`` from a fresh interpreter on the same database."""
    if isinstance(store, PostgresStore):
        where = ["postgres", store.url]
    else:
        assert isinstance(store, SQLiteStore)
        where = ["sqlite", str(store.path)]
    source = str(Path(troth.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=source)
    argument = json.dumps([*where, memory_id, verb])
    subprocess.run([sys.executable, "-c", _OTHER, argument], check=True, env=env, timeout=300)


@pytest.mark.parametrize("verb", ["redact", "forget"])
def test_another_process_erasure_empties_the_cache_at_the_next_recall(
    any_store: Store, verb: str
) -> None:
    mind = vector_facade(any_store)
    held, cache = recalled(mind)
    before = any_store.erasure_epoch()
    in_another_process(any_store, held, verb)
    assert any_store.erasure_epoch() == before + 1
    mind.recall("violin lesson")
    assert RARE not in cache


def test_a_second_facade_on_the_same_database_empties_at_its_next_recall(
    any_store: Store,
) -> None:
    # Two processes' worth in one: separate store objects on one file or database. The
    # erasing facade's own listeners empty every cache of this process at once, so the
    # watcher's cache is filled again (as a process that did not hear would still hold
    # it) before its next recall finds the moved epoch.
    watcher = vector_facade(any_store)
    held, cache = recalled(watcher)
    other = reopen(any_store)
    try:
        eraser = vector_facade(other)
        eraser.redact(held, reason="erase it")
        cache.reading(watcher.store, any_store.erasure_epoch() - 1).matrix([RARE])
        assert RARE in cache
        watcher.recall("violin lesson")
        assert RARE not in cache
    finally:
        other.close()


def test_the_epoch_moves_with_erasures_only_and_not_with_a_rolled_back_one(
    any_store: Store,
) -> None:
    mind = vector_facade(any_store)
    start = any_store.erasure_epoch()
    kept = mind.remember("the violin lives in the attic")
    gone = mind.remember("the canary is called pip")
    mind.hide(kept.id)
    assert any_store.erasure_epoch() == start
    mind.forget(gone.id, reason="not mine to keep")
    assert any_store.erasure_epoch() == start + 1
    mind.redact(kept.id, reason="erase it")  # one transaction: one move, however many rows
    assert any_store.erasure_epoch() == start + 2

    class AbandonedError(Exception):
        pass

    def abandoned(owner: str) -> None:
        with any_store.write(owner) as tx:
            tx.note_erasure()
            raise AbandonedError

    third = mind.remember("the parrot is called kiwi")
    with pytest.raises(AbandonedError):
        abandoned(third.owner)
    assert any_store.erasure_epoch() == start + 2


class _Source:
    """Stands for a store (a cache keeps what it saw of each weakly)."""


def test_a_cache_empties_when_a_store_shows_another_epoch() -> None:
    cache = WordVectors(HashingEmbedder())
    store_a, store_b = _Source(), _Source()
    cache.reading(store_a, 3).matrix(["violin"])
    cache.reading(store_a, 3).matrix([RARE])
    assert RARE in cache
    assert "violin" in cache
    cache.reading(store_b, 7)  # another store, first seen: what it erased may be here
    assert len(cache) == 0
    cache.reading(store_b, 7).matrix([RARE])
    cache.reading(store_a, 3)
    assert RARE in cache  # both as last seen
    pinned = cache.reading(store_a, 3)
    cache.reading(store_a, 4)  # erased elsewhere meanwhile
    pinned.matrix(["attic"])  # a recall pinned before keeps nothing it computes
    assert len(cache) == 0

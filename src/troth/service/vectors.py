"""The facade's embeddings: which model a store's vectors come from, embedding, reindexing.

A store records the model (name and dimension) of the vectors it holds. :class:`Vectors`
records this installation's model on first use, embeds only while the two agree, and
``reindex`` switches a store to this model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from troth.core.errors import ConflictError, InvalidInputError
from troth.service.recall import memory_text
from troth.storage.base import MemoryFilter, Store

if TYPE_CHECKING:
    from troth.embedding import Embedder

Progress = Callable[[int, int], None]


class Vectors:
    """One store's vectors as made by one embedder (or none: vectors are then off)."""

    def __init__(self, store: Store, embedder: Embedder | None) -> None:
        self.store = store
        self.embedder = embedder
        self._ok: bool | None = None
        self._lock = threading.Lock()

    def ready(self) -> bool:
        """Whether writes embed and recall searches vectors: the store's model is ours.

        The first use records this embedder's name and dimension in the store; a store
        that holds another model's vectors gets none from this one until ``reindex``.
        """
        if self.embedder is None:
            return False
        if self._ok is None:
            # One thread records the model: a served store's first requests arrive together,
            # and each recording recreates the vector index (and so drops what the others wrote).
            with self._lock:
                if self._ok is None:
                    model = self.store.vector_model()
                    if model is None:
                        self.store.set_vector_model(self.embedder.name, self.embedder.dim)
                        model = (self.embedder.name, self.embedder.dim)
                    self._ok = model == (self.embedder.name, self.embedder.dim)
        return self._ok

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Vectors for texts in one batch (empty when vectors are off)."""
        if not texts or not self.ready() or self.embedder is None:
            return []
        return list(self.embedder.embed(list(texts)))

    def for_recall(self) -> Embedder | None:
        """The embedder recall may search with; refuses a store of another model's vectors."""
        if self.embedder is None:
            return None
        if not self.ready():
            model = self.store.vector_model()
            raise ConflictError(
                f"the stored vectors were made by {model[0] if model else 'another model'}"
                f" ({model[1] if model else '?'} dimensions), not by {self.embedder.name};"
                " run `troth reindex`",
                model=model[0] if model else None,
            )
        return self.embedder

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """The store's bulk load, with this model recorded first (its index is the one deferred)."""
        self.ready()
        with self.store.bulk_load():
            yield

    def refresh(self, owner: str) -> None:
        """Embed an owner's projection written without vectors (restore, rebuild, re-anchor)."""
        if self.ready():
            self.reindex([owner])

    def reindex(
        self,
        owners: Sequence[str],
        *,
        batch: int = 1000,
        progress: Progress | None = None,
    ) -> dict[str, int]:
        """Recompute the vector of every retrievable memory of these owners.

        A store whose vectors come from another model is switched to this one, and then
        every owner's are recomputed (the switch drops them all). Returns memories per
        owner; ``progress(done, total)`` is called after each batch.
        """
        if self.embedder is None:
            raise InvalidInputError("this installation has no embedder; nothing to reindex")
        model = (self.embedder.name, self.embedder.dim)
        chosen = list(owners)
        if self.store.vector_model() != model:
            self.store.set_vector_model(*model)
            chosen = self.store.owners()  # every owner's vectors were dropped
        self._ok = True
        live = MemoryFilter(retrievable_only=True)
        total = sum(self.store.count(whose, live) for whose in chosen)
        done, out = 0, {}
        for whose in chosen:
            memories = [m for m in self.store.memories(whose, live) if m.content]
            for start in range(0, len(memories), batch):
                chunk = memories[start : start + batch]
                vectors = self.embed([memory_text(m) for m in chunk])
                with self.store.write(whose) as tx:
                    for memory, vector in zip(chunk, vectors, strict=True):
                        tx.put(memory, vector)
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
            out[whose] = len(memories)
        return out

    def embed_copied(
        self, owners: Sequence[str], *, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Embed these owners' memories in one bulk load, after a migration into this store.

        A store whose vectors come from another model keeps them: re-embedding would
        switch the model and drop every other owner's. Returns ``{"embedded": n}``, with a
        ``note`` when nothing could be done.
        """
        embedder = self.embedder
        if embedder is None or not owners:
            return {"embedded": 0}
        recorded = self.store.vector_model()
        if recorded is not None and tuple(recorded) != (embedder.name, embedder.dim):
            return {
                "embedded": 0,
                "note": f"the target's vectors are made by {recorded[0]}; the copied memories"
                f" were not embedded with {embedder.name}: run `troth reindex` against it",
            }
        done = 0

        def advance(count: int, total: int) -> None:
            if progress is not None:
                progress(done + count, total)

        with self.bulk_load():
            for owner in owners:
                done += self.reindex([owner], progress=advance)[owner]
        return {"embedded": done}

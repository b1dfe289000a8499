"""Reading memories: one by id, a listing, the raw ledger, justification and recall."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from troth.core.errors import ConflictError, InvalidInputError
from troth.core.events import Record
from troth.core.policy import Justification
from troth.core.records import MemoryRecord
from troth.service import validation as check
from troth.service.base import MemoryBase, parse_time
from troth.service.recall import Query, RecallHit
from troth.service.recall import recall as run_recall
from troth.storage.base import MemoryFilter


class MemoryReads(MemoryBase):
    """The use cases that read and never write."""

    def get(self, memory_id: str, *, owner: str | None = None) -> MemoryRecord:
        """One memory, whatever its status."""
        return self._stored(self._owner_of(memory_id, owner), memory_id)

    def memories(
        self, owner: str | None = None, query: MemoryFilter | None = None
    ) -> list[MemoryRecord]:
        """An owner's memories, newest first."""
        whose = self._owner(owner, self.principal)
        return self.store.memories(whose, query or MemoryFilter(limit=100))

    def log(self, owner: str | None = None, *, start: int = 0) -> Iterator[Record]:
        """An owner's ledger rows in order."""
        return self.store.records(self._owner(owner, self.principal), start)

    def may_justify(
        self, action: str, memory_ids: Sequence[str], *, owner: str | None = None
    ) -> Justification:
        """Whether these memories may justify a sensitive action (the weakest channel decides)."""
        whose = self._owner(owner, self.principal)
        found = [self._stored(whose, check.identifier(m, "memory id")) for m in memory_ids]
        return self.policy.justify(action, found)

    def recall(self, query: Query | str, **options: Any) -> list[RecallHit]:
        """The owner's active, retrievable memories that best answer a query."""
        if isinstance(query, str):
            query = Query(text=query, **options)
        text = check.text(query.text, "query", max_chars=2000)
        check.whole_number(query.limit, 1, 1000, "limit")
        whose = self._owner(query.owner, self.principal)
        if query.valid_on is not None:
            check.date_or_time(query.valid_on, "valid_on")
        check.utc_time(query.as_of, "as_of")
        if not query.indexes or set(query.indexes) - {"lexical", "vector"}:
            raise InvalidInputError("indexes must name lexical, vector or both", field="indexes")
        if query.min_relevance is not None and not 0.0 <= query.min_relevance <= 1.0:
            raise InvalidInputError(
                "min_relevance is a share of the query's words, from 0 to 1 (or None for no"
                f" relevance floor); {query.min_relevance!r} was given",
                field="min_relevance",
            )
        now = (
            self._clock()
            if query.now is None
            else parse_time(str(check.utc_time(query.now, "now")))
        )
        embedder = None
        if self.embedder is not None:
            if not self._vectors_ready():
                model = self.store.vector_model()
                raise ConflictError(
                    f"the stored vectors were made by {model[0] if model else 'another model'}"
                    f" ({model[1] if model else '?'} dimensions), not by {self.embedder.name};"
                    " run `troth reindex`",
                    model=model[0] if model else None,
                )
            embedder = self.embedder
        with self._recall_gate:
            return run_recall(self.store, embedder, whose, query, text=text, now=now)

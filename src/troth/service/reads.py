"""Reading memories: one by id, a listing, the raw ledger, justification and recall."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

from troth.core.errors import InvalidInputError
from troth.core.events import Record
from troth.core.limits import (
    MAX_ACTION_CHARS,
    MAX_GATE_MEMORIES,
    MAX_QUERY_CHARS,
    MAX_RECALL_LIMIT,
)
from troth.core.policy import Justification, Policy
from troth.core.records import MemoryRecord
from troth.service import validation as check
from troth.service.base import Clock, Parties, parse_time
from troth.service.recall import Query, RecallHit
from troth.service.recall import recall as run_recall
from troth.service.vectors import Vectors
from troth.storage.base import MemoryFilter


class Reads:
    """The use cases that read and never write."""

    def __init__(
        self,
        parties: Parties,
        policy: Policy,
        vectors: Vectors,
        clock: Clock,
        *,
        max_concurrent_recalls: int | None = None,
    ) -> None:
        self.parties = parties
        self.store = parties.store
        self.policy = policy
        self.vectors = vectors
        self.clock = clock
        # Ranking is pure Python: a second recall in another thread only takes turns at the
        # GIL, and while recalls take turns they starve the writer holding a chain. One at a
        # time served 32 clients x 500 at 76 requests/s, two at a time at 48 (docs/api.md).
        limit = 1 if max_concurrent_recalls is None else max_concurrent_recalls
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidInputError("max_concurrent_recalls must be a whole number of at least 1")
        self.max_concurrent_recalls = limit
        self._recall_gate = threading.BoundedSemaphore(limit)

    def get(self, memory_id: str, *, owner: str | None = None) -> MemoryRecord:
        """One memory, whatever its status."""
        return self.parties.stored(self.parties.owner_of(memory_id, owner), memory_id)

    def memories(
        self, owner: str | None = None, query: MemoryFilter | None = None
    ) -> list[MemoryRecord]:
        """An owner's memories, newest first."""
        whose = self.parties.owner(owner, self.parties.principal)
        return self.store.memories(whose, query or MemoryFilter(limit=100))

    def log(self, owner: str | None = None, *, start: int = 0) -> Iterator[Record]:
        """An owner's ledger rows in order."""
        return self.store.records(self.parties.owner(owner, self.parties.principal), start)

    def may_justify(
        self, action: str, memory_ids: Sequence[str], *, owner: str | None = None
    ) -> Justification:
        """Whether these memories may justify a sensitive action (the weakest source decides).

        The one gate of every surface (the CLI's ``troth gate``, ``POST /api/gate``, the MCP
        tool ``trust.gate``): the same question gets the same :class:`Justification`.
        """
        check.text(action, "action", max_chars=MAX_ACTION_CHARS)
        # None named is an answer (nothing justifies it), too many a question refused.
        if isinstance(memory_ids, str) or len(memory_ids) > MAX_GATE_MEMORIES:
            raise InvalidInputError(
                f"name up to {MAX_GATE_MEMORIES} memory ids (a list) whose text would justify"
                f" {action!r}",
                field="memory_ids",
            )
        whose = self.parties.owner(owner, self.parties.principal)
        found = [self.parties.stored(whose, check.identifier(m, "memory id")) for m in memory_ids]
        return self.policy.justify(action, found)

    def recall(self, query: Query | str, **options: Any) -> list[RecallHit]:
        """The owner's active, retrievable memories that best answer a query."""
        if isinstance(query, str):
            query = Query(text=query, **options)
        text = check.text(query.text, "query", max_chars=MAX_QUERY_CHARS)
        check.whole_number(query.limit, 1, MAX_RECALL_LIMIT, "limit")
        whose = self.parties.owner(query.owner, self.parties.principal)
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
            self.clock() if query.now is None else parse_time(str(check.utc_time(query.now, "now")))
        )
        embedder = self.vectors.for_recall()
        with self._recall_gate:
            return run_recall(
                self.store,
                embedder,
                whose,
                query,
                text=text,
                now=now,
                speakers_from=self.policy.most_trusted(),
            )

"""The store as the use cases read it: every memory it hands out is held against the chain.

:class:`CheckedStore` wraps a backend and passes every call through; the reads that hand
out memories (``get``, ``get_many``, ``memories``, ``projection``) or ledger rows
(``records``) first ask :class:`~troth.service.readcheck.ReadCheck`, so recall, get, list,
brief, export and every adapter over them (HTTP, MCP, the CLI) fail closed without each
checking for itself. Integrity (verify, rebuild) and migration read the raw store: they
report on, or repair, what this refuses.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager

from troth.core.errors import IntegrityError
from troth.core.events import Record
from troth.core.query import CandidateLimits, Term
from troth.core.records import MemoryRecord
from troth.service.readcheck import ReadCheck
from troth.storage.base import (
    Candidates,
    Hit,
    MemoryFilter,
    RecallRow,
    Store,
    Tip,
    Transaction,
)

__all__ = ["CheckedStore"]


class CheckedStore:
    """A :class:`Store` whose memory and ledger reads are checked against the chain."""

    def __init__(self, store: Store, check: ReadCheck) -> None:
        self.raw = store
        self.check = check

    # -- checked reads --------------------------------------------------------------------

    @contextmanager
    def _decoded(self, owner: str) -> Iterator[None]:
        """A row the backend itself cannot decode consistently is a finding like any other:
        it refuses the owner's reads and writes too."""
        try:
            yield
        except IntegrityError as exc:
            self.check.refuse(owner, exc.message.split("; run `troth")[0])

    def get(self, owner: str, memory_id: str) -> MemoryRecord | None:
        """One memory, held against the chain."""
        with self._decoded(owner):
            found = self.raw.get(owner, memory_id)
        # Even a miss is answered only from a chain that holds (a swapped chain, say).
        self.check.served(owner, () if found is None else (found,))
        return found

    def get_many(self, owner: str, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """Memories by id, each held against the chain."""
        with self._decoded(owner):
            found = self.raw.get_many(owner, memory_ids)
        self.check.served(owner, found.values())
        return found

    def memories(self, owner: str, query: MemoryFilter) -> list[MemoryRecord]:
        """A listing, each memory held against the chain."""
        with self._decoded(owner):
            found = self.raw.memories(owner, query)
        self.check.served(owner, found)
        return found

    def projection(self, owner: str) -> dict[str, MemoryRecord]:
        """The whole projection, each memory held against the chain."""
        with self._decoded(owner):
            found = self.raw.projection(owner)
        self.check.served(owner, found.values())
        return found

    def records(self, owner: str, start: int = 0) -> Iterator[Record]:
        """Ledger rows, once the chain verifies to its head and its witnessed checkpoint."""
        self.check.rows(owner)
        return self.raw.records(owner, start)

    # -- passed through -------------------------------------------------------------------

    def write(self, owner: str, expect: Tip | None = None) -> AbstractContextManager[Transaction]:
        """As the backend (the write path checks what it reads itself)."""
        return self.raw.write(owner, expect)

    def owners(self) -> list[str]:
        """As the backend."""
        return self.raw.owners()

    def tip(self, owner: str) -> Tip:
        """As the backend."""
        return self.raw.tip(owner)

    def locate(self, memory_id: str) -> str | None:
        """As the backend (what is then read of that owner is checked)."""
        return self.raw.locate(memory_id)

    def count(self, owner: str, query: MemoryFilter) -> int:
        """As the backend."""
        return self.raw.count(owner, query)

    def counts(self, owner: str, queries: Sequence[MemoryFilter]) -> list[int]:
        """As the backend."""
        return self.raw.counts(owner, queries)

    def snapshot(self) -> AbstractContextManager[None]:
        """As the backend."""
        return self.raw.snapshot()

    def replace_projection(self, owner: str, memories: Mapping[str, MemoryRecord]) -> None:
        """As the backend."""
        self.raw.replace_projection(owner, memories)

    def lexical(
        self, owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Candidates, once the owner's chain holds (what recall serves is then read with
        ``get_many`` and checked): a recall that finds nothing is refused on a bad chain too."""
        self.check.chain(owner)
        return self.raw.lexical(owner, terms, limit, query)

    def vector(
        self, owner: str, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Candidates, once the owner's chain holds (as :meth:`lexical`)."""
        self.check.chain(owner)
        return self.raw.vector(owner, embedding, limit, query)

    def candidates(
        self,
        owner: str,
        terms: Sequence[Term],
        embedding: Sequence[float] | None,
        limits: CandidateLimits,
        query: MemoryFilter,
    ) -> Candidates:
        """Both searches, once the owner's chain holds (as :meth:`lexical`; checked once)."""
        self.check.chain(owner)
        return self.raw.candidates(owner, terms, embedding, limits, query)

    def vector_model(self) -> tuple[str, int] | None:
        """As the backend."""
        return self.raw.vector_model()

    def erasure_epoch(self) -> int:
        """As the backend."""
        return self.raw.erasure_epoch()

    def set_vector_model(self, name: str, dimension: int) -> None:
        """As the backend."""
        self.raw.set_vector_model(name, dimension)

    def vector_ids(self, owner: str) -> set[str]:
        """As the backend."""
        return self.raw.vector_ids(owner)

    def recall_rows(self, owner: str, ids: Sequence[str]) -> dict[str, RecallRow]:
        """As the backend (ranking fields only: what recall serves is read with ``get_many``)."""
        return self.raw.recall_rows(owner, ids)

    def bulk_load(self) -> AbstractContextManager[None]:
        """As the backend."""
        return self.raw.bulk_load()

    def compact(self) -> None:
        """As the backend."""
        self.raw.compact()

    @property
    def erasure_wait(self) -> float:
        """As the backend."""
        return self.raw.erasure_wait

    @erasure_wait.setter
    def erasure_wait(self, seconds: float) -> None:
        self.raw.erasure_wait = seconds

    def pending_erasures(self) -> int:
        """As the backend."""
        return self.raw.pending_erasures()

    def finish_erasures(self, wait: float = 0.0) -> bool:
        """As the backend."""
        return self.raw.finish_erasures(wait)

    def close(self) -> None:
        """As the backend."""
        self.raw.close()

"""The ``Store`` protocol every backend implements, and the value objects it speaks.

A store keeps, per owner, the ledger (personaxis entries with their metadata), the
projection (each memory's current state), and the indexes derived from it (full text,
vectors). It holds no domain rules: the service decides what to append, the core decides
what the projection is. Writes happen inside :meth:`Store.write`, which serialises appends
to one owner's chain and rolls everything back if the block raises.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

from troth.core.access import TokenRecord
from troth.core.chain import Entry
from troth.core.checkpoints import StoredReply as StoredReply
from troth.core.errors import StaleTipError
from troth.core.events import Record
from troth.core.query import CandidateLimits, Term
from troth.core.records import MemoryRecord


@dataclass(frozen=True, slots=True)
class Tip:
    """An owner's chain length and head hash (``""`` for an empty chain)."""

    length: int
    head: str


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Which memories a listing or a search considers; None means any."""

    statuses: tuple[str, ...] | None = None
    retrievable_only: bool = False
    kinds: tuple[str, ...] | None = None
    scope: str | None = None
    partition: str | None = None
    tags: tuple[str, ...] = ()
    include_sensitive: bool = True
    limit: int | None = None
    offset: int = 0


class RecallRow(NamedTuple):
    """What ranking and the recall filters read of one memory, without decoding all of it.

    ``text`` is the indexed text (title and content); ``speaker`` is ``extra["x_speaker"]``.
    A named tuple (immutable, as a frozen dataclass): recall builds one per candidate,
    ~1,000 a query, and a frozen dataclass of these 20 fields costs ~3x more to build.
    """

    memory_id: str
    text: str
    created_at: str
    updated_at: str
    seq: int
    recorded_at: str | None = None
    session: str | None = None
    speaker: str | None = None
    importance: float | None = None
    confidence: float | None = None
    lifecycle: str = "active"
    valid_from: str | None = None
    valid_until: str | None = None
    expires: str | None = None
    ttl_policy: str = "never"
    ttl_expires_at: str | None = None
    ttl_decay_days: int | None = None
    actor: str | None = None  # who wrote its entry
    channel: str | None = None
    writer: str | None = None  # who wrote its text at the origin: the per-writer cap


class Hit(NamedTuple):
    """One candidate from an index: the memory's id, its rank (1-based) and raw score.

    ``seq`` is the memory's position (``MemoryRecord.seq``) when the index returns it:
    recall's first stage pairs a strong candidate with its neighbours by it before any
    ranking row is read (docs/retrieval.md, "First stage"). A named tuple rather than a
    frozen dataclass: a recall builds ~1,000 of them, and a tuple is made in half the
    time (no ``object.__setattr__`` per field; docs/benchmarks.md, "Issue 19, 2026-12-03").
    """

    memory_id: str
    rank: int
    score: float
    seq: int | None = None


def stale_tip(owner: str) -> StaleTipError:
    """The error a store raises when a write's expected tip is not the chain's."""
    return StaleTipError(
        f"the ledger of {owner} moved since it was last read; nothing was written", owner=owner
    )


class Transaction(Protocol):
    """What the service may do while it holds an owner's chain."""

    @property
    def owner(self) -> str:
        """The owner whose chain is held."""
        ...

    def tip(self) -> Tip:
        """The chain's length and head, as of inside the lock."""
        ...

    def records(self, start: int = 0) -> Iterator[Record]:
        """Stored rows from ``start`` (0-based sequence number) on."""
        ...

    def records_naming(self, memory_id: str, start: int = 0) -> Iterator[Record]:
        """Stored rows from ``start`` on whose metadata names ``memory_id`` (its events, the
        edits that supersede it, exports and checkpoints that list it), found by the
        database without decoding every row; a superset the caller narrows."""
        ...

    def get(self, memory_id: str) -> MemoryRecord | None:
        """The projected memory, if it belongs to this owner."""
        ...

    def append(self, entry: Entry, meta: str | None, texts: Mapping[str, str]) -> int:
        """Add a row at the end of the chain; returns its sequence number."""
        ...

    def put(
        self, memory: MemoryRecord, embedding: Sequence[float] | None = None, *, new: bool = False
    ) -> None:
        """Insert or replace a memory in the projection and its indexes.

        ``embedding`` replaces the memory's vector. Without one the stored vector is kept
        while the memory stays active and retrievable; otherwise it is deleted (a memory
        that leaves retrieval, or whose text is erased, leaves no vector behind).
        ``new``: the caller minted this id for a memory it creates and did not look it up;
        a stored memory with the same id fails the write instead of being replaced.
        """
        ...

    def erase(self, seq: int, entry: Entry, texts: Mapping[str, str]) -> None:
        """The sanctioned rewrite of a row: its redacted entry and erased texts."""
        ...

    def note_erasure(self) -> None:
        """Move the store's erasure epoch in this transaction (once, however often asked):
        it erases a text or forgets a memory. It commits or rolls back with the erasure,
        and every process's caches of memories' words see it (:meth:`Store.erasure_epoch`)."""
        ...

    def rewrite(self, seq: int, entry: Entry) -> None:
        """Replace a row's entry (re-anchoring a legacy chain); moves the head with the last row."""
        ...

    def find_reply(self, message_id: str) -> StoredReply | None:
        """The stored first answer to a UAIX ``message_id`` sent for this owner, if any."""
        ...

    def save_reply(self, reply: StoredReply) -> None:
        """Keep the first answer to a UAIX message (``reply.owner`` is this owner)."""
        ...

    def drop_replies(self, containing: bytes) -> int:
        """Erase this owner's stored replies whose bytes contain ``containing``; how many.

        Part of erasure: an answer that quoted an erased text must not outlive it.
        """
        ...


class Candidates(NamedTuple):
    """A recall's candidates from each index, best first (empty when it was not asked)."""

    lexical: list[Hit]
    vector: list[Hit]


def searched_in_turn(
    store: Store,
    owner: str,
    terms: Sequence[Term],
    embedding: Sequence[float] | None,
    limits: CandidateLimits,
    query: MemoryFilter,
) -> Candidates:
    """``Store.candidates`` as one search after the other, for a store with nothing to gain
    from running them together."""
    return Candidates(
        store.lexical(owner, terms, limits.lexical, query) if terms else [],
        [] if embedding is None else store.vector(owner, embedding, limits.vector, query),
    )


class Store(Protocol):
    """A troth storage backend."""

    def write(self, owner: str, expect: Tip | None = None) -> AbstractContextManager[Transaction]:
        """Hold ``owner``'s chain for appending; commits on success, rolls back on error.

        ``expect`` is the tip the caller last saw. The transaction then starts from it
        without asking the database; if the chain is elsewhere when a read or the commit
        needs it, :class:`StaleTipError` is raised and nothing is written. A write that
        reads nothing and makes one entry creating one memory (a ``remember``) can so
        commit in a single round trip on a server backend.
        """
        ...

    def owners(self) -> list[str]:
        """Every owner that has a chain."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Make the calling thread's reads inside the span see one moment of the store.

        Each read on its own sees a consistent store, but two reads may straddle another
        process's commit: a tip read and a count read after it can disagree though nothing
        is wrong. Inside an open write the write's own view is used.
        """
        ...

    def tip(self, owner: str) -> Tip:
        """An owner's chain length and head."""
        ...

    def records(self, owner: str, start: int = 0) -> Iterator[Record]:
        """An owner's stored rows in chain order."""
        ...

    def get(self, owner: str, memory_id: str) -> MemoryRecord | None:
        """One projected memory of one owner."""
        ...

    def get_many(self, owner: str, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """Projected memories of one owner by id, in one query (missing ids are left out)."""
        ...

    def locate(self, memory_id: str) -> str | None:
        """The owner of a memory id, if any owner has it."""
        ...

    def memories(self, owner: str, query: MemoryFilter) -> list[MemoryRecord]:
        """Projected memories of one owner, newest first."""
        ...

    def count(self, owner: str, query: MemoryFilter) -> int:
        """How many memories a filter matches."""
        ...

    def counts(self, owner: str, queries: Sequence[MemoryFilter]) -> list[int]:
        """How many memories each filter matches (each as :meth:`count` would say), read
        in one statement: one pass over the owner's rows, not one per filter."""
        ...

    def projection(self, owner: str) -> dict[str, MemoryRecord]:
        """The whole stored projection of one owner."""
        ...

    def replace_projection(self, owner: str, memories: Mapping[str, MemoryRecord]) -> None:
        """Replace the stored projection and indexes of one owner (``rebuild``)."""
        ...

    def lexical(
        self, owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Full-text candidates matching any of the terms, best first (none: no hits).

        Each store renders the terms in its own query language, quoting every one, so no
        text reaches the engine's syntax.
        """
        ...

    def vector(
        self, owner: str, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Nearest retrievable memories by cosine similarity (score), best first."""
        ...

    def candidates(
        self,
        owner: str,
        terms: Sequence[Term],
        embedding: Sequence[float] | None,
        limits: CandidateLimits,
        query: MemoryFilter,
    ) -> Candidates:
        """A recall's two searches: ``lexical`` over ``terms`` (none when there are none)
        and ``vector`` near ``embedding`` (none without one), each to its limit; the same
        hits as the two calls, which a server backend may run at once."""
        ...

    def vector_model(self) -> tuple[str, int] | None:
        """The embedding model (name, dimension) the stored vectors were made with."""
        ...

    def erasure_epoch(self) -> int:
        """How many transactions that erased a text or forgot a memory have committed, by
        any process (:meth:`Transaction.note_erasure`): a keeper of memories' words outside
        the store that saw another number empties before it serves them again."""
        ...

    def set_vector_model(self, name: str, dimension: int) -> None:
        """Record a new embedding model; every stored vector is dropped (reindex after)."""
        ...

    def vector_ids(self, owner: str) -> set[str]:
        """The ids of one owner's memories that have a stored vector."""
        ...

    def recall_rows(self, owner: str, ids: Sequence[str]) -> dict[str, RecallRow]:
        """The ranking fields of these memories of one owner (missing ids are left out)."""
        ...

    def bulk_load(self) -> AbstractContextManager[None]:
        """A span in which a large load may defer index upkeep to one build at its end.

        Everything stays correct inside it; only searches may be slower until it ends.
        """
        ...

    def compact(self) -> None:
        """Make erased bytes unreachable in every file the store keeps (WAL, free pages),
        finishing the pending erasures it covers (waiting up to ``erasure_wait`` seconds for
        readers of older snapshots)."""
        ...

    erasure_wait: float
    """How long (seconds) an erasing write waits for readers of older snapshots before it
    returns with its erasure pending (``storage.erasure``)."""

    def pending_erasures(self) -> int:
        """How many committed erasures are not yet compacted out of every file."""
        ...

    def finish_erasures(self, wait: float = 0.0) -> bool:
        """Finish the pending erasures, waiting up to ``wait`` seconds for readers of older
        snapshots; True when none is left (else they finish in the background, or on the
        next open)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


@runtime_checkable
class TokenStore(Protocol):
    """Bearer-token records (hashes only; see ``core.access``) — every backend keeps them.

    Kept apart from :class:`Store` so a backend can be adopted before it stores tokens;
    ``service.tokens.token_store`` says so clearly when it does not.
    """

    #: Whether a read here is of a local database file (the embedded SQLite store: one
    #: indexed row, tens of microseconds) rather than a round trip to a server: a server
    #: may then check a bearer token in its event loop instead of a worker thread
    #: (``service.tokens.Tokens.local``; docs/api.md, "Concurrency").
    local: bool

    def put_token(self, record: TokenRecord) -> None:
        """Keep a new token record (its id is new; the secret itself is never stored)."""
        ...

    def token(self, token_id: str) -> TokenRecord | None:
        """One token record by id, revoked or not."""
        ...

    def tokens(self, principal: str | None = None) -> list[TokenRecord]:
        """Token records, oldest first, optionally of one principal only."""
        ...

    def revoke_token(self, token_id: str, at: str) -> bool:
        """Mark a token revoked at ``at``; False when no unrevoked token has that id."""
        ...

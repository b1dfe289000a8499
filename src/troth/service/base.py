"""What every use case of the ``Memory`` facade stands on: who acts, whose chain, the write path.

``MemoryBase`` holds the facade's state (store, policy, acting principal, clock, embedder)
and the one way anything is written: ``_writing`` opens the owner's transaction after the
chain verifies up to its head, ``_commit`` appends one event and projects it. The use-case
mixins (writes, changes, retention, integrity, reads) and the facade in ``memory.py`` build
on it.

Methods with one leading underscore are the service layer's internal API: the sibling
modules ``portability.py`` and ``checkpoints.py`` call ``_writing``, ``_commit``,
``_plan``, ``_write_plan``, ``_may_admit`` and ``_steward_channel`` so that their writes
take the same path as the facade's own. Adapters never call them.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from troth.core import lifecycle
from troth.core.chain import (
    REDACTED_MARKER,
    TARGET_PREFIX,
    TOMBSTONE_TAG,
    Verification,
    format_ts,
    make_entry,
    parse_utc,
    redact_entry,
    tombstone_content,
)
from troth.core.errors import (
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    StaleTipError,
)
from troth.core.events import Event, Record, canonical, check_head, event_tags, verify_records
from troth.core.policy import Policy
from troth.core.records import MemoryRecord, check_principal, principal_kind
from troth.service import validation as check
from troth.service.recall import memory_text
from troth.storage.base import Store, Tip, Transaction

if TYPE_CHECKING:
    from troth.embedding import Embedder

_T = TypeVar("_T")
Clock = Callable[[], datetime]

# What the content of a lifecycle entry says it did; forget and redact write a tombstone.
_MARKERS = {"approve": "approved", "reject": "rejected", "hide": "hidden", "expire": "expired"}
_TOMBSTONES = ("forget", "redact")


def utc_now() -> datetime:
    """The wall clock in UTC."""
    return datetime.now(UTC)


def parse_time(value: str) -> datetime:
    """A stored UTC time (``…Z``) as an aware datetime."""
    return parse_utc(value)


class MemoryBase:
    """The facade's state, the checks every use case shares, and the verified write path."""

    def __init__(
        self,
        store: Store,
        *,
        policy: Policy,
        principal: str,
        clock: Clock = utc_now,
        embedder: Embedder | None = None,
        max_concurrent_recalls: int | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.principal = check_principal(principal, "acting principal")
        self._clock = clock
        self._verified: dict[str, Tip] = {}
        self._verified_lock = threading.Lock()
        self._writers: dict[str, int] = {}  # owner -> writes in flight in this process
        # Owners another process wrote to between two writes of ours: their next write
        # holds the chain at once instead of first trying the head it would find moved.
        self._contended: set[str] = set()
        self._thread = threading.local()  # .depth: writes open on this thread
        self.embedder = embedder
        self._vectors_ok: bool | None = None
        self._vectors_lock = threading.Lock()
        # Ranking is pure Python: a second recall in another thread only takes turns at the
        # GIL, and while recalls take turns they starve the writer holding a chain. One at a
        # time served 32 clients x 500 at 76 requests/s, two at a time at 48 (docs/api.md).
        limit = 1 if max_concurrent_recalls is None else max_concurrent_recalls
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidInputError("max_concurrent_recalls must be a whole number of at least 1")
        self.max_concurrent_recalls = limit
        self._recall_gate = threading.BoundedSemaphore(limit)

    # -- embeddings -------------------------------------------------------------------

    def _vectors_ready(self) -> bool:
        """Whether writes embed and recall searches vectors: the store's model is ours.

        The first use records this embedder's name and dimension in the store; a store
        that holds another model's vectors gets none from this one until ``reindex``.
        """
        if self.embedder is None:
            return False
        if self._vectors_ok is None:
            # One thread records the model: a served store's first requests arrive together,
            # and each recording recreates the vector index (and so drops what the others wrote).
            with self._vectors_lock:
                if self._vectors_ok is None:
                    model = self.store.vector_model()
                    if model is None:
                        self.store.set_vector_model(self.embedder.name, self.embedder.dim)
                        model = (self.embedder.name, self.embedder.dim)
                    self._vectors_ok = model == (self.embedder.name, self.embedder.dim)
        return self._vectors_ok

    def _embed(self, texts: Sequence[str]) -> list[Any]:
        """Vectors for texts in one batch (empty when vectors are off)."""
        if not texts or not self._vectors_ready() or self.embedder is None:
            return []
        return list(self.embedder.embed(list(texts)))

    # -- who acts, on whose ledger ----------------------------------------------------

    def _now(self) -> str:
        return format_ts(self._clock())

    def _new_id(self) -> str:
        millis = int(self._clock().timestamp() * 1000)
        return f"m_{millis:011x}{secrets.token_hex(5)}"

    def _actor(self, actor: str | None) -> str:
        return self.principal if actor is None else check_principal(actor, "actor")

    def _owner(self, owner: str | None, actor: str) -> str:
        if owner is not None:
            return check_principal(owner, "owner")
        if principal_kind(actor) != "human":
            raise InvalidInputError(
                f"{actor} is not a person; say whose memory this is with owner=human:NAME",
                field="owner",
            )
        return actor

    def _owners(self, owner: str | None) -> list[str]:
        """One owner when named, else every owner the store knows."""
        return [check_principal(owner, "owner")] if owner else self.store.owners()

    def _owner_of(self, memory_id: str, owner: str | None) -> str:
        if owner is not None:
            return check_principal(owner, "owner")
        check.identifier(memory_id, "memory id")
        found = self.store.locate(memory_id)
        if found is None:
            raise NotFoundError(
                f"no memory {memory_id}; `troth list` shows the ids you can use",
                id=memory_id,
            )
        return found

    @staticmethod
    def _steward_channel(actor: str, owner: str) -> str:
        """Lifecycle decisions by the owner are user statements; anyone else's are internal."""
        return "user" if actor == owner and principal_kind(actor) == "human" else "internal"

    def _stored(self, owner: str, memory_id: str) -> MemoryRecord:
        """One of the owner's memories, outside any transaction."""
        return _found(self.store.get(owner, memory_id), memory_id, owner)

    def _load(self, tx: Transaction, memory_id: str) -> MemoryRecord:
        """One of the transaction owner's memories, as the open transaction sees it."""
        check.identifier(memory_id, "memory id")
        return _found(tx.get(memory_id), memory_id, tx.owner)

    # -- the write path ---------------------------------------------------------------

    def _ensure_verified(self, tx: Transaction) -> Tip:
        """Verify the chain up to its head before appending (incrementally after the first)."""
        tip = tx.tip()
        cached = self._verified.get(tx.owner)
        result: Verification | None = None
        if cached is not None and cached.length <= tip.length:
            if cached.length == tip.length and cached.head == tip.head:
                self._contended.discard(tx.owner)  # nobody else wrote since our last write
                return tip
            self._contended.add(tx.owner)
            result = verify_records(
                tx.records(cached.length), start_index=cached.length, prev_hash=cached.head
            )
            if not result.ok and result.broken_at == cached.length:
                result = None  # the cached head itself may have moved: verify from scratch
        if result is None:
            result = verify_records(tx.records(0))
        result = check_head(result, tip.length, tip.head)
        if not result.ok:
            self._verified.pop(tx.owner, None)
            raise IntegrityError(
                f"the ledger of {tx.owner} is broken at entry #{result.broken_at} "
                f"({result.reason}); refusing to write. Run `troth verify` to inspect it",
                owner=tx.owner,
                broken_at=result.broken_at,
                reason=result.reason,
            )
        tip = Tip(result.length, result.head)
        self._advance_verified(tx.owner, tip)
        return tip

    def _advance_verified(self, owner: str, tip: Tip) -> None:
        """Remember a verified head, never going back to a shorter one: threads finishing
        writes out of order must not make the next write build on an older head."""
        with self._verified_lock:
            known = self._verified.get(owner)
            if known is None or tip.length >= known.length:
                self._verified[owner] = tip

    @contextmanager
    def _writing(self, owner: str, expect: Tip | None = None) -> Iterator[Transaction]:
        """The owner's chain, held and verified, for appends that all land or none do.

        ``expect``: the tip this process verified last; the store then starts from it and
        raises :class:`StaleTipError` if the chain has moved (see ``Store.write``).
        """
        self._vectors_ready()  # records the model first: not inside the write
        depth = getattr(self._thread, "depth", 0)
        self._thread.depth = depth + 1
        try:
            with self.store.write(owner, expect) as tx:
                self._ensure_verified(tx)
                yield tx
                tip = tx.tip()
        finally:
            self._thread.depth = depth
        # Only once committed: a head that never landed must not be built on next time.
        self._advance_verified(owner, tip)

    def _append(self, owner: str, work: Callable[[Transaction], _T]) -> _T:
        """Run ``work`` in a write on the owner's chain, first on the tip verified last.

        When this process verified the chain's head and nobody has appended since (the
        common case: one writer per owner), the write builds on that head without asking,
        and a server backend commits one that reads nothing and creates one memory in one
        round trip. If the chain moved, nothing was written: the write runs again holding
        the chain, after verifying what was appended.
        The first try is skipped where it would likely be wasted or is not this write's
        own to retry: while another write of this process to the owner is in flight, while
        other processes are writing to the owner too (seen at our last write), and inside
        another write on this thread (whose stale head must stop it, not this one).
        """
        with self._verified_lock:
            busy = self._writers.get(owner, 0)
            self._writers[owner] = busy + 1
            expect = self._verified.get(owner)
        try:
            alone = not busy and owner not in self._contended
            if expect is not None and alone and not getattr(self._thread, "depth", 0):
                try:
                    with self._writing(owner, expect) as tx:
                        return work(tx)
                except StaleTipError:
                    pass
            with self._writing(owner) as tx:
                return work(tx)
        finally:
            with self._verified_lock:
                left = self._writers[owner] - 1
                if left:
                    self._writers[owner] = left
                else:
                    del self._writers[owner]

    def _commit(
        self,
        tx: Transaction,
        event: Event,
        *,
        content: str,
        channel: str,
        reserved: tuple[str, ...] = (),
        vectors: Mapping[str, Any] | None = None,
        minted: bool = False,
    ) -> list[MemoryRecord]:
        """Append one event and project it; returns the memories it changed.

        ``minted``: ``event.memory`` is an id just minted for the memory this event
        creates, so there is nothing to look up (the store refuses a clash instead).

        A changed memory that is active and retrievable gets its embedding (from
        ``vectors``, computed before the transaction, or here for e.g. an approval); the
        store drops the vector of one that leaves retrieval.
        """
        meta_text = canonical(event.meta())
        entry = make_entry(
            ts=self._now(),
            content=content,
            source=channel,
            tags=event_tags(event, meta_text, reserved),
            prev_hash=tx.tip().head,
        )
        seq = tx.append(entry, meta_text, event.texts)
        touched: dict[str, MemoryRecord] = {}
        for memory_id in (event.memory, event.supersedes, *event.memories):
            if memory_id and not (minted and memory_id == event.memory):
                current = tx.get(memory_id)
                if current is not None:
                    touched[memory_id] = current
        pending = touched.get(event.memory)
        if event.event == "approve" and pending is not None and pending.supersedes:
            old = tx.get(pending.supersedes)  # an approved edit supersedes now
            if old is not None:
                touched[old.id] = old
        # A memory that was live with the same text keeps its stored vector (``put`` without
        # one keeps it): an export or a tag touches every memory and must not re-embed them.
        embedded_as = {k: memory_text(m) for k, m in touched.items() if m.searchable}
        lifecycle.apply(touched, Record(seq, entry, meta_text, event.texts), tx.owner)
        given = vectors or {}
        live = [
            m
            for m in touched.values()
            if m.searchable and m.id not in given and embedded_as.get(m.id) != memory_text(m)
        ]
        embedded = self._embed([memory_text(m) for m in live])
        computed = dict(zip((m.id for m in live), embedded, strict=False))
        for memory in touched.values():
            new = minted and memory.id == event.memory
            tx.put(memory, given.get(memory.id, computed.get(memory.id)), new=new)
        return list(touched.values())

    def _append_change(
        self,
        tx: Transaction,
        memory: MemoryRecord,
        kind: str,
        *,
        actor: str,
        texts: Mapping[str, str],
        channel: str,
    ) -> list[MemoryRecord]:
        """Append a lifecycle event about an existing memory whose transition was checked.

        ``forget`` and ``redact`` write a tombstone aimed at the memory's creating entry
        (a redaction first erases that entry's text); the others a ``[hidden …]``-style line.
        """
        if kind == "redact":
            self._erase_creation(tx, memory)
        reserved: tuple[str, ...] = ()
        if kind in _TOMBSTONES:
            content = tombstone_content(texts["note"])
            reserved = (TOMBSTONE_TAG, TARGET_PREFIX + memory.entry_hash)
        else:
            content = f"[{_MARKERS[kind]} {memory.id}]"
        event = Event(kind, memory.id, actor, texts=dict(texts))
        return self._commit(tx, event, content=content, channel=channel, reserved=reserved)

    def _erase_creation(self, tx: Transaction, memory: MemoryRecord) -> None:
        """Redact the entry that created a memory, and every copy of its text."""
        record = next(tx.records(memory.seq), None)
        if record is None or record.entry.hash != memory.entry_hash:
            raise IntegrityError(
                f"the entry that created {memory.id} is not where the projection says;"
                " run `troth verify`",
                id=memory.id,
            )
        erased_texts = dict.fromkeys(record.texts, REDACTED_MARKER)
        tx.erase(record.seq, redact_entry(record.entry), erased_texts)
        from troth.service.checkpoints import erase_copies

        erase_copies(tx, memory.id, record.entry.content)


def _found(memory: MemoryRecord | None, memory_id: str, owner: str) -> MemoryRecord:
    if memory is None:
        raise NotFoundError(f"no memory {memory_id} for {owner}", id=memory_id)
    return memory

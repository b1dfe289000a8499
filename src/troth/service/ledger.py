"""The one way anything is written: the owner's chain held, verified to its head, appended.

:class:`Ledger` owns the verified, serialised write path and what this process knows of
each chain's verified tip. ``writing`` opens the owner's transaction once the chain
verifies up to its head; ``commit`` appends one event and projects it with the same
function ``rebuild`` folds; ``append`` first tries the tip verified last (one round trip
on a server backend) and falls back to holding the chain.

Erasure participants: a feature that keeps a copy of a memory's text (a checkpoint's
facts and stored replies, for one) registers an :data:`Eraser` when the facade is
composed (``service/compose.py``). A redaction calls every registered eraser in the
transaction that erases the creating entry, so the write path reaches every keeper of a
text without importing any of them. A cache that keeps memories' words outside the store
(recall's word vectors) registers an :data:`ErasureListener`, told once an erasure (or a
forget) has committed: the ledger announces it, and imports none of its listeners.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar

from troth.core import lifecycle
from troth.core.chain import (
    REDACTED_MARKER,
    TARGET_PREFIX,
    TOMBSTONE_TAG,
    Verification,
    format_ts,
    make_entry,
    redact_entry,
    tombstone_content,
)
from troth.core.errors import IntegrityError, StaleTipError
from troth.core.events import (
    MEMORY_TAG,
    Event,
    Record,
    canonical,
    check_head,
    event_tags,
    verify_records,
)
from troth.core.records import MemoryRecord
from troth.service.base import Clock, Parties
from troth.service.drafts import CreationPlan, WriteResult
from troth.service.provenance import inherit
from troth.service.readcheck import ReadCheck
from troth.service.recall import memory_text
from troth.service.vectors import Vectors
from troth.storage.base import Store, Tip, Transaction

_T = TypeVar("_T")

Eraser = Callable[[Transaction, str, str], None]
"""An erasure participant: called with (the open transaction, the memory id, its text)
once the memory's creating entry is erased, to erase every copy of the text it keeps."""

ErasureListener = Callable[[], None]
"""Told once a write that erased a text or forgot a memory has ended (after its commit; a
failed one too, which costs a listener only a refill): a cache of memories' words empties."""

# What the content of a lifecycle entry says it did; forget and redact write a tombstone.
_MARKERS = {"approve": "approved", "reject": "rejected", "hide": "hidden", "expire": "expired"}
_TOMBSTONES = ("forget", "redact")


class _ThreadWrites(threading.local):
    """What one thread's open writes share: how deeply they nest, where each owner's began
    (the tip, and the memories it changed: for the read check), and whether one erased text.

    Class-level defaults, so reading one needs no ``getattr`` default (a failed look-up
    builds and drops an exception on every write).
    """

    depth = 0
    erased = False
    nested = False  # a write ran inside another: the read check is not fed (see ``writing``)
    tombstoned = False  # a memory was forgotten or its text erased: the listeners are told

    def __init__(self) -> None:
        self.starts: dict[str, tuple[Tip, dict[str, MemoryRecord]]] = {}


class Ledger:
    """The verified, serialised write path over one store, and the verified tip of each chain."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock,
        vectors: Vectors,
        erasers: Sequence[Eraser] = (),
        check: ReadCheck | None = None,
        on_erasure: Sequence[ErasureListener] = (),
    ) -> None:
        self.store = store
        self.check = check
        self.clock = clock
        self.vectors = vectors
        self._erasers: list[Eraser] = list(erasers)
        self._on_erasure: list[ErasureListener] = list(on_erasure)
        self._verified: dict[str, Tip] = {}
        self._verified_lock = threading.Lock()
        self._writers: dict[str, int] = {}  # owner -> writes in flight in this process
        # Owners another process wrote to between two writes of ours: their next write
        # holds the chain at once instead of first trying the head it would find moved.
        self._contended: set[str] = set()
        self._thread = _ThreadWrites()

    # -- erasure participants -----------------------------------------------------------

    def add_eraser(self, eraser: Eraser) -> None:
        """Register a keeper of copies of memory texts; redactions will reach it."""
        self._erasers.append(eraser)

    @property
    def erasers(self) -> tuple[Eraser, ...]:
        """The registered erasure participants, in registration order."""
        return tuple(self._erasers)

    def add_erasure_listener(self, listener: ErasureListener) -> None:
        """Register a keeper of memories' words outside the store; erasures will reach it."""
        self._on_erasure.append(listener)

    def erasing(self, tx: Transaction) -> None:
        """Note that ``tx`` erases a text or forgets a memory. The store's erasure epoch
        moves in it (every process's word caches see it at their next recall), and once
        this thread's write ends the erasure listeners here are told at once
        (:meth:`erasure_committed`). The one place that decides what counts as an erasure
        for the caches of memories' words."""
        tx.note_erasure()
        if self._thread.depth:
            self._thread.tombstoned = True

    def erasure_committed(self) -> None:
        """Tell every erasure listener that an erasure has committed (a write outside
        :meth:`writing` that erased, a restore's, calls it once it commits)."""
        for listener in self._on_erasure:
            listener()

    # -- the verified tip ---------------------------------------------------------------

    def now(self) -> str:
        """The clock's time as the chain writes it."""
        return format_ts(self.clock())

    def verified(self, owner: str) -> Tip | None:
        """The tip this process verified last for ``owner``, if any."""
        return self._verified.get(owner)

    def trust(self, owner: str, tip: Tip) -> None:
        """Record a tip as verified (a chain this process has just written whole)."""
        with self._verified_lock:
            self._verified[owner] = tip

    def forget_verified(self) -> None:
        """Drop every verified tip, the read check's too (the write path takes its tip):
        the next write verifies its chain from the start."""
        with self._verified_lock:
            self._verified.clear()
        if self.check is not None:
            self.check.forget()

    def _ensure_verified(self, tx: Transaction) -> Tip:
        """Verify the chain up to its head before appending (incrementally after the first)."""
        tip = tx.tip()
        owner = tx.owner
        cached = self._verified.get(owner)
        result: Verification | None = None
        if cached is not None and cached.length <= tip.length:
            if cached.length == tip.length and cached.head == tip.head:
                self._contended.discard(owner)  # nobody else wrote since our last write
                return tip
            self._contended.add(owner)
            result = verify_records(
                tx.records(cached.length), start_index=cached.length, prev_hash=cached.head
            )
            if not result.ok and result.broken_at == cached.length:
                result = None  # the cached head itself may have moved: verify from scratch
        if result is None:
            result = verify_records(tx.records(0), owner=tx.owner)
        result = check_head(result, tip.length, tip.head)
        if not result.ok:
            self._verified.pop(tx.owner, None)
            if self.check is not None:
                # The read path refuses the owner too (and drops its saved fold): reads
                # served over a saved fold had not seen the older rows (docs/ledger.md, §13).
                self.check.note_broken(tx.owner, result)
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

    def _verify_ahead(self, owner: str) -> None:
        """Verify a chain this process has not verified yet before holding it, so that in
        the write only the rows appended since are verified. Verified inside, a long chain
        held the chain meanwhile — on SQLite the whole file's write lock, so every other
        owner's write waited (3.8 s at 20,000 memories, docs/benchmarks.md, "Erasure on
        PostgreSQL without holding a table"). A chain that does not verify here is left to
        the write, which refuses it with its finding."""
        with self.store.snapshot():
            tip = self.store.tip(owner)
            if not tip.length:
                return
            result = check_head(
                verify_records(self.store.records(owner), owner=owner), tip.length, tip.head
            )
        if result.ok:
            self._advance_verified(owner, tip)

    def _advance_verified(self, owner: str, tip: Tip) -> None:
        """Remember a verified head, never going back to a shorter one: threads finishing
        writes out of order must not make the next write build on an older head."""
        with self._verified_lock:
            known = self._verified.get(owner)
            if known is None or tip.length >= known.length:
                self._verified[owner] = tip

    # -- holding a chain ----------------------------------------------------------------

    def in_write(self) -> bool:
        """Whether this thread is inside a write (its appends join that transaction)."""
        return bool(self._thread.depth)

    @contextmanager
    def writing(self, owner: str, expect: Tip | None = None) -> Iterator[Transaction]:
        """The owner's chain, held and verified, for appends that all land or none do.

        ``expect``: the tip this process verified last; the store then starts from it and
        raises :class:`StaleTipError` if the chain has moved (see ``Store.write``).
        """
        self.vectors.ready()  # records the model first: not inside the write
        thread = self._thread
        depth = thread.depth
        if depth:
            thread.nested = True
        elif owner not in self._verified:
            # A chain the read check has verified (or this process wrote) is not verified
            # again: only the rows appended since are, in the write.
            checked = None if self.check is None else self.check.verified(owner)
            if checked is not None:
                self._advance_verified(owner, checked)
            else:
                self._verify_ahead(owner)
        thread.depth = depth + 1
        fed = False
        try:
            with self.store.write(owner, expect) as tx:
                start = self._ensure_verified(tx)
                if self.check is not None:
                    self.check.begin_write(owner, tx.records, start)
                starts = thread.starts
                outer = starts.get(owner)
                starts[owner] = (start, {})
                try:
                    yield tx
                finally:
                    written = starts[owner][1]
                    if outer is None:
                        starts.pop(owner, None)
                    else:
                        starts[owner] = outer
                tip = tx.tip()
            # Committed (the outermost write on this thread, so nothing can still undo it).
            fed = not depth and not thread.erased and not thread.nested
        finally:
            thread.depth = depth
            if not depth:
                thread.nested = False
            if not depth and thread.erased:
                # An erasure rewrote rows the read check had folded: landed or not, the next
                # read verifies and folds the owner's chain afresh (one pass over it); its
                # saved fold, digests of the rows before, goes too (ReadCheck.rewritten).
                thread.erased = False
                if self.check is not None:
                    self.check.rewritten(owner)
            if not depth and thread.tombstoned:
                # Recall's word cache holds memories' words: a forgotten or erased memory's
                # leave it (it refills in one batch a recall; docs/retrieval.md).
                thread.tombstoned = False
                self.erasure_committed()
        if fed and self.check is not None:
            # What the write made is what the chain makes: the read check takes it as it is
            # instead of reading and folding the rows again (ReadCheck.wrote).
            self.check.wrote(owner, start, tip, written)
        # Only once committed: a head that never landed must not be built on next time.
        self._advance_verified(owner, tip)

    def append(self, owner: str, work: Callable[[Transaction], _T]) -> _T:
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
            if expect is not None and alone and not self._thread.depth:
                try:
                    with self.writing(owner, expect) as tx:
                        return work(tx)
                except StaleTipError:
                    pass
            with self.writing(owner) as tx:
                return work(tx)
        finally:
            with self._verified_lock:
                left = self._writers[owner] - 1
                if left:
                    self._writers[owner] = left
                else:
                    del self._writers[owner]

    # -- appending ----------------------------------------------------------------------

    def commit(
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
        head = tx.tip()  # one read of the head per append: this is the write's hot path
        if not head.length:
            # The genesis entry commits the chain to its owner (docs/ledger.md, section 13).
            event = replace(event, owner=tx.owner)
        meta_text = canonical(event.meta())
        entry = make_entry(
            ts=self.now(),
            content=content,
            source=channel,
            tags=event_tags(event, meta_text, reserved),
            prev_hash=head.head,
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
        began = self._thread.starts.get(tx.owner)
        if touched and self.check is not None and began is not None:
            # What the write builds on must be what the chain makes (a row edited behind
            # the ledger's back is refused here too); memories this write changed are its own.
            self.check.touched(tx.owner, touched.values(), *began)
        embedded_as = {k: memory_text(m) for k, m in touched.items() if m.searchable}
        lifecycle.apply(touched, Record(seq, entry, meta_text, event.texts), tx.owner)
        given = vectors or {}
        live = [
            m
            for m in touched.values()
            if m.searchable and m.id not in given and embedded_as.get(m.id) != memory_text(m)
        ]
        embedded = self.vectors.embed([memory_text(m) for m in live])
        computed = dict(zip((m.id for m in live), embedded, strict=False))
        for memory in touched.values():
            new = minted and memory.id == event.memory
            tx.put(memory, given.get(memory.id, computed.get(memory.id)), new=new)
        if began is not None:
            began[1].update(touched)  # each as this event left it
        return list(touched.values())

    def write_plan(
        self, tx: Transaction, plan: CreationPlan, vectors: Mapping[str, Any] | None = None
    ) -> WriteResult:
        """Append a planned creation inside an open transaction."""
        if plan.event.supersedes is not None:
            old = Parties.load(tx, plan.event.supersedes)
            lifecycle.check_transition(old, "edit")
            plan = inherit(plan, old)
        changed = self.commit(
            tx,
            plan.event,
            content=plan.content,
            channel=plan.channel,
            reserved=plan.reserved,
            vectors=vectors,
            minted=True,  # every plan mints its memory's id
        )
        created = next(m for m in changed if m.id == plan.event.memory)
        return WriteResult(
            id=plan.event.memory,
            status=created.status,
            owner=plan.owner,
            why=plan.decision.why,
            flagged=created.flagged,
            memory=created,
        )

    def append_change(
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
            self.erase_creation(tx, memory)
        reserved: tuple[str, ...] = ()
        if kind in _TOMBSTONES:
            self.erasing(tx)
            content = tombstone_content(texts["note"])
            reserved = (TOMBSTONE_TAG, TARGET_PREFIX + memory.entry_hash)
        else:
            content = f"[{_MARKERS[kind]} {memory.id}]"
        event = Event(kind, memory.id, actor, texts=dict(texts))
        return self.commit(tx, event, content=content, channel=channel, reserved=reserved)

    def erase_creation(self, tx: Transaction, memory: MemoryRecord) -> None:
        """Redact the entries of a memory's history, and every copy of its text.

        The entry that created it (its content, title, reason, scope id, tags…), then every
        later entry about it: the notes of its approval, rejection or hiding, a forget's
        reason (its tombstone's content). Each keeps its hashes, so the chain verifies. The
        memory is then refolded from the erased rows, as ``rebuild`` would fold it.
        """
        foreign = memory.id.startswith(lifecycle.FOREIGN_PREFIX)
        # The rows that name the memory, found by the database: a redaction holds the
        # write lock, and decoding a long chain in it would stall every other writer.
        found = tx.records(memory.seq) if foreign else tx.records_naming(memory.id, memory.seq)
        creation = next(found, None)
        if creation is None or creation.entry.hash != memory.entry_hash:
            raise IntegrityError(
                f"the entry that created {memory.id} is not where the projection says;"
                " run `troth verify`",
                id=memory.id,
            )
        content = creation.entry.content
        # Older rows change: the read check does not take this write as it is (``wrote``);
        # the next read verifies and folds the owner's chain afresh.
        self._thread.erased = True
        self.erasing(tx)
        if foreign:
            # A plain personaxis entry: its own line is all the history it has here.
            self._erase_row(tx, creation)
        else:
            about = MEMORY_TAG + memory.id
            rows = {creation.seq: self._erase_row(tx, creation)}
            for row in found:
                rows[row.seq] = self._erase_row(tx, row) if about in row.entry.tags else row
            # The events of the memories that supersede it (an approved edit) refold it too.
            for row in list(rows.values()):
                event = row.decode()
                if event and event.event == "edit" and event.supersedes == memory.id:
                    for later in tx.records_naming(event.memory, row.seq):
                        rows.setdefault(later.seq, later)
            history = [rows[seq] for seq in sorted(rows)]
            refolded = lifecycle.fold_memory(history, memory.id, tx.owner)
            if refolded is not None:
                tx.put(refolded)
                # The read check knows this memory as its rows were before the erasure:
                # this write may change it (``touched`` exempts it), and once the write ends
                # the next read verifies and folds the owner's chain afresh (``writing``).
                began = self._thread.starts.get(tx.owner)
                if began is not None:
                    began[1][memory.id] = refolded
        for eraser in self._erasers:
            eraser(tx, memory.id, content)

    @staticmethod
    def _erase_row(tx: Transaction, record: Record) -> Record:
        """Erase one row's content and texts (a row already erased stays as it is; a legacy
        row is refused by ``redact_entry``: re-anchor the chain first)."""
        if record.entry.redacted:
            return record
        texts = dict.fromkeys(record.texts, REDACTED_MARKER)
        entry = redact_entry(record.entry)
        tx.erase(record.seq, entry, texts)
        return Record(record.seq, entry, record.meta, texts)

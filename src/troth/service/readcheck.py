"""The fail-closed read path: what is served is held against the owner's verified chain.

The first time this process reads (or changes) an owner's memories, :class:`ReadCheck`
reads the owner's chain once, verifies it to its recorded head (owner and redaction rules
included), holds it against the newest checkpoint its witnesses hold (the ``anchor``),
counts the stored projection against the memories the chain makes, and keeps the fold of
the chain. After that every memory served — by get, list, recall, brief, export, the MCP
tools — is compared with the memory the chain makes (:func:`served_problem`: one dict look-up
and one comparison of frozen records), and the chain is followed from the head it last saw
(only the rows appended since are read and verified).

A finding refuses the read with an :class:`IntegrityError` naming the memory, and from then
on every read of and write to that owner in this process, until a person repairs
(``troth rebuild``, which rebuilds only from a chain that verifies against a witnessed
checkpoint, then :meth:`ReadCheck.forget`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final, NoReturn

from troth.core import lifecycle
from troth.core.chain import Verification
from troth.core.errors import ConflictError, IntegrityError, InvalidInputError, NotFoundError
from troth.core.events import MEMORY_TAG, REDACT_TAG, Record, check_head, verify_records
from troth.core.records import STATUSES, MemoryRecord
from troth.service.extending import since
from troth.service.folds import Fold, FoldFiles, SavedFold, digest
from troth.storage.base import MemoryFilter, Store, Tip

__all__ = ["Anchor", "ReadCheck", "served_problem"]

Anchor = Callable[[str], int | None]
"""Holds an owner's chain against the newest checkpoint its witnesses hold: the witnessed
size (None when no witness holds one), or an :class:`IntegrityError` saying what was found."""

Rows = Callable[[int], Iterator[Record]]


def served_problem(stored: MemoryRecord, made: MemoryRecord | None) -> str | None:
    """Why a memory read from the projection is not the one the chain makes (None: it is).

    The per-row check of the read path: callers that read memories some other way (a
    faster recall) call it, or :meth:`ReadCheck.served`, on what they serve.
    """
    if made is None:
        return "the ledger never made it (a row inserted, or copied from another owner)"
    if stored == made:
        return None
    left, right = stored.to_dict(), made.to_dict()
    differ = [name for name in right if left.get(name) != right[name]]
    return f"its {', '.join(differ) or 'value'} differ{'s' if len(differ) == 1 else ''} from the ledger"


@dataclass(slots=True)
class _Known:
    """An owner's chain as this process verified it, and the memories it makes.

    ``counts``: how many of those memories each census filter keeps (``_CENSUS``), kept as
    the fold moves so the census never walks the memories again. ``checked``: the chain was
    held against its witnessed checkpoint and the projection counted against the fold in
    this process (False for a chain this process wrote from empty, until its first read).
    """

    tip: Tip
    memories: Fold
    counts: list[int]
    checked: bool = True
    #: The fold a previous process saved, which ``memories`` (then the memories changed
    #: since) is taken over; None once the whole chain was verified and folded here.
    base: SavedFold | None = None
    #: The tip of the saved fold this was taken from or last saved as.
    saved: Tip | None = None

    def change(self, memory: MemoryRecord) -> None:
        """Take a memory the chain now makes, keeping the census counts."""
        was = self.memories.marks(memory.id)
        if was is None:
            found = None if self.base is None else self.base.find(memory.id)
            was = 0 if found is None else found[1]
        now = _marks(memory)
        if was != now:
            counts = self.counts
            for index in range(len(counts)):
                counts[index] += ((now >> index) & 1) - ((was >> index) & 1)
        self.memories.put(memory, now)


class ReadCheck:
    """Holds what is served against each owner's verified chain; refuses what differs."""

    def __init__(self, store: Store, anchor: Anchor | None = None) -> None:
        self.store = store
        self.anchor = anchor
        self._known: dict[str, _Known] = {}
        self._refused: dict[str, IntegrityError] = {}
        self._lock = threading.RLock()
        #: Where folds are saved between processes (set by ``config.build_memory``), if anywhere.
        self.folds: FoldFiles | None = None

    # -- what readers call ----------------------------------------------------------------

    def served(self, owner: str, memories: Iterable[MemoryRecord]) -> None:
        """Refuse (IntegrityError) unless every memory is the one the owner's chain makes."""
        with self._lock:
            known = self._current(owner)
            for memory in memories:
                self._hold(owner, known, memory)

    def chain(self, owner: str) -> None:
        """Refuse unless the owner's chain verifies to its head and its witnessed checkpoint
        (what a recall that finds nothing is answered from)."""
        with self._lock:
            self._current(owner)

    def rows(self, owner: str) -> None:
        """As :meth:`chain`, for a reader served the chain's rows themselves (a personaxis
        export, a proof): rows a saved fold vouched for are verified here first."""
        with self._lock:
            known = self._current(owner)
            if known.base is not None:
                with self.store.snapshot():
                    self._settle(owner, known, known.tip, self._rows(owner))

    def save(self) -> None:
        """Save each owner's fold that moved since it was taken or saved (``Memory.close``)."""
        with self._lock:
            if self.folds is None:
                return
            for owner, known in list(self._known.items()):
                if not known.checked or known.saved == known.tip or owner in self._refused:
                    continue
                digested = known.memories.digested()
                fold = SavedFold.build(known.tip, known.counts, digested, known.base)
                if fold is not None:
                    self.folds.save(owner, fold)
                    known.saved = known.tip

    # -- what the write path calls ----------------------------------------------------------

    def refusal(self, owner: str) -> IntegrityError | None:
        """The finding that refuses the owner's writes in this process, if any."""
        return self._refused.get(owner)

    def begin_write(self, owner: str, rows: Rows, start: Tip) -> None:
        """At the start of a write holding the chain at ``start``, before it changes
        anything: refuse a refused owner, and follow the chain to ``start`` if the owner
        was read before (what the write then reads is checked by :meth:`touched`)."""
        with self._lock:
            refused = self._refused.get(owner)
            if refused is not None:
                raise refused
            known = self._known.get(owner)
            if known is not None and known.tip.length < start.length:
                self._follow(owner, known, start, rows)

    def touched(
        self,
        owner: str,
        memories: Iterable[MemoryRecord],
        start: Tip,
        exempt: Container[str] = frozenset(),
    ) -> None:
        """Refuse a write that read a memory the chain (at ``start``, where the write began)
        does not make; ``exempt``: memories this write itself changed. An owner this
        process has not read yet is held on its first read, except over an empty chain,
        where any memory read is refused at once."""
        with self._lock:
            known = self._known.get(owner)
            if known is None and not start.length:
                # An empty chain makes no memory: a row this write read was put there by
                # something else, and :meth:`wrote` would otherwise take it into the fold.
                for memory in memories:
                    if memory.id not in exempt:
                        self._refuse_served(owner, memory, None)
                return
            if known is None or known.tip != start:
                return
            for memory in memories:
                if memory.id not in exempt:
                    self._hold(owner, known, memory, racing=False)

    def wrote(self, owner: str, start: Tip, tip: Tip, written: Mapping[str, MemoryRecord]) -> None:
        """A write of this process committed: it held the chain at ``start``, left it at
        ``tip``, and put ``written`` (each memory it changed, as it left it). Where this
        check knows the chain at ``start`` (or the chain was empty there), those are the
        memories the chain makes at ``tip`` — the write made them with the fold's own
        function from memories held against the fold (:meth:`touched`) — so they are taken
        as they are instead of reading the rows again. An owner first met this way is
        still held against its witness and counted at its first read."""
        with self._lock:
            if owner in self._refused:
                return
            known = self._known.get(owner)
            if known is None:
                if start.length:
                    return  # not read yet: the first read verifies and folds the chain
                known = _Known(start, Fold(), [0] * len(_CENSUS), checked=False)
                self._known[owner] = known
            if known.tip != start:
                return  # another writer came between: the next read follows the rows
            for memory in written.values():
                known.change(memory)
            known.tip = tip

    def verified(self, owner: str) -> Tip | None:
        """The tip to which this process has verified (or itself written) the owner's whole
        chain; None for a chain taken over a saved fold, whose older rows the write path
        still verifies before it appends to them."""
        known = self._known.get(owner)
        return None if known is None or known.base is not None else known.tip

    def forget(self, owner: str | None = None) -> None:
        """Drop what is known of an owner (or every owner), findings included: after a
        repair the next read verifies the chain from the start."""
        with self._lock:
            if owner is None:
                self._known.clear()
                self._refused.clear()
            else:
                self._known.pop(owner, None)
                self._refused.pop(owner, None)

    def rewritten(self, owner: str) -> None:
        """An owner's older rows were rewritten (an erasure, a rebuild, a restore): drop what
        is known of them, and their saved fold. That file's digests were taken of the rows
        before, an erased text's among them: a digest of a short text (a PIN, a name) lets
        whoever holds the file confirm a guess at it, so the erasure takes it too."""
        self.forget(owner)
        if self.folds is not None:
            self.folds.drop(owner)

    # -- inside ----------------------------------------------------------------------------

    def _current(self, owner: str) -> _Known:
        refused = self._refused.get(owner)
        if refused is not None:
            raise refused
        known = self._known.get(owner)
        if known is None:
            saved = None if self.folds is None else self.folds.load(owner)
            # The chain, its fold and the projection's census are read in one snapshot:
            # read apart, a write committed between them looks like a row the ledger
            # never made.
            with self.store.snapshot():
                tip = self.store.tip(owner)
                resumed = None if saved is None else self._resume(owner, saved, tip)
                return resumed or self._load(owner, tip, self._rows(owner))
        if not known.checked:
            # A chain this process wrote from empty: its witness and census, once.
            with self.store.snapshot():
                self._catch_up(owner, known, self.store.tip(owner))
                self._anchor(owner)
                self._census(owner, known)
            known.checked = True
            return known
        self._catch_up(owner, known, self.store.tip(owner))
        return known

    def _catch_up(self, owner: str, known: _Known, tip: Tip) -> None:
        """Follow the chain from the head this process verified to ``tip``, which must
        extend it."""
        if known.tip == tip:
            return
        if tip.length <= known.tip.length:
            self.refuse(
                owner,
                f"the ledger of {owner} now holds {tip.length} entries ending at"
                f" {tip.head[:16] or 'nothing'}, but this process verified"
                f" {known.tip.length} ending at {known.tip.head[:16]}: it was rolled back"
                " or rewritten while open",
                state="rolled_back" if tip.length < known.tip.length else "rewritten",
            )
        self._follow(owner, known, tip, self._rows(owner))

    def _rows(self, owner: str) -> Rows:
        return lambda start: self.store.records(owner, start)

    def _made(self, owner: str, tip: Tip, rows: Rows) -> tuple[Tip, Fold, list[int]]:
        """The memories the chain makes at ``tip``, once it verifies to it, and how many
        of them each census filter keeps.

        One pass: each row is folded as the verification reads it, and neither the rows
        nor the records are kept (the fold is packed as it grows), so a whole fold leaves
        no heap for the garbage collector to walk, and does not walk a growing one while
        it runs. What the fold made is used only once the whole chain verified.
        """
        folding = _Folding(owner)
        result = check_head(
            verify_records(folding.through(islice(rows(0), tip.length)), owner=owner),
            tip.length,
            tip.head,
        )
        if not result.ok:
            at = result.broken_at or 0
            self.broken(owner, result, *folding.row(at))
        if folding.failed is not None:
            self.refuse(owner, f"the events of {owner}'s ledger do not replay ({folding.failed})")
        fold = folding.done()
        return Tip(result.length, result.head), fold, _counts(fold)

    def _load(self, owner: str, tip: Tip, rows: Rows) -> _Known:
        verified, fold, counts = self._made(owner, tip, rows)
        self._anchor(owner)
        known = _Known(verified, fold, counts)
        self._census(owner, known)
        self._known[owner] = known
        return known

    def _settle(self, owner: str, known: _Known, tip: Tip, rows: Rows) -> None:
        """Verify and fold the whole chain to ``tip`` into ``known``, in place (a saved
        fold's memory not found as it saved it, a finding to name, rows to serve)."""
        known.tip, known.memories, known.counts = self._made(owner, tip, rows)
        known.base = None

    def _resume(self, owner: str, saved: SavedFold, tip: Tip) -> _Known | None:
        """Take the fold a previous process saved, if the chain still extends it: the entry
        at its size carries its head, the rows since verify from it and replay on it (each
        memory they change found in the projection as the fold has it), the witness holds
        and the projection counts as it does. None: verify and fold the whole chain, which
        reports what was found (docs/ledger.md, section 13)."""
        at = saved.tip.length
        if not at or tip.length < at or len(saved.counts) != len(_CENSUS):
            return None
        new = since(self.store, owner, saved.tip, tip.length - at)
        if new is None:
            return None
        result = check_head(
            verify_records(new, start_index=at, prev_hash=saved.tip.head), tip.length, tip.head
        )
        if not result.ok:
            return None
        known = _Known(saved.tip, Fold(), list(saved.counts), base=saved, saved=saved.tip)
        try:
            self._replay(owner, known, new)
        except (_StaleError, *_REPLAY):
            return None
        known.tip = tip
        self._known[owner] = known
        self._anchor(owner)
        self._census(owner, known)
        return known

    def _prior(self, owner: str, known: _Known, memory_id: str) -> MemoryRecord | None:
        """The record the fold holds for a memory a later event changes: kept, or (over a
        saved fold) the stored one when its digest is the fold's, else :class:`_StaleError`."""
        kept = known.memories.get(memory_id)
        if kept is not None or known.base is None:
            return kept
        found = known.base.find(memory_id)
        if found is None:
            return None
        stored = self.store.get(owner, memory_id)
        if stored is None or digest(stored) != found[0]:
            raise _StaleError(memory_id)
        return stored

    def _replay(self, owner: str, known: _Known, records: list[Record]) -> None:
        """Apply verified rows to the fold, keeping its census counts."""
        changed = _Changes(lambda memory_id: self._prior(owner, known, memory_id))
        for record in records:
            lifecycle.apply(changed, record, owner)
        for memory in changed.values():
            known.change(memory)

    def _anchor(self, owner: str) -> None:
        """The chain held against its witnessed checkpoint, once per owner per process."""
        if self.anchor is not None:
            try:
                self.anchor(owner)
            except IntegrityError as exc:
                finding, _, repair = exc.message.partition(". ")
                details = {k: v for k, v in exc.details.items() if k != "owner"}
                self.refuse(owner, finding, repair=repair, **details)

    def _follow(self, owner: str, known: _Known, tip: Tip, rows: Rows) -> None:
        """Verify and fold the rows appended since the head this process verified."""
        start = known.tip.length
        new = list(islice(rows(start), tip.length - start))
        result = check_head(
            verify_records(new, start_index=start, prev_hash=known.tip.head),
            tip.length,
            tip.head,
        )
        if not result.ok:
            self.broken(owner, result, new, start)
        try:
            self._replay(owner, known, new)
        except _StaleError:  # over a saved fold, a memory another process changed since
            self._settle(owner, known, tip, rows)
        except _REPLAY as exc:
            self.refuse(owner, f"the events of {owner}'s ledger do not replay ({exc})")
        known.tip = tip

    def broken(
        self, owner: str, result: Verification, rows: Sequence[Record] = (), first: int = 0
    ) -> NoReturn:
        """Refuse a chain that does not verify (the read path's finding); ``rows``, if
        given, start at position ``first``."""
        raise self.note_broken(owner, result, rows, first)

    def note_broken(
        self, owner: str, result: Verification, rows: Sequence[Record] = (), first: int = 0
    ) -> IntegrityError:
        """Record that the owner's chain does not verify, without raising: the write path
        found it and raises its own sentence, and the owner's reads are refused from now
        on in this process (its saved fold dropped). The finding, as reads will raise it."""
        at = result.broken_at or 0
        return self._finding(
            owner,
            f"the ledger of {owner} is broken at entry #{at}{_about(rows, at - first)}"
            f" ({result.reason})",
            state="broken",
            broken_at=at,
        )

    def _hold(
        self, owner: str, known: _Known, memory: MemoryRecord, *, racing: bool = True
    ) -> None:
        """Refuse ``memory`` unless the chain makes it; ``racing``: it was read outside a
        write holding the chain, so a commit may have come between the read and the chain's."""
        held = known.memories.holds(memory)
        if held:  # the common case, first
            return
        if held is None and known.base is not None and known.base.holds(memory):
            return
        if not racing:
            if known.base is not None:  # the records, not digests, decide a finding
                self._settle(owner, known, known.tip, self._rows(owner))
                if known.memories.get(memory.id) == memory:
                    return
            self._refuse_served(owner, memory, known.memories.get(memory.id))
        # A read can straddle a commit: a row read just before an edit or a forget, held
        # against the chain read just after it. Read the row again with the chain's tip in
        # one snapshot, and refuse only what the store holds now.
        with self.store.snapshot():
            tip = self.store.tip(owner)
            fresh = self.store.get(owner, memory.id)
            self._catch_up(owner, known, tip)
            made = known.memories.get(memory.id)
            if fresh is not None and made is None and known.base is not None:
                if known.base.holds(fresh):
                    return
                self._settle(owner, known, known.tip, self._rows(owner))
                made = known.memories.get(memory.id)
        if fresh is not None and fresh == made:
            return
        self._refuse_served(owner, memory if fresh is None else fresh, made)

    def _refuse_served(
        self, owner: str, memory: MemoryRecord, made: MemoryRecord | None
    ) -> NoReturn:
        """Refuse a served memory that is not the one the chain makes (callers know it is not)."""
        problem = served_problem(memory, made) or "it differs from the ledger"
        self.refuse(
            owner,
            f"memory {memory.id} as stored for {owner} is not what the ledger says: {problem}",
            memory=memory.id,
            state="projection",
        )

    def _census(self, owner: str, known: _Known) -> None:
        """The stored projection counted against the fold: in all, and by each indexed
        column the reads filter on (status, retrievable, sensitivity), so a row
        inserted, deleted, moved to another owner, or changed in a column that decides
        whether it is listed or recalled at all is found before anything is served."""
        made = known.memories
        # One statement, one pass over the owner's rows: nine counts read apart were nine
        # passes, two of them over the whole table (1.3-1.5 s of CPU at 976k memories,
        # docs/benchmarks.md, "Issue 19, the first query at 1M").
        stored = self.store.counts(owner, _FILTERS)
        for index, ((query, _test, counted), expected, found) in enumerate(
            zip(_CENSUS, known.counts, stored, strict=True)
        ):
            if found == expected:
                continue
            if known.base is not None:  # name the memory from the records of a whole fold
                self._settle(owner, known, known.tip, self._rows(owner))
                self._census(owner, known)
                return
            try:  # only on a finding: name the memory (reading the rows the filter keeps)
                ids = {m.id for m in self.store.memories(owner, query)}
            except IntegrityError as exc:
                self.refuse(owner, exc.message.split("; run `troth")[0], state="projection")
            want = {memory_id for memory_id, marks in made.ids() if marks >> index & 1}
            extra, missing = sorted(ids - want), sorted(want - ids)
            if extra and extra[0] not in made:
                finding = (
                    f"memory {extra[0]} is stored for {owner}, but the ledger never made it"
                    " (a row inserted, or copied from another owner)"
                )
            elif query == _EVERYTHING and missing:
                finding = f"memory {missing[0]} of {owner} is missing from the stored projection"
            elif extra or missing:
                finding = (
                    f"memory {(extra or missing)[0]} as stored for {owner} is not what the"
                    f" ledger says: its {counted} differs from the ledger"
                )
            else:
                finding = f"the projection of {owner} does not count as its ledger does"
            self.refuse(owner, finding, state="projection")

    def refuse(self, owner: str, finding: str, *, repair: str = "", **details: Any) -> NoReturn:
        """Record a finding about ``owner`` and raise it: reads and writes of the owner are
        refused in this process until :meth:`forget` (after a repair)."""
        raise self._finding(owner, finding, repair=repair, **details)

    def _finding(
        self, owner: str, finding: str, *, repair: str = "", **details: Any
    ) -> IntegrityError:
        """Record a finding about ``owner``; the error that refuses it."""
        how = (
            repair[:1].lower() + repair[1:].rstrip(".")
            if repair
            else (
                f"restore the data from a good copy, or run `troth rebuild --owner {owner}`, which"
                " rebuilds only from a chain that verifies against its witnessed checkpoint"
            )
        )
        error = IntegrityError(
            f"{finding}. Nothing more of {owner}'s memories is served here, and writes to"
            f" {owner} are refused, until a person repairs it: {how} (docs/ledger.md,"
            " section 13)",
            owner=owner,
            **details,
        )
        with self._lock:  # the write path calls this too, outside the read check's lock
            self._refused[owner] = error
            self._known.pop(owner, None)
            if self.folds is not None:
                self.folds.drop(owner)  # the next process folds the chain whole, and finds it
        return error


def _census_filters() -> tuple[tuple[MemoryFilter, Callable[[MemoryRecord], bool], str], ...]:
    """Each filter the census counts, the test of a memory it keeps, and what it counts."""
    everything = (MemoryFilter(), lambda m: True, "existence")
    by_status = tuple(
        (MemoryFilter(statuses=(s,)), lambda m, s=s: m.status == s, "status") for s in STATUSES
    )
    live = (
        MemoryFilter(retrievable_only=True),
        lambda m: m.retrievable and m.status == "active",
        "retrievable",
    )
    plain = (
        MemoryFilter(include_sensitive=False),
        lambda m: m.sensitivity != "sensitive",
        "sensitivity",
    )
    # Not by kind: a kind filter scans every row (~4 ms per 1,000 memories each), and a
    # changed kind hides no row from a read that does not ask for kinds; served, it differs.
    return (everything, *by_status, live, plain)


_CENSUS: Final = _census_filters()
_FILTERS: Final = tuple(query for query, _, _ in _CENSUS)
_EVERYTHING: Final = _FILTERS[0]
_TESTS: Final = tuple(enumerate(test for _, test, _ in _CENSUS))


def _marks(memory: MemoryRecord) -> int:
    """The census filters that keep ``memory``, one bit each (bit i: ``_CENSUS[i]``)."""
    marks = 0
    for index, test in _TESTS:
        if test(memory):
            marks |= 1 << index
    return marks


def _counts(fold: Fold) -> list[int]:
    """How many of the fold's memories each census filter keeps (one pass over the marks)."""
    seen = Counter(marks for _, marks in fold.ids())
    counts = [0] * len(_CENSUS)
    for marks, many in seen.items():
        for index in range(len(counts)):
            counts[index] += many * (marks >> index & 1)
    return counts


_REPLAY: Final = (NotFoundError, ConflictError, InvalidInputError, KeyError, TypeError)


class _StaleError(Exception):
    """A memory a saved fold holds was not found in the projection as the fold has it."""


class _Changes(dict[str, MemoryRecord]):
    """The memories a run of events changes, over the fold they start from: a look-up
    falls through to ``look``, and what the events set is collected here (so the fold's
    census counts are kept from what each replaced)."""

    def __init__(self, look: Callable[[str], MemoryRecord | None]) -> None:
        super().__init__()
        self.look = look

    def __missing__(self, memory_id: str) -> MemoryRecord:
        found = self.look(memory_id)
        if found is None:
            raise KeyError(memory_id)
        return found

    def get(self, memory_id: str, default: Any = None) -> Any:
        """As ``dict.get``, falling through to the fold."""
        found = super().get(memory_id)
        if found is None:
            found = self.look(memory_id)
        return default if found is None else found


class _Folding:
    """A whole chain folded as its rows pass (:meth:`through`) into a packed :class:`Fold`:
    the memories the latest rows changed are kept as records (fewer than ``_BATCH``), the
    rest packed; an event that does not replay is kept in ``failed`` (reported once the
    chain verified: a broken chain is the finding to name first)."""

    _BATCH: Final = 128

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.fold = Fold()
        self.failed: Exception | None = None
        self._changes = _Changes(self.fold.get)
        # The rows a finding can be at, to name its memory without reading the chain again:
        # the first (its owner), the latest (where the verification stopped), each
        # redacted one (a redaction no later event names is found at the chain's end) and
        # each redact event (an erased row put back is found at the event that erased it).
        self._kept: dict[int, Record] = {}
        self._latest: tuple[int, Record] | None = None

    def through(self, records: Iterable[Record]) -> Iterator[Record]:
        """Each of ``records``, once it was applied to the fold."""
        changes, kept = self._changes, self._kept
        for at, record in enumerate(records):  # positions, as ``broken_at`` counts them
            self._latest = (at, record)
            if not at or record.entry.redacted or REDACT_TAG in record.entry.tags:
                kept[at] = record
            if self.failed is None:
                try:
                    lifecycle.apply(changes, record, self.owner)
                except _REPLAY as exc:
                    self.failed = exc
                if len(changes) >= self._BATCH:
                    self._flush()
            yield record

    def row(self, at: int) -> tuple[Sequence[Record], int]:
        """The row at position ``at``, if it passed and was kept, and its position (as
        :meth:`ReadCheck.broken` takes rows)."""
        found = self._kept.get(at)
        if found is None and self._latest is not None and self._latest[0] == at:
            found = self._latest[1]
        return ((found,), at) if found is not None else ((), at)

    def done(self) -> Fold:
        """The fold of every row that passed."""
        self._flush()
        return self.fold

    def _flush(self) -> None:
        for memory in self._changes.values():
            self.fold.put(memory, _marks(memory))
        self._changes.clear()


def _about(records: Sequence[Record], at: int) -> str:
    """`` (memory ID)`` for the row at ``at`` when it is about one."""
    if not 0 <= at < len(records):
        return ""
    for tag in records[at].entry.tags:
        if tag.startswith(MEMORY_TAG):
            return f" (memory {tag[len(MEMORY_TAG) :]})"
    return ""

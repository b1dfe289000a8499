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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final, NoReturn

from troth.core import lifecycle
from troth.core.chain import Verification
from troth.core.errors import ConflictError, IntegrityError, InvalidInputError, NotFoundError
from troth.core.events import MEMORY_TAG, Record, check_head, verify_records
from troth.core.records import STATUSES, MemoryRecord
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
    """An owner's chain as this process verified it, and the memories it makes."""

    tip: Tip
    memories: dict[str, MemoryRecord]


class ReadCheck:
    """Holds what is served against each owner's verified chain; refuses what differs."""

    def __init__(self, store: Store, anchor: Anchor | None = None) -> None:
        self.store = store
        self.anchor = anchor
        self._known: dict[str, _Known] = {}
        self._refused: dict[str, IntegrityError] = {}
        self._lock = threading.RLock()

    # -- what readers call ----------------------------------------------------------------

    def served(self, owner: str, memories: Iterable[MemoryRecord]) -> None:
        """Refuse (IntegrityError) unless every memory is the one the owner's chain makes."""
        with self._lock:
            known = self._current(owner)
            for memory in memories:
                self._hold(owner, known, memory)

    def chain(self, owner: str) -> None:
        """Refuse unless the owner's chain verifies to its head and its witnessed checkpoint
        (what a reader of the raw ledger, e.g. a personaxis export, is served from)."""
        with self._lock:
            self._current(owner)

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
        exempt: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        """Refuse a write that read a memory the chain (at ``start``, where the write began)
        does not make; ``exempt``: memories this write itself changed. An owner this
        process has not read yet is held on its first read."""
        with self._lock:
            known = self._known.get(owner)
            if known is None or known.tip != start:
                return
            for memory in memories:
                if memory.id not in exempt:
                    self._hold(owner, known, memory, racing=False)

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

    # -- inside ----------------------------------------------------------------------------

    def _current(self, owner: str) -> _Known:
        refused = self._refused.get(owner)
        if refused is not None:
            raise refused
        known = self._known.get(owner)
        if known is None:
            # The chain, its fold and the projection's census are read in one snapshot:
            # read apart, a write committed between them looks like a row the ledger
            # never made.
            with self.store.snapshot():
                tip = self.store.tip(owner)
                return self._load(owner, tip, lambda start: self.store.records(owner, start))
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
        self._follow(owner, known, tip, lambda start: self.store.records(owner, start))

    def _load(self, owner: str, tip: Tip, rows: Rows) -> _Known:
        # The rows up to the tip read first: a write committed meanwhile is followed later.
        records = list(islice(rows(0), tip.length))
        result = check_head(verify_records(records, owner=owner), tip.length, tip.head)
        if not result.ok:
            self._broken(owner, result, records, 0)
        self._anchor(owner)
        try:
            made = lifecycle.fold(records, owner)
        except (NotFoundError, ConflictError, InvalidInputError, KeyError, TypeError) as exc:
            self.refuse(owner, f"the events of {owner}'s ledger do not replay ({exc})")
        self._census(owner, made)
        known = _Known(Tip(result.length, result.head), made)
        self._known[owner] = known
        return known

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
            self._broken(owner, result, new, start)
        try:
            for record in new:
                lifecycle.apply(known.memories, record, owner)
        except (NotFoundError, ConflictError, InvalidInputError, KeyError, TypeError) as exc:
            self.refuse(owner, f"the events of {owner}'s ledger do not replay ({exc})")
        known.tip = tip

    def _broken(self, owner: str, result: Verification, rows: list[Record], first: int) -> NoReturn:
        """Refuse a chain that does not verify; ``rows`` start at position ``first``."""
        at = result.broken_at or 0
        self.refuse(
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
        made = known.memories.get(memory.id)
        if made is not None and made == memory:  # the common case, first
            return
        if not racing:
            self._refuse_served(owner, memory, made)
        # A read can straddle a commit: a row read just before an edit or a forget, held
        # against the chain read just after it. Read the row again with the chain's tip in
        # one snapshot, and refuse only what the store holds now.
        with self.store.snapshot():
            tip = self.store.tip(owner)
            fresh = self.store.get(owner, memory.id)
        self._catch_up(owner, known, tip)
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

    def _census(self, owner: str, made: Mapping[str, MemoryRecord]) -> None:
        """The stored projection counted against the fold: in all, and by each indexed
        column the reads filter on (status, retrievable, sensitivity), so a row
        inserted, deleted, moved to another owner, or changed in a column that decides
        whether it is listed or recalled at all is found before anything is served."""
        memories = list(made.values())
        for query, test, counted in _CENSUS:
            expected = sum(1 for m in memories if test(m))
            if self.store.count(owner, query) == expected:
                continue
            try:  # only on a finding: name the memory (reading the rows the filter keeps)
                ids = {m.id for m in self.store.memories(owner, query)}
            except IntegrityError as exc:
                self.refuse(owner, exc.message.split("; run `troth")[0], state="projection")
            want = {m.id for m in memories if test(m)}
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
        self._refused[owner] = error
        self._known.pop(owner, None)
        raise error


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
_EVERYTHING: Final = _CENSUS[0][0]


def _about(records: list[Record], at: int) -> str:
    """`` (memory ID)`` for the row at ``at`` when it is about one."""
    if not 0 <= at < len(records):
        return ""
    for tag in records[at].entry.tags:
        if tag.startswith(MEMORY_TAG):
            return f" (memory {tag[len(MEMORY_TAG) :]})"
    return ""

"""Context expansion in SQLite's full-text index: each memory's row holds, in a second
column, the words of its neighbours in the same conversation.

``memory_fts(body, context)``: ``body`` is the memory's own text (``rows.fts_body``),
``context`` that of the nearest memory before and after it by ``seq`` in the same owner,
session, partition and scope that may lend its words (:func:`rows.lends_context`:
active, retrievable, not sensitive). The lexical search weighs ``context`` at
:data:`rows.CONTEXT_WEIGHT` of ``body`` (``bm25(memory_fts, 1.0, 0.2)``): a reply collects the
words of the question it answers (docs/retrieval.md, "Context expansion").

Erasure: a memory's words are in its neighbours' rows, so every change of a memory that
can change what it lends (its text, status, retrievability, sensitivity, session) rewrites
the rows of the memories beside it, in the same transaction (:class:`ContextWrites`); a
redaction's transaction then merges the segments as for the memory's own row.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from troth.core.records import MemoryRecord
from troth.storage.rows import context_key, fts_body, lends_context, memory_from_doc
from troth.storage.sql import lends_context_sql

SESSION: Final = "json_extract(recall, '$[7]')"
"""A row's session as the ``memories_session`` index (migration 0007) holds it."""

_LENDS = lends_context_sql("", " = 1")  # rows.lends_context, as this store's SQL
_NEIGHBOUR = (
    "SELECT rid, doc, seq FROM memories WHERE owner = ? AND " + SESSION + " = ?"
    " AND seq {op} ? AND " + _LENDS + " AND partition = ? AND scope = ? AND rid <> ?"
    " ORDER BY seq {order} LIMIT 1"
)
_RANGE = (
    "SELECT rid, doc, seq FROM memories WHERE owner = ? AND " + SESSION + " = ?"
    " AND seq BETWEEN ? AND ? AND " + _LENDS + " AND partition = ? AND scope = ? ORDER BY seq"
)
_BEFORE = _NEIGHBOUR.format(op="<", order="DESC")
_AFTER = _NEIGHBOUR.format(op=">", order="ASC")
_INSERT = "INSERT INTO memory_fts (rowid, body, context) VALUES (?, ?, ?)"

_log = logging.getLogger(__name__)

Key = tuple[str, str, str, str]  # owner, session, partition, scope


@dataclass(slots=True)
class ContextWrites:
    """The full-text rows one transaction owes: those of the memories it put and of their
    neighbours, written once each by :meth:`flush` before it commits."""

    _touched: dict[int, tuple[MemoryRecord, bool, Key | None]] = field(default_factory=dict)

    def touch(self, rid: int, memory: MemoryRecord, *, new: bool, old: Key | None) -> None:
        """``memory`` was stored at ``rid`` (``new``: it had no row before); ``old`` is the
        conversation its row was in. Put again in the same transaction, what its row was
        before the transaction counts (a redaction puts a memory twice, the second time
        without its session): the index never saw the states between."""
        was = self._touched.get(rid)
        if was is not None:
            new, old = was[1], was[2]
        self._touched[rid] = (memory, new, old)

    def flush(self, db: Any) -> None:
        """Write the owed rows (each memory's row again, and its neighbours' contexts)."""
        if not self._touched:
            return
        touched, self._touched = self._touched, {}
        rows = _Rows(db, {rid: memory for rid, (memory, _, _) in touched.items()})
        dirty = dict.fromkeys(touched)
        groups: dict[Key, list[tuple[int, int]]] = {}
        for rid, (memory, _new, old) in touched.items():
            key = context_key(memory)
            if key is not None:
                groups.setdefault(key, []).append((memory.seq, rid))
            if old is not None and old != key:  # the conversation it left
                dirty.update(dict.fromkeys(rows.beside(rid, old, memory.seq)))
        for key, members in groups.items():
            dirty.update(dict.fromkeys(rows.conversation(key, sorted(members))))
        for rid in sorted(dirty):
            entry = touched.get(rid)
            write_row(db, rid, rows, new=entry is not None and entry[1])


def write_row(db: Any, rid: int, rows: _Rows, *, new: bool) -> None:
    """Replace one memory's full-text row with its body and its neighbours' words."""
    memory = rows.memory(rid)
    body = fts_body(memory)
    key = context_key(memory)
    context = ""
    if key is not None and lends_context(memory):
        context = " ".join(rows.body(n) for n in rows.beside(rid, key, memory.seq))
    if not new:
        db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rid,))
    if body or context:
        db.execute(_INSERT, (rid, body, context))


class _Rows:
    """Memories by rid for one flush: those the transaction put, the rest read once."""

    def __init__(self, db: Any, known: dict[int, MemoryRecord]) -> None:
        self._db = db
        self._known = known
        self._docs: dict[int, str] = {}
        self._bodies: dict[int, str] = {}
        self._beside: dict[tuple[int, Key], list[int]] = {}

    def beside(self, rid: int, key: Key, seq: int) -> list[int]:
        """The rids of the nearest lending memory before and after ``seq`` in ``key``'s
        conversation, ``rid`` itself left out."""
        found = self._beside.get((rid, key))
        if found is None:
            owner, session, partition, scope = key
            found = []
            for statement in (_BEFORE, _AFTER):
                row = self._db.execute(
                    statement, (owner, session, seq, partition, scope, rid)
                ).fetchone()
                if row is not None:
                    found.append(int(row[0]))
                    self._docs.setdefault(int(row[0]), str(row[1]))
            self._beside[(rid, key)] = found
        return found

    def conversation(self, key: Key, members: list[tuple[int, int]]) -> list[int]:
        """The neighbours of these (seq, rid) of one conversation, sorted by seq; the
        neighbours of every lending memory between them are known after it.

        Three statements for the lot (the lending memories in their seq range, the one
        before it and the one after), not two per memory: a batch of a conversation's new
        turns has them next to each other. seq is the creation entry's, unique in an owner.
        """
        owner, session, partition, scope = key
        low, high = members[0][0], members[-1][0]
        line: list[tuple[int, int]] = []  # (seq, rid) of the lending memories, by seq
        before = self._db.execute(_BEFORE, (owner, session, low, partition, scope, -1)).fetchone()
        inside = self._db.execute(_RANGE, (owner, session, low, high, partition, scope))
        after = self._db.execute(_AFTER, (owner, session, high, partition, scope, -1)).fetchone()
        for row in [before, *inside.fetchall(), after]:
            if row is not None:
                line.append((int(row[2]), int(row[0])))
                self._docs.setdefault(int(row[0]), str(row[1]))
        # Every memory on the line but the outer two (found beyond the range) has both its
        # neighbours on it.
        start, end = int(before is not None), len(line) - int(after is not None)
        rids = [rid for _, rid in line]
        for i in range(start, end):
            self._beside[(rids[i], key)] = [rids[j] for j in (i - 1, i + 1) if 0 <= j < len(rids)]
        seqs = [seq for seq, _ in line]
        found: list[int] = []
        for seq, rid in members:
            at = bisect.bisect_left(seqs, seq)
            next_at = at + 1 if at < len(rids) and rids[at] == rid else at
            beside = ([rids[at - 1]] if at > 0 else []) + (
                [rids[next_at]] if next_at < len(rids) else []
            )
            self._beside[(rid, key)] = beside
            found += beside
        return found

    def memory(self, rid: int) -> MemoryRecord:
        known = self._known.get(rid)
        if known is None:
            doc = self._docs.get(rid)
            if doc is None:
                doc = str(
                    self._db.execute("SELECT doc FROM memories WHERE rid = ?", (rid,)).fetchone()[0]
                )
            known = self._known[rid] = memory_from_doc(doc)
        return known

    def body(self, rid: int) -> str:
        text = self._bodies.get(rid)
        if text is None:
            text = self._bodies[rid] = fts_body(self.memory(rid))
        return text


def backfill(db: Any, progress: Callable[[int, int], None] | None = None) -> int:
    """Fill every memory's full-text row, context included (migration 0007 made the table
    anew); how many rows were written. ``progress(done, total)`` is told every 10,000."""
    total = int(db.execute("SELECT count(*) FROM memories").fetchone()[0])
    done = 0
    for group in _conversations(db):
        lending = [i for i, (_, memory) in enumerate(group) if lends_context(memory)]
        bodies = [fts_body(memory) for _, memory in group]
        where = {index: n for n, index in enumerate(lending)}
        for i, (rid, memory) in enumerate(group):
            context = ""
            if i in where and context_key(memory) is not None:
                n = where[i]
                beside = lending[max(n - 1, 0) : n] + lending[n + 1 : n + 2]
                context = " ".join(bodies[j] for j in beside)
            if bodies[i] or context:
                db.execute(_INSERT, (rid, bodies[i], context))
            done += 1
            if done % 10000 == 0:
                if progress is not None:
                    progress(done, total)
                _log.info("full-text index with context: %d of %d memories", done, total)
    return done


def _conversations(db: Any) -> Iterator[list[tuple[int, MemoryRecord]]]:
    """Every memory, grouped by conversation (owner, session, partition, scope) in seq
    order; a memory without a session is a group of its own."""
    rows = db.execute(
        "SELECT rid, doc FROM memories ORDER BY owner, " + SESSION + ", partition, scope, seq"
    )
    group: list[tuple[int, MemoryRecord]] = []
    key: Key | None = None
    for rid, doc in rows:
        memory = memory_from_doc(doc)
        found = context_key(memory)
        if group and (found is None or found != key):
            yield group
            group = []
        group.append((int(rid), memory))
        key = found
    if group:
        yield group

"""A write on SQLite: one ``BEGIN IMMEDIATE`` transaction holding the file's write lock.

:class:`SQLiteTransaction` is what the service writes through while it holds an owner's
chain (``storage.base.Transaction``); :func:`put_memory` keeps a memory's projection row,
its full-text row and its vector in step, for a write and for a rebuild alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from troth.core.chain import Entry
from troth.core.checkpoints import StoredReply
from troth.core.errors import StorageError
from troth.core.events import Record
from troth.core.records import MemoryRecord
from troth.storage import sql
from troth.storage.base import Tip
from troth.storage.rows import memory_docs
from troth.storage.sqlite.context import SESSION, ContextWrites
from troth.storage.sqlite.schema import sqlite3
from troth.storage.vectors import as_vector

_RAW = json.JSONDecoder().raw_decode  # stored JSON has no surrounding blanks
DIALECT = sql.Dialect(
    "?", lambda values: json.dumps(list(values)), lambda text: _RAW(text)[0], write_flag=int
)
"""SQLite's spelling: ``?`` placeholders; a list of strings kept as JSON text."""

_NAMING = sql.SELECT_RECORDS_NAMING.format(contains="instr(meta, ?) > 0")
_MOVE_EPOCH = sql.move_erasure_epoch("meta")
_DROP_REPLIES = "DELETE FROM checkpoint_replies WHERE owner = ? AND instr(response, ?) > 0"
_MOVE_HEAD = (
    "INSERT INTO heads (owner, length, head) VALUES (?,?,?) ON CONFLICT (owner) DO UPDATE"
    " SET length = excluded.length, head = excluded.head"
)

FTS_MERGE_OWED: Final = "fts_merge_owed"
"""The ``meta`` key an erasing transaction sets: until ``optimize`` merges the full-text
segments into one, their pages can still hold an erased term even with FTS5
``secure-delete`` (tests/service/test_erasure.py finds it in the file without the merge);
the transaction that merges them clears it."""


class SQLiteTransaction:
    """An open write on one owner's chain (see ``Transaction`` in ``storage.base``).

    ``dimension`` is the vector index's (None before a model is recorded); ``erased`` says
    whether the write erased text, so the store compacts after it commits.
    """

    def __init__(self, connection: Any, owner: str, dimension: int | None) -> None:
        self._db = connection
        self._owner = owner
        self._dimension = dimension
        self._tip: Tip | None = None
        self.erased = False
        self._epoch_moved = False
        # (rid, vector or None for a deletion), applied to the vector cache after commit.
        self.vector_changes: list[tuple[int, Any]] = []
        # The full-text rows its puts owe, written before it commits (``store.write``).
        self.context = ContextWrites()

    @property
    def owner(self) -> str:
        return self._owner

    def tip(self) -> Tip:
        # Read once: the transaction holds the file's write lock from BEGIN IMMEDIATE, so
        # only its own appends (and rewrites) move the head, and each updates this copy. A
        # write asks for the tip five times (stale check, verification, append, commit,
        # end); each read was a statement of ~27,000 instructions.
        if self._tip is None:
            self._tip = sql.tip_of(self._db.execute(sql.SELECT_TIP, (self._owner,)).fetchone())
        return self._tip

    def records(self, start: int = 0) -> Iterator[Record]:
        rows = self._db.execute(sql.SELECT_RECORDS, (self._owner, start))
        return sql.records_of(rows, DIALECT)

    def records_naming(self, memory_id: str, start: int = 0) -> Iterator[Record]:
        rows = self._db.execute(_NAMING, (self._owner, start, sql.naming(memory_id)))
        return sql.records_of(rows, DIALECT)

    def get(self, memory_id: str) -> MemoryRecord | None:
        return sql.memory_of(self._db.execute(sql.SELECT_DOC, (self._owner, memory_id)).fetchone())

    def append(self, entry: Entry, meta: str | None, texts: Mapping[str, str]) -> int:
        seq = self.tip().length
        values = sql.ledger_values(self._owner, seq, entry, meta, texts, DIALECT)
        self._db.execute(sql.INSERT_LEDGER, values)
        self._db.execute(_MOVE_HEAD, (self._owner, seq + 1, entry.hash))
        self._tip = Tip(seq + 1, entry.hash)
        return seq

    def put(
        self, memory: MemoryRecord, embedding: Sequence[float] | None = None, *, new: bool = False
    ) -> None:
        sql.check_holder(memory, self._owner)
        put_memory(
            self._db,
            memory,
            embedding,
            self._dimension,
            self.vector_changes,
            context=self.context,
            new=new,
        )

    def erase(self, seq: int, entry: Entry, texts: Mapping[str, str]) -> None:
        self._db.execute(sql.ERASE_ROW, sql.erase_values(self._owner, seq, entry, texts, DIALECT))
        self._mark_erased()

    def _mark_erased(self) -> None:
        """Record the erasure as pending in this transaction, and the merge of the full-text
        segments it owes (:data:`FTS_MERGE_OWED`): both commit with the erasure, so an
        erasure whose process dies before finishing it is finished on the next open."""
        if not self.erased:
            self._db.execute("INSERT INTO pending_erasures (owner) VALUES (?)", (self._owner,))
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO NOTHING",
                (FTS_MERGE_OWED,),
            )
        self.erased = True

    def note_erasure(self) -> None:
        if not self._epoch_moved:
            self._db.execute(_MOVE_EPOCH)
            self._epoch_moved = True

    def rewrite(self, seq: int, entry: Entry) -> None:
        self._db.execute(sql.REWRITE_ROW, sql.rewrite_values(self._owner, seq, entry, DIALECT))
        self._db.execute(
            "UPDATE heads SET head = ? WHERE owner = ? AND length = ?",
            (entry.hash, self._owner, seq + 1),
        )
        if self._tip is not None and self._tip.length == seq + 1:
            self._tip = Tip(seq + 1, entry.hash)

    def find_reply(self, message_id: str) -> StoredReply | None:
        row = self._db.execute(sql.FIND_REPLY, (self._owner, message_id)).fetchone()
        return sql.reply_of(self._owner, message_id, row)

    def save_reply(self, reply: StoredReply) -> None:
        self._db.execute(sql.SAVE_REPLY, sql.reply_values(self._owner, reply))

    def drop_replies(self, containing: bytes) -> int:
        cursor = self._db.execute(_DROP_REPLIES, (self._owner, containing))
        if cursor.rowcount:
            self._mark_erased()
        return int(cursor.rowcount)


def bump_generation(db: Any, owner: str) -> int:
    """Move the owner's vector generation on; the new number.

    A counter per owner that moves with every change of its vectors, so that a cached
    copy (in this process or another) knows when it is out of date.
    """
    row = db.execute(
        "INSERT INTO vector_generations (owner, gen) VALUES (?, 1) ON CONFLICT (owner)"
        " DO UPDATE SET gen = gen + 1 RETURNING gen",
        (owner,),
    ).fetchone()
    return int(row[0])


def put_memory(
    db: Any,
    memory: MemoryRecord,
    embedding: Sequence[float] | None,
    dimension: int | None,
    changes: list[tuple[int, Any]] | None = None,
    *,
    context: ContextWrites,
    new: bool = False,
) -> None:
    """Insert or replace a memory's projection row and vector, and owe its full-text row
    (and its neighbours', ``context``: written when the transaction flushes it).

    ``changes`` collects (rid, vector or None) for the in-process vector copy; ``new``: the
    id was minted for a new memory, so a stored one with that id fails the write.
    """
    row = (
        None
        if new
        else db.execute(
            f"SELECT rid, owner, {SESSION}, partition, scope FROM memories WHERE id = ?",
            (memory.id,),
        ).fetchone()
    )
    if row is not None and row[1] != memory.owner:
        # Ids are unique across owners: another owner's memory is never replaced.
        raise StorageError(
            f"memory id {memory.id} is already taken; nothing was written", id=memory.id
        )
    doc, recall = memory_docs(memory)
    values = (
        memory.owner,
        memory.status,
        int(memory.retrievable),
        memory.kind,
        str(memory.scope),
        memory.partition,
        memory.sensitivity,
        memory.seq,
        memory.updated_at,
        doc,
        recall,
    )
    if row is None:
        try:
            cursor = db.execute(
                "INSERT INTO memories (owner, status, retrievable, kind, scope, partition,"
                " sensitivity, seq, updated_at, doc, recall, id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (*values, memory.id),
            )
        except sqlite3.IntegrityError as exc:
            raise StorageError(
                f"memory id {memory.id} is already taken; nothing was written", id=memory.id
            ) from exc
        rid = cursor.lastrowid
    else:
        rid = row[0]
        db.execute(
            "UPDATE memories SET owner = ?, status = ?, retrievable = ?, kind = ?, scope = ?,"
            " partition = ?, sensitivity = ?, seq = ?, updated_at = ?, doc = ?, recall = ?"
            " WHERE rid = ?",
            (*values, rid),
        )
    old = None if row is None or row[2] is None else (row[1], str(row[2]), row[3], row[4])
    context.touch(rid, memory, new=row is None, old=old)
    if dimension is None:
        return
    live = memory.searchable
    if embedding is not None and live:
        vector = as_vector(embedding, dimension)
        if row is not None:
            db.execute("DELETE FROM memory_vec WHERE rowid = ?", (rid,))
        db.execute(
            "INSERT INTO memory_vec (rowid, owner, embedding) VALUES (?, ?, ?)",
            (rid, memory.owner, vector.tobytes()),
        )
        if changes is not None:
            changes.append((rid, vector))
    elif not live and row is not None:
        cursor = db.execute("DELETE FROM memory_vec WHERE rowid = ?", (rid,))
        if cursor.rowcount and changes is not None:
            changes.append((rid, None))

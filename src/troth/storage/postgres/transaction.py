"""A write on PostgreSQL: the owner's ``heads`` row locked, rows buffered and pipelined.

Appends to one owner's chain are serialised by a row lock on that owner's ``heads`` row
(inserted if missing, then ``SELECT … FOR UPDATE``); different owners never wait for each
other. :class:`PostgresTransaction` is what the service writes through while it holds the
chain (``storage.base.Transaction``); :func:`memory_row` is a memory's row, for a write
and for a rebuild alike.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from typing import Any

import psycopg

from troth.core.chain import Entry, sha256_hex
from troth.core.checkpoints import StoredReply
from troth.core.errors import StorageError
from troth.core.events import Record
from troth.core.records import MemoryRecord
from troth.storage import sql
from troth.storage.base import Tip, stale_tip
from troth.storage.postgres import context
from troth.storage.postgres.schema import TEXT_SEARCH_CONFIG
from troth.storage.rows import fts_body, memory_docs, memory_from_doc

DIALECT = sql.Dialect("%s", list, list)
"""PostgreSQL's spelling: ``%s`` placeholders; a list of strings as an array or JSON
array, which psycopg reads back as a list."""
_MOVE_EPOCH = sql.move_erasure_epoch("store_meta")
_RECORDS = DIALECT.sql(sql.SELECT_RECORDS)
_NAMING = DIALECT.sql(sql.SELECT_RECORDS_NAMING.format(contains="strpos(meta, ?) > 0"))
_DOC = DIALECT.sql(sql.SELECT_DOC)
_ERASE_ROW = DIALECT.sql(sql.ERASE_ROW)
_REWRITE_ROW = DIALECT.sql(sql.REWRITE_ROW)
_FIND_REPLY = DIALECT.sql(sql.FIND_REPLY)
_SAVE_REPLY = DIALECT.sql(sql.SAVE_REPLY)


def vector_literal(embedding: Sequence[float]) -> str:
    """pgvector's text form of a vector: ``"[0.1, -0.2, …]"``."""
    values = embedding.tolist() if hasattr(embedding, "tolist") else embedding
    return repr([float(x) for x in values])


_LOCK_HEAD = "SELECT length, head FROM heads WHERE owner = %s FOR UPDATE"
_NEW_HEAD = (
    "INSERT INTO heads (owner, length, head) VALUES (%s, 0, '') ON CONFLICT (owner) DO NOTHING"
)
_INSERT_LEDGER = DIALECT.sql(sql.INSERT_LEDGER)
# Without a new embedding the stored one is kept while the text is unchanged and the
# memory active and retrievable; it is dropped when it leaves retrieval or its text
# changed (an erased text leaves no vector behind).
_MEMORY_INTO = (
    "INSERT INTO memories AS m (owner, id, status, retrievable, kind, scope, partition,"
    " sensitivity, tags, seq, updated_at, digest, doc, recall, body, embedding)"
)
# A memory row's parameters (``_memory_row``'s keys) in the order its values take them:
# named for the bulk statements, positional for the one-statement append.
_MEMORY_PARAMS = (
    "owner", "id", "status", "retrievable", "kind", "scope", "partition", "sensitivity",
    "tags", "seq", "updated_at", "digest", "doc", "recall", "config", "body", "vector",
)  # fmt: skip
_MEMORY_VALUES_OF = (
    "{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {},"
    " setweight(to_tsvector({}::regconfig, {}), 'A'), {}::vector"
)
_MEMORY_VALUES = _MEMORY_VALUES_OF.format(*(f"%({name})s" for name in _MEMORY_PARAMS))
_INSERT_MEMORY = f"{_MEMORY_INTO} VALUES ({_MEMORY_VALUES})"  # a new id: a clash fails
UPSERT_MEMORY = (
    f"{_INSERT_MEMORY}"
    " ON CONFLICT (owner, id) DO UPDATE SET status = excluded.status,"
    " retrievable = excluded.retrievable, kind = excluded.kind, scope = excluded.scope,"
    " partition = excluded.partition, sensitivity = excluded.sensitivity,"
    " tags = excluded.tags, seq = excluded.seq, updated_at = excluded.updated_at,"
    " digest = excluded.digest, doc = excluded.doc, recall = excluded.recall,"
    " body = excluded.body,"
    " embedding = CASE WHEN excluded.retrievable AND excluded.status = 'active'"
    " AND excluded.doc::jsonb ->> 'content' <> '' THEN coalesce(excluded.embedding,"
    " CASE WHEN m.digest = excluded.digest THEN m.embedding END) END"
)
# One new entry creating one new memory, on the tip the writer expects, in one statement
# and one round trip: the heads row moves only if it still holds the expected tip (the
# update waits for a concurrent writer's lock and then re-reads the row), and the inserts
# take their rows from that update, so a moved chain writes nothing and returns 0.
# Its parameters are positional: the new tip, the owner and the expected tip, then the
# ledger row's values after its owner, then the memory row's in ``_MEMORY_PARAMS`` order.
_APPEND_EXPECTED = (
    "WITH claim AS (UPDATE heads SET length = %s, head = %s"
    " WHERE owner = %s AND length = %s AND head = %s RETURNING owner),"
    f" entry AS (INSERT INTO ledger ({sql.LEDGER_COLUMNS})"
    f" SELECT owner, {', '.join(['%s'] * (len(sql.LEDGER_NAMES) - 1))} FROM claim),"
    f" memory AS ({_MEMORY_INTO}"
    f" SELECT {_MEMORY_VALUES_OF.format(*['%s'] * len(_MEMORY_PARAMS))} FROM claim)"
    " SELECT count(*) FROM claim"
)


def memory_row(memory: MemoryRecord, embedding: Sequence[float] | None) -> dict[str, Any]:
    """The parameters of ``_INSERT_MEMORY`` and ``UPSERT_MEMORY`` for one memory."""
    body = fts_body(memory)
    live = memory.searchable
    doc, recall = memory_docs(memory)
    return {
        "owner": memory.owner,
        "id": memory.id,
        "status": memory.status,
        "retrievable": memory.retrievable,
        "kind": memory.kind,
        "scope": str(memory.scope),
        "partition": memory.partition,
        "sensitivity": memory.sensitivity,
        "tags": list(memory.tags),
        "seq": memory.seq,
        "updated_at": memory.updated_at,
        "digest": sha256_hex(body),
        "doc": doc,
        "recall": recall,
        "config": TEXT_SEARCH_CONFIG,
        "body": body,
        "vector": None if embedding is None or not live else vector_literal(embedding),
    }


class PostgresTransaction:
    """An open write on one owner's chain, holding the owner's ``heads`` row lock.

    Rows are buffered and sent in bulk (``executemany``, which psycopg pipelines: one
    round trip per statement kind, not per row) when the block ends, or earlier when a read
    needs them. The tip is read once under the lock and kept here: no other transaction
    can move it while the lock is held.

    A transaction opened on an expected tip (``held=False``) starts without the lock and
    without a round trip. The first read takes the lock (BEGIN, lock, compare the tip);
    a transaction that read nothing and made one entry creating one memory commits as
    the single statement ``_APPEND_EXPECTED``. Until it holds the lock there is no open
    transaction on the connection: a statement sent outside this object's methods would
    commit on its own (the store's ``_transaction`` takes the lock first).
    """

    def __init__(
        self,
        connection: psycopg.Connection[Any],
        owner: str,
        tip: Tip,
        *,
        held: bool = True,
        append_cursor: Callable[[], psycopg.Cursor[Any]] | None = None,
    ):
        self._db = connection
        self._append_cursor = append_cursor or connection.cursor
        self._owner = owner
        self._tip = tip
        self._stored_tip = tip
        self._held = held
        self._stale = False
        self._ledger: list[tuple[Any, ...]] = []
        self._rows: list[tuple[str, dict[str, Any]]] = []  # (statement, parameters)
        self._pending: dict[str, str] = {}  # memory id -> its buffered document
        # Memories whose full-text context (and their neighbours') the next flush rewrites,
        # and those of them that had a row before (their old neighbours are found first).
        self._context: dict[str, bool] = {}
        self.erased = False
        #: Whether the transaction forgot a memory or erased text (``note_erasure``).
        self.erasure_noted = False

    @property
    def owner(self) -> str:
        return self._owner

    def hold(self) -> None:
        """Take the lock an expected-tip transaction put off, and check the tip under it.

        A moved tip rolls the transaction back and leaves it stale: every later use
        raises again, so a caller that caught the error cannot commit on the old tip.
        """
        if self._stale:
            raise stale_tip(self._owner)
        if self._held:
            return
        self._db.execute("BEGIN")
        found = lock_head(self._db, self._owner)
        if found != self._stored_tip:
            self._stale = True
            self._db.execute("ROLLBACK")
            raise stale_tip(self._owner)
        self._held = True

    def flush(self) -> None:
        """Send the buffered rows and the moved head."""
        self.hold()
        if self._ledger:
            with self._db.cursor() as cursor:
                cursor.executemany(_INSERT_LEDGER, self._ledger)
            self._ledger = []
        touched, self._context = self._context, {}
        # The neighbours a changed memory had before its row changes (a redaction erases
        # the session that finds them), then its row, then every context they touch.
        existing = [memory_id for memory_id, new in touched.items() if not new]
        before = (
            [r[0] for r in self._db.execute(context.NEAR, (self._owner, existing))]
            if existing
            else []
        )
        # Consecutive rows of one statement go together; the order of rows is kept.
        for statement, group in itertools.groupby(self._rows, key=lambda r: r[0]):
            with self._db.cursor() as cursor:
                cursor.executemany(statement, [params for _, params in group])
        self._rows = []
        if touched:
            ids = sorted({*touched, *before})
            self._db.execute(context.REFRESH, (self._owner, self._owner, ids))
        self._pending = {}
        if self._tip != self._stored_tip:
            self._db.execute(
                "UPDATE heads SET length = %s, head = %s WHERE owner = %s",
                (self._tip.length, self._tip.head, self._owner),
            )
            self._stored_tip = self._tip

    def commit_expected(self) -> None:
        """End an expected-tip transaction: one statement if it can, else flush and COMMIT."""
        if not self._held and not self._stale:
            if not self._ledger and not self._rows:
                return  # nothing to write, and no transaction was opened
            if (
                len(self._ledger) == 1
                and len(self._rows) == 1
                and self._rows[0][0] == _INSERT_MEMORY
                and not self._context
            ):
                self._append_expected()
                return
        self.flush()  # takes the lock first (and raises again if the tip was found moved)
        self._db.execute("COMMIT")

    def _append_expected(self) -> None:
        """The one buffered entry and memory as ``_APPEND_EXPECTED``; a moved tip raises."""
        memory = self._rows[0][1]
        params = (
            self._tip.length,
            self._tip.head,
            self._owner,
            self._stored_tip.length,
            self._stored_tip.head,
            *self._ledger[0][1:],
            *[memory[name] for name in _MEMORY_PARAMS],
        )
        row = self._append_cursor().execute(_APPEND_EXPECTED, params).fetchone()
        if not row or row[0] != 1:
            raise stale_tip(self._owner)

    def tip(self) -> Tip:
        return self._tip

    def records(self, start: int = 0) -> Iterator[Record]:
        self.flush()
        return sql.records_of(self._db.execute(_RECORDS, (self._owner, start)), DIALECT)

    def records_naming(self, memory_id: str, start: int = 0) -> Iterator[Record]:
        self.flush()
        rows = self._db.execute(_NAMING, (self._owner, start, sql.naming(memory_id)))
        return sql.records_of(rows, DIALECT)

    def get(self, memory_id: str) -> MemoryRecord | None:
        doc = self._pending.get(memory_id)
        if doc is not None:
            return memory_from_doc(doc)
        self.hold()
        return sql.memory_of(self._db.execute(_DOC, (self._owner, memory_id)).fetchone())

    def append(self, entry: Entry, meta: str | None, texts: Mapping[str, str]) -> int:
        seq = self._tip.length
        self._ledger.append(sql.ledger_values(self._owner, seq, entry, meta, texts, DIALECT))
        self._tip = Tip(seq + 1, entry.hash)
        return seq

    def put(
        self, memory: MemoryRecord, embedding: Sequence[float] | None = None, *, new: bool = False
    ) -> None:
        sql.check_holder(memory, self._owner)
        row = memory_row(memory, embedding)
        self._rows.append((_INSERT_MEMORY if new else UPSERT_MEMORY, row))
        self._pending[memory.id] = row["doc"]
        # A new memory outside any conversation lends and takes no words: nothing to rewrite.
        if not new or memory.session is not None:
            self._context.setdefault(memory.id, new)  # put twice: new if it was the first time

    def erase(self, seq: int, entry: Entry, texts: Mapping[str, str]) -> None:
        self.flush()
        self._db.execute(_ERASE_ROW, sql.erase_values(self._owner, seq, entry, texts, DIALECT))
        self._mark_erased()

    def _mark_erased(self) -> None:
        """Record the erasure as pending in this transaction (with its transaction id): it
        commits with the erasure, so one whose process dies first is finished on open."""
        if not self.erased:
            self._db.execute("INSERT INTO pending_erasures (owner) VALUES (%s)", (self._owner,))
        self.erased = True

    def note_erasure(self) -> None:
        if not self.erasure_noted:
            # The epoch's row stays locked until this transaction ends: two owners'
            # erasures commit one after the other (they are rare, and short).
            self.hold()
            self._db.execute(_MOVE_EPOCH)
            self.erasure_noted = True

    def rewrite(self, seq: int, entry: Entry) -> None:
        self.flush()
        self._db.execute(_REWRITE_ROW, sql.rewrite_values(self._owner, seq, entry, DIALECT))
        if self._tip.length == seq + 1:
            self._tip = Tip(self._tip.length, entry.hash)

    def find_reply(self, message_id: str) -> StoredReply | None:
        self.hold()
        row = self._db.execute(_FIND_REPLY, (self._owner, message_id)).fetchone()
        return sql.reply_of(self._owner, message_id, row)

    def save_reply(self, reply: StoredReply) -> None:
        values = sql.reply_values(self._owner, reply)
        self.hold()
        self._db.execute(_SAVE_REPLY, values)

    def drop_replies(self, containing: bytes) -> int:
        # Counted by the server: in pipeline mode a cursor's rowcount is not known yet.
        self.hold()
        row = self._db.execute(
            "WITH d AS (DELETE FROM checkpoint_replies WHERE owner = %s"
            " AND position(%s::bytea in response) > 0 RETURNING 1) SELECT count(*) FROM d",
            (self._owner, containing),
        ).fetchone()
        dropped = int(row[0]) if row else 0
        if dropped:
            self._mark_erased()
        return dropped


def idle(db: psycopg.Connection[Any]) -> bool:
    """Whether ``db`` holds no transaction (a write or a snapshot reads its own view)."""
    return db.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def roll_back(db: psycopg.Connection[Any]) -> None:
    """Roll back what a failed pipeline left: the server then holds an open (or aborted)
    transaction."""
    if not db.closed and not idle(db):
        with suppress(psycopg.Error):
            db.execute("ROLLBACK")


def lock_head(db: psycopg.Connection[Any], owner: str) -> Tip:
    """Lock the owner's heads row (made on its first write) and read the tip under it."""
    row = db.execute(_LOCK_HEAD, (owner,)).fetchone()
    if row is None:
        db.execute(_NEW_HEAD, (owner,))
        row = db.execute(_LOCK_HEAD, (owner,)).fetchone()
    assert row is not None  # inserted above, or by a concurrent first write
    return Tip(int(row[0]), str(row[1]))


# The memories table's unique indexes: (owner, id) and, across owners, (id).
_ID_CONSTRAINTS = ("memories_pkey", "memories_id")


def write_error(exc: psycopg.Error, owner: str) -> StorageError:
    """The error a write the database refused raises; a taken memory id says so as SQLite's
    store does (``Transaction.put`` with ``new``, or an id another owner holds)."""
    if isinstance(exc, psycopg.errors.UniqueViolation) and exc.diag.constraint_name in (
        _ID_CONSTRAINTS
    ):
        detail = exc.diag.message_detail or ""
        return StorageError(
            f"a memory id is already taken ({detail}); nothing was written", owner=owner
        )
    return StorageError(f"the write could not be committed: {exc}", owner=owner)

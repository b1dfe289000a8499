"""The server backend: PostgreSQL with pgvector, any number of processes writing at once.

Appends to one owner's chain are serialised by a row lock on that owner's ``heads`` row
(inserted if missing, then ``SELECT … FOR UPDATE``); different owners never wait for each
other. Every table is keyed by owner first, so the schema distributes by owner on Citus.
Full text is PostgreSQL's own (``tsvector`` + GIN); vectors are pgvector with an HNSW index
once the embedder's dimension is known. Schema migrations are the numbered files in
``storage/migrations/postgres`` and are applied on start under an advisory lock.

Erasure: after a transaction that erased text commits, :meth:`PostgresStore.compact`
rewrites the tables the text lived in (``VACUUM FULL``: heap, TOAST and every index are
written anew and the old files unlinked). What remains in WAL and backups is stated in
docs/operations.md.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from importlib import resources
from typing import Any

import psycopg
from psycopg import sql

from troth.core.access import TokenRecord
from troth.core.chain import Entry, sha256_hex
from troth.core.checkpoints import StoredReply
from troth.core.errors import IntegrityError, InvalidInputError, StorageError
from troth.core.events import Record
from troth.core.query import Term
from troth.core.records import MemoryRecord
from troth.storage.base import Hit, MemoryFilter, RecallRow, Tip, stale_tip
from troth.storage.rows import (
    TOKEN_COLUMNS,
    fts_body,
    memory_doc,
    memory_from_doc,
    recall_row,
    stored_json,
    token_record,
)
from troth.storage.sql import PROJECTION_COLUMNS, checked_projection

TEXT_SEARCH_CONFIG = "english"
# The projection columns verify holds against each stored document (see ``projection``).
_CHECKED_COLUMNS = (*PROJECTION_COLUMNS, "tags", "digest")
# Tables that hold erasable text; compact() rewrites them after an erasure.
ERASABLE_TABLES = ("ledger", "memories", "checkpoint_replies")
_MIGRATION_LOCK = 0x6C6D5F6D6967  # "lm_mig": one migrator at a time
# "lm_bulk": bulk loads hold it shared; whoever builds the vector index holds it alone, so
# an index is never built while a load runs, nor twice at once.
_BULK_LOCK = 0x6C6D5F62756C6B
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations() -> list[tuple[int, str, str]]:
    """The numbered schema migrations shipped in the package: (version, name, SQL)."""
    folder = resources.files("troth.storage").joinpath("migrations/postgres")
    out = []
    for item in folder.iterdir():
        found = _MIGRATION_NAME.match(item.name)
        if found:
            out.append((int(found.group(1)), item.name, item.read_text(encoding="utf-8")))
    return sorted(out)


def tsquery_text(terms: Sequence[Term]) -> str:
    """A ``to_tsquery`` input ORing the terms, each quoted so no input reaches its syntax."""
    parts = []
    for term in terms:
        quoted = "'" + term.text.replace("\\", "\\\\").replace("'", "''") + "'"
        parts.append(quoted + (":*" if term.prefix else ""))
    return " | ".join(parts)


def _texts(texts: Mapping[str, str]) -> str | None:
    return stored_json(dict(texts)) if texts else None


def _vector(embedding: Sequence[float]) -> str:
    values = embedding.tolist() if hasattr(embedding, "tolist") else embedding
    return repr([float(x) for x in values])  # "[0.1, -0.2, …]": pgvector's text form


# A vector search's settings, for its transaction only (pgvector >= 0.8 knows both).
_SEARCH_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', %s, true),"
    " set_config('hnsw.iterative_scan', 'relaxed_order', true)"
)
_LOCK_HEAD = "SELECT length, head FROM heads WHERE owner = %s FOR UPDATE"
_NEW_HEAD = (
    "INSERT INTO heads (owner, length, head) VALUES (%s, 0, '') ON CONFLICT (owner) DO NOTHING"
)
# The ledger's columns, in the order _Transaction.append buffers a row's values.
_LEDGER_NAMES = (
    "owner", "seq", "ts", "content", "source", "tags", "content_hash", "prev_hash", "hash",
    "redacted", "meta", "texts",
)  # fmt: skip
_LEDGER_COLUMNS = ", ".join(_LEDGER_NAMES)
_INSERT_LEDGER = f"INSERT INTO ledger ({_LEDGER_COLUMNS}) VALUES ({', '.join(['%s'] * 12)})"
# Without a new embedding the stored one is kept while the text is unchanged and the
# memory active and retrievable; it is dropped when it leaves retrieval or its text
# changed (an erased text leaves no vector behind).
_MEMORY_INTO = (
    "INSERT INTO memories AS m (owner, id, status, retrievable, kind, scope, partition,"
    " sensitivity, tags, seq, updated_at, digest, doc, body, embedding)"
)
# A memory row's parameters (``_memory_row``'s keys) in the order its values take them:
# named for the bulk statements, positional for the one-statement append.
_MEMORY_PARAMS = (
    "owner", "id", "status", "retrievable", "kind", "scope", "partition", "sensitivity",
    "tags", "seq", "updated_at", "digest", "doc", "config", "body", "vector",
)  # fmt: skip
_MEMORY_VALUES_OF = (
    "{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, to_tsvector({}::regconfig, {}), {}::vector"
)
_MEMORY_VALUES = _MEMORY_VALUES_OF.format(*(f"%({name})s" for name in _MEMORY_PARAMS))
_INSERT_MEMORY = f"{_MEMORY_INTO} VALUES ({_MEMORY_VALUES})"  # a new id: a clash fails
_UPSERT_MEMORY = (
    f"{_INSERT_MEMORY}"
    " ON CONFLICT (owner, id) DO UPDATE SET status = excluded.status,"
    " retrievable = excluded.retrievable, kind = excluded.kind, scope = excluded.scope,"
    " partition = excluded.partition, sensitivity = excluded.sensitivity,"
    " tags = excluded.tags, seq = excluded.seq, updated_at = excluded.updated_at,"
    " digest = excluded.digest, doc = excluded.doc, body = excluded.body,"
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
    f" entry AS (INSERT INTO ledger ({_LEDGER_COLUMNS})"
    f" SELECT owner, {', '.join(['%s'] * (len(_LEDGER_NAMES) - 1))} FROM claim),"
    f" memory AS ({_MEMORY_INTO}"
    f" SELECT {_MEMORY_VALUES_OF.format(*['%s'] * len(_MEMORY_PARAMS))} FROM claim)"
    " SELECT count(*) FROM claim"
)


def _memory_row(memory: MemoryRecord, embedding: Sequence[float] | None) -> dict[str, Any]:
    """The parameters of ``_INSERT_MEMORY`` and ``_UPSERT_MEMORY`` for one memory."""
    body = fts_body(memory)
    live = memory.searchable
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
        "doc": memory_doc(memory),
        "config": TEXT_SEARCH_CONFIG,
        "body": body,
        "vector": None if embedding is None or not live else _vector(embedding),
    }


class _Transaction:
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
        store: PostgresStore,
        connection: psycopg.Connection[Any],
        owner: str,
        tip: Tip,
        *,
        held: bool = True,
    ):
        self._store = store
        self._db = connection
        self._owner = owner
        self._tip = tip
        self._stored_tip = tip
        self._held = held
        self._stale = False
        self._ledger: list[tuple[Any, ...]] = []
        self._rows: list[tuple[str, dict[str, Any]]] = []  # (statement, parameters)
        self._pending: dict[str, str] = {}  # memory id -> its buffered document
        self.erased = False

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
        found = self._store._lock_head(self._db, self._owner)
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
        # Consecutive rows of one statement go together; the order of rows is kept.
        for statement, group in itertools.groupby(self._rows, key=lambda r: r[0]):
            with self._db.cursor() as cursor:
                cursor.executemany(statement, [params for _, params in group])
        self._rows = []
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
        row = self._store._append_cursor(self._db).execute(_APPEND_EXPECTED, params).fetchone()
        if not row or row[0] != 1:
            raise stale_tip(self._owner)

    def tip(self) -> Tip:
        return self._tip

    def records(self, start: int = 0) -> Iterator[Record]:
        self.flush()
        return self._store._records(self._db, self._owner, start)

    def get(self, memory_id: str) -> MemoryRecord | None:
        doc = self._pending.get(memory_id)
        if doc is not None:
            return memory_from_doc(doc)
        self.hold()
        return self._store._get(self._db, self._owner, memory_id)

    def append(self, entry: Entry, meta: str | None, texts: Mapping[str, str]) -> int:
        seq = self._tip.length
        self._ledger.append(
            (
                self._owner,
                seq,
                entry.ts,
                entry.content,
                entry.source,
                stored_json(list(entry.tags)),
                entry.content_hash,
                entry.prev_hash,
                entry.hash,
                entry.redacted,
                meta,
                _texts(texts),
            )
        )
        self._tip = Tip(seq + 1, entry.hash)
        return seq

    def put(
        self, memory: MemoryRecord, embedding: Sequence[float] | None = None, *, new: bool = False
    ) -> None:
        if memory.owner != self._owner:
            raise InvalidInputError(
                f"memory {memory.id} belongs to {memory.owner}, not {self._owner}", id=memory.id
            )
        row = _memory_row(memory, embedding)
        self._rows.append((_INSERT_MEMORY if new else _UPSERT_MEMORY, row))
        self._pending[memory.id] = row["doc"]

    def erase(self, seq: int, entry: Entry, texts: Mapping[str, str]) -> None:
        self.flush()
        self._db.execute(
            "UPDATE ledger SET content = %s, redacted = %s, texts = %s WHERE owner = %s AND seq = %s",
            (entry.content, entry.redacted, _texts(texts), self._owner, seq),
        )
        self.erased = True

    def rewrite(self, seq: int, entry: Entry) -> None:
        self.flush()
        self._db.execute(
            "UPDATE ledger SET ts = %s, content = %s, source = %s, tags = %s, content_hash = %s,"
            " prev_hash = %s, hash = %s, redacted = %s WHERE owner = %s AND seq = %s",
            (
                entry.ts,
                entry.content,
                entry.source,
                stored_json(list(entry.tags)),
                entry.content_hash,
                entry.prev_hash,
                entry.hash,
                entry.redacted,
                self._owner,
                seq,
            ),
        )
        if self._tip.length == seq + 1:
            self._tip = Tip(self._tip.length, entry.hash)

    def find_reply(self, message_id: str) -> StoredReply | None:
        self.hold()
        row = self._db.execute(
            "SELECT request_checksum, response FROM checkpoint_replies"
            " WHERE owner = %s AND message_id = %s",
            (self._owner, message_id),
        ).fetchone()
        return None if row is None else StoredReply(self._owner, message_id, row[0], bytes(row[1]))

    def save_reply(self, reply: StoredReply) -> None:
        if reply.owner != self._owner:
            raise StorageError(
                f"a reply for {reply.owner} cannot be kept while holding {self._owner}'s chain",
                owner=reply.owner,
            )
        self.hold()
        self._db.execute(
            "INSERT INTO checkpoint_replies (owner, message_id, request_checksum, response)"
            " VALUES (%s, %s, %s, %s)",
            (reply.owner, reply.message_id, reply.request_checksum, reply.response),
        )

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
            self.erased = True
        return dropped


class PostgresStore:
    """The ``Store`` on a PostgreSQL database (``postgresql://…``)."""

    def __init__(self, url: str, *, compact_after_erase: bool = True) -> None:
        self.url = url
        self.compact_after_erase = compact_after_erase
        self._local = threading.local()
        self._connections: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._iterative_scan: bool | None = None  # known after the first vector query
        self.migrate()
        model = self.vector_model()
        if model is not None and not self._has_vector_index(model[1]):
            # The index a bulk load left out when it stopped before its build; while another
            # load runs, that load builds it when it ends.
            self._build_vector_index(model[1], wait=False)

    # -- connections and schema ----------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        db: psycopg.Connection[Any] | None = getattr(self._local, "db", None)
        if db is None or db.closed:
            try:
                db = psycopg.connect(self.url, autocommit=True)
            except psycopg.Error as exc:
                raise StorageError(f"cannot connect to the database: {exc}") from exc
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        return db

    def _append_cursor(self, db: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
        """One cursor per connection for the one-statement append, kept: a new cursor per
        write would set up its adapters again each time."""
        cursor: psycopg.Cursor[Any] | None = getattr(self._local, "append_cursor", None)
        if cursor is None or cursor.connection is not db:
            cursor = db.cursor()
            self._local.append_cursor = cursor
        return cursor

    def schema_version(self) -> int:
        """The highest migration applied to the database (0 for a fresh one)."""
        db = self._connection()
        found = db.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
        if not (found and found[0]):
            return 0
        row = db.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
        return int(row[0]) if row else 0

    def migrate(self) -> list[int]:
        """Apply every shipped migration the database lacks; returns the versions applied."""
        db = self._connection()
        applied: list[int] = []
        try:
            with db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY,"
                    " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                done = {r[0] for r in db.execute("SELECT version FROM schema_version")}
                for version, name, text in migrations():
                    if version in done:
                        continue
                    db.execute(text.encode("utf-8"))
                    db.execute(
                        "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                        (version, name),
                    )
                    applied.append(version)
        except psycopg.Error as exc:
            raise StorageError(f"the database schema could not be migrated: {exc}") from exc
        return applied

    def _ensure_vector_index(self, dimension: int) -> None:
        name = f"memories_embedding_{dimension}"
        self._connection().execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON memories USING hnsw"
                " ((embedding::vector({})) vector_cosine_ops) WHERE embedding IS NOT NULL"
            ).format(sql.Identifier(name), sql.Literal(dimension))
        )

    def _has_vector_index(self, dimension: int) -> bool:
        row = (
            self._connection()
            .execute("SELECT to_regclass(%s) IS NOT NULL", (f"memories_embedding_{dimension}",))
            .fetchone()
        )
        return bool(row and row[0])

    def _build_vector_index(
        self, dimension: int, *, wait: bool, build_memory: str | None = None
    ) -> bool:
        """Make the index under the bulk lock held alone; False when a load holds it (and
        ``wait`` is off). ``build_memory`` is the session's ``maintenance_work_mem``."""
        db = self._connection()
        try:
            if wait:
                db.execute("SELECT pg_advisory_lock(%s)", (_BULK_LOCK,))
            else:
                got = db.execute("SELECT pg_try_advisory_lock(%s)", (_BULK_LOCK,)).fetchone()
                if not (got and got[0]):
                    return False
            try:
                if build_memory is not None:
                    db.execute(
                        "SELECT set_config('maintenance_work_mem', %s, false)", (build_memory,)
                    )
                self._ensure_vector_index(dimension)
            finally:
                if build_memory is not None:
                    db.execute("RESET maintenance_work_mem")
                db.execute("SELECT pg_advisory_unlock(%s)", (_BULK_LOCK,))
        except psycopg.Error as exc:
            raise StorageError(f"the vector index could not be built: {exc}") from exc
        return True

    @contextmanager
    def bulk_load(self, *, build_memory: str = "1GB") -> Iterator[None]:
        """Drop the HNSW index for a large load and build it once when the load ends.

        Each HNSW insert searches the graph it joins, so row-by-row upkeep slows as the
        table grows (measured: ~1,150 memories/s at 10k, ~230/s at 570k); one build over
        the loaded rows costs far less. Inside the span every read stays correct
        (searches scan exactly, slower) and other writers go on. Loads hold an advisory
        lock shared: the index is built when the last running load ends (an earlier one
        waits for it), and a store opened meanwhile does not build it. The build blocks
        writes to ``memories`` while it runs; ``build_memory`` is its session's
        ``maintenance_work_mem`` (the graph is built in memory when it fits). If the body
        raises, its error is the one reported and the index is still rebuilt.
        docs/operations.md says when to use it.
        """
        db = self._connection()
        try:
            db.execute("SELECT pg_advisory_lock_shared(%s)", (_BULK_LOCK,))
            model = self.vector_model()
            if model is not None:
                name = sql.Identifier(f"memories_embedding_{model[1]}")
                db.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(name))
        except psycopg.Error as exc:
            with suppress(psycopg.Error):
                db.execute("SELECT pg_advisory_unlock_shared(%s)", (_BULK_LOCK,))
            raise StorageError(f"a bulk load could not begin: {exc}") from exc
        try:
            yield
        except BaseException:
            # The body's error is the one to report; the index is still made if it can be.
            with suppress(StorageError, psycopg.Error):
                self._end_bulk_load(build_memory)
            raise
        self._end_bulk_load(build_memory)

    def _end_bulk_load(self, build_memory: str) -> None:
        db = self._connection()
        try:
            db.execute("SELECT pg_advisory_unlock_shared(%s)", (_BULK_LOCK,))
        except psycopg.Error as exc:
            raise StorageError(f"a bulk load could not end: {exc}") from exc
        model = self.vector_model()  # read again: the span may have recorded another
        if model is not None:
            # Waits while other loads run: the last one to end builds, once.
            self._build_vector_index(model[1], wait=True, build_memory=build_memory)
        try:
            # Fresh statistics, or the planner, still counting the table as it was before
            # the load, prefers an exact scan to the new index (100k: 192 ms a recall).
            db.execute("ANALYZE memories")
        except psycopg.Error as exc:
            raise StorageError(f"the table could not be analysed after a bulk load: {exc}") from exc

    # -- writes ----------------------------------------------------------------------------

    @staticmethod
    def _roll_back(db: psycopg.Connection[Any]) -> None:
        # After a failed pipeline the server holds an open (or aborted) transaction.
        if not db.closed and db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with suppress(psycopg.Error):
                db.execute("ROLLBACK")

    @staticmethod
    def _lock_head(db: psycopg.Connection[Any], owner: str) -> Tip:
        """Lock the owner's heads row (made on its first write) and read the tip under it."""
        row = db.execute(_LOCK_HEAD, (owner,)).fetchone()
        if row is None:
            db.execute(_NEW_HEAD, (owner,))
            row = db.execute(_LOCK_HEAD, (owner,)).fetchone()
        assert row is not None  # inserted above, or by a concurrent first write
        return Tip(int(row[0]), str(row[1]))

    @contextmanager
    def _transaction(self, db: psycopg.Connection[Any]) -> Iterator[None]:
        """``db.transaction()``, or a savepoint inside a pipelined write of this thread.

        A pipelined write sends its BEGIN unsynced, so psycopg still counts the connection
        idle: its own ``transaction()`` would BEGIN and COMMIT, committing half a write.
        """
        open_write: _Transaction | None = getattr(self._local, "writing", None)
        if open_write is None:
            with db.transaction():
                yield
            return
        open_write.hold()  # an expected-tip write opens its transaction now
        db.execute("SAVEPOINT lm_nested")
        try:
            yield
        except BaseException:
            with suppress(psycopg.Error):
                db.execute("ROLLBACK TO SAVEPOINT lm_nested")
            raise
        db.execute("RELEASE SAVEPOINT lm_nested")

    @contextmanager
    def _plain_write(self, db: psycopg.Connection[Any], owner: str) -> Iterator[_Transaction]:
        """``write`` without pipeline mode: one round trip per statement."""
        try:
            with self._transaction(db):
                tx = _Transaction(self, db, owner, self._lock_head(db, owner))
                yield tx
                tx.flush()
        except psycopg.Error as exc:
            raise StorageError(f"the write could not be committed: {exc}", owner=owner) from exc

    @contextmanager
    def write(self, owner: str, expect: Tip | None = None) -> Iterator[_Transaction]:
        """Lock ``owner``'s heads row for one transaction; other owners proceed in parallel.

        The transaction runs in pipeline mode where libpq has it (14+): what needs no answer
        (BEGIN, the buffered rows, the head's update, COMMIT) travels with the next thing
        that does, so a write that reads nothing costs two round trips (lock the head,
        commit), and each read one more. With ``expect`` (the tip the writer last saw) a
        write of one entry creating one memory that reads nothing is one statement and one
        round trip; one that reads or writes more runs without the pipeline, a round trip
        per statement (see ``_Transaction``). Each round trip, and
        each message the server wakes up for, costs context switches; with many writers
        sharing few cores they were a large part of a write's cost.
        """
        db = self._connection()
        tx: _Transaction | None = None
        nested = getattr(self._local, "writing", None) is not None
        if nested or (expect is None and not psycopg.Pipeline.is_supported()):
            # (a write nested in this thread's open write runs as a savepoint of it)
            with self._plain_write(db, owner) as tx:
                if expect is not None and tx.tip() != expect:
                    raise stale_tip(owner)
                yield tx
        else:
            try:
                if expect is not None:
                    tx = _Transaction(self, db, owner, expect, held=False)
                    self._local.writing = tx
                    try:
                        yield tx
                        tx.commit_expected()
                    finally:
                        self._local.writing = None
                else:
                    with db.pipeline():
                        db.execute("BEGIN")
                        tx = _Transaction(self, db, owner, self._lock_head(db, owner))
                        self._local.writing = tx
                        try:
                            yield tx
                            tx.flush()
                        finally:
                            self._local.writing = None
                        db.execute("COMMIT")
            except BaseException as exc:
                self._roll_back(db)
                if isinstance(exc, psycopg.Error):
                    raise StorageError(
                        f"the write could not be committed: {exc}", owner=owner
                    ) from exc
                raise
        if tx is not None and tx.erased and self.compact_after_erase:
            self.compact()

    def replace_projection(self, owner: str, memories: Mapping[str, MemoryRecord]) -> None:
        """Replace one owner's projection and indexes with recomputed ones."""
        db = self._connection()
        rows = [_memory_row(m, None) for m in sorted(memories.values(), key=lambda m: m.seq)]
        with self._transaction(db):
            db.execute("DELETE FROM memories WHERE owner = %s", (owner,))
            if rows:
                with db.cursor() as cursor:
                    cursor.executemany(_UPSERT_MEMORY, rows)

    # -- reads -----------------------------------------------------------------------------

    def _tip(self, db: psycopg.Connection[Any], owner: str) -> Tip:
        row = db.execute("SELECT length, head FROM heads WHERE owner = %s", (owner,)).fetchone()
        return Tip(0, "") if row is None else Tip(int(row[0]), str(row[1]))

    def _records(self, db: psycopg.Connection[Any], owner: str, start: int) -> Iterator[Record]:
        cursor = db.execute(
            "SELECT seq, ts, content, source, tags, content_hash, prev_hash, hash, redacted, meta,"
            " texts FROM ledger WHERE owner = %s AND seq >= %s ORDER BY seq",
            (owner, start),
        )
        for row in cursor:
            entry = Entry(
                ts=row[1],
                content=row[2],
                source=row[3],
                tags=tuple(row[4]),
                content_hash=row[5],
                prev_hash=row[6],
                hash=row[7],
                redacted=bool(row[8]),
            )
            yield Record(int(row[0]), entry, row[9], json.loads(row[10]) if row[10] else {})

    def _get(self, db: psycopg.Connection[Any], owner: str, memory_id: str) -> MemoryRecord | None:
        row = db.execute(
            "SELECT doc FROM memories WHERE owner = %s AND id = %s", (owner, memory_id)
        ).fetchone()
        return None if row is None else memory_from_doc(row[0])

    def tip(self, owner: str) -> Tip:
        """An owner's chain length and head."""
        return self._tip(self._connection(), owner)

    def records(self, owner: str, start: int = 0) -> Iterator[Record]:
        """An owner's stored rows in chain order."""
        return self._records(self._connection(), owner, start)

    def owners(self) -> list[str]:
        """Every owner with a non-empty chain."""
        rows = self._connection().execute(
            'SELECT owner FROM heads WHERE length > 0 ORDER BY owner COLLATE "C"'
        )
        return [str(r[0]) for r in rows]

    def get(self, owner: str, memory_id: str) -> MemoryRecord | None:
        """One projected memory."""
        return self._get(self._connection(), owner, memory_id)

    def get_many(self, owner: str, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """Projected memories by id, in one query (missing ids are left out)."""
        rows = (
            self._connection()
            .execute(
                "SELECT doc FROM memories WHERE owner = %s AND id = ANY(%s)",
                (owner, list(memory_ids)),
            )
            .fetchall()
        )
        found = (memory_from_doc(row[0]) for row in rows)
        return {memory.id: memory for memory in found}

    def locate(self, memory_id: str) -> str | None:
        """The owner of a memory id — the one query that crosses owners (a cold path)."""
        row = (
            self._connection()
            .execute(
                'SELECT owner FROM memories WHERE id = %s ORDER BY owner COLLATE "C" LIMIT 1',
                (memory_id,),
            )
            .fetchone()
        )
        return None if row is None else str(row[0])

    @staticmethod
    def _where(owner: str, query: MemoryFilter) -> tuple[sql.Composable, list[Any]]:
        clauses: list[sql.Composable] = [sql.SQL("owner = %s")]
        params: list[Any] = [owner]
        if query.statuses is not None:
            clauses.append(sql.SQL("status = ANY(%s)"))
            params.append(list(query.statuses))
        if query.retrievable_only:
            clauses.append(sql.SQL("retrievable AND status = 'active'"))
        if query.kinds is not None:
            clauses.append(sql.SQL("kind = ANY(%s)"))
            params.append(list(query.kinds))
        if query.scope is not None:
            clauses.append(sql.SQL("scope = %s"))
            params.append(query.scope)
        if query.partition is not None:
            clauses.append(sql.SQL("partition = %s"))
            params.append(query.partition)
        if not query.include_sensitive:
            clauses.append(sql.SQL("sensitivity <> 'sensitive'"))
        if query.tags:
            clauses.append(sql.SQL("tags @> %s"))
            params.append(list(query.tags))
        return sql.SQL(" AND ").join(clauses), params

    def memories(self, owner: str, query: MemoryFilter) -> list[MemoryRecord]:
        """Projected memories of one owner, newest first."""
        where, params = self._where(owner, query)
        statement = sql.SQL(
            'SELECT doc FROM memories WHERE {} ORDER BY seq DESC, id COLLATE "C" DESC'
        ).format(where)
        if query.limit is not None:
            statement = sql.SQL("{} LIMIT %s OFFSET %s").format(statement)
            params += [query.limit, query.offset]
        rows = self._connection().execute(statement, params)
        return [memory_from_doc(r[0]) for r in rows]

    def count(self, owner: str, query: MemoryFilter) -> int:
        """How many memories a filter matches."""
        where, params = self._where(owner, query)
        row = (
            self._connection()
            .execute(sql.SQL("SELECT count(*) FROM memories WHERE {}").format(where), params)
            .fetchone()
        )
        return int(row[0]) if row else 0

    def projection(self, owner: str) -> dict[str, MemoryRecord]:
        """The stored projection of one owner, each indexed column held against its document.

        Beyond the columns both stores keep (``storage.sql.PROJECTION_COLUMNS``) this one
        checks ``tags``, the text ``digest`` and the full-text ``body``; the first that
        disagrees raises an IntegrityError naming the memory and the field.
        """
        db = self._connection()
        rows = db.execute(
            f"SELECT doc, {', '.join(_CHECKED_COLUMNS)} FROM memories WHERE owner = %s",
            (owner,),
        )
        memories = checked_projection(rows, _CHECKED_COLUMNS)
        ids = sorted(memories)
        found = db.execute(
            "SELECT m.id, m.body::text FROM memories m"
            " JOIN unnest(%s::text[], %s::text[]) AS x(id, b) ON m.owner = %s AND m.id = x.id"
            " WHERE m.body IS DISTINCT FROM to_tsvector(%s::regconfig, x.b)"
            ' ORDER BY m.id COLLATE "C" LIMIT 1',
            (ids, [fts_body(memories[i]) for i in ids], owner, TEXT_SEARCH_CONFIG),
        ).fetchone()
        if found is not None:
            raise IntegrityError(
                f"memory {found[0]}: the full-text body column does not index its stored"
                " document; run `troth rebuild`",
                memory=str(found[0]),
                field="body",
                stored=str(found[1]),
            )
        return memories

    def lexical(
        self, owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Full-text candidates ranked by ``ts_rank_cd`` (higher is better)."""
        terms = [term for term in terms if term.text]
        if not terms:
            return []
        where, params = self._where(owner, query)
        statement = sql.SQL(
            "SELECT id, ts_rank_cd(body, q) AS score FROM memories,"
            " to_tsquery(%s::regconfig, %s) AS q WHERE body @@ q AND {}"
            ' ORDER BY score DESC, seq DESC, id COLLATE "C" LIMIT %s'
        ).format(where)
        try:
            rows = (
                self._connection()
                .execute(statement, [TEXT_SEARCH_CONFIG, tsquery_text(terms), *params, limit])
                .fetchall()
            )
        except psycopg.Error as exc:
            raise StorageError(f"full-text query failed: {exc}", match=tsquery_text(terms)) from exc
        return [Hit(str(row[0]), rank, float(row[1])) for rank, row in enumerate(rows, start=1)]

    def vector_model(self) -> tuple[str, int] | None:
        """The embedding model (name, dimension) of the stored vectors, if any."""
        rows = dict(
            self._connection().execute(
                "SELECT key, value FROM store_meta WHERE key IN ('embedding_model', 'embedding_dim')"
            )
        )
        if "embedding_model" not in rows:
            return None
        return str(rows["embedding_model"]), int(rows["embedding_dim"])

    def set_vector_model(self, name: str, dimension: int) -> None:
        """Record the embedding model, drop every vector and index its dimension (HNSW)."""
        if not isinstance(dimension, int) or not 1 <= dimension <= 2000:
            raise StorageError(f"an HNSW-indexed dimension must be 1..2000; got {dimension!r}")
        db = self._connection()
        with self._transaction(db):
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            db.execute("UPDATE memories SET embedding = NULL WHERE embedding IS NOT NULL")
            db.execute(
                "INSERT INTO store_meta (key, value) VALUES ('embedding_model', %s),"
                " ('embedding_dim', %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (name, str(dimension)),
            )
        # An index of another dimension would fail every insert of the new model's vectors.
        stale = db.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'"
            " AND indexname LIKE 'memories\\_embedding\\_%%' AND indexname <> %s",
            (f"memories_embedding_{dimension}",),
        ).fetchall()
        for (index,) in stale:
            db.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index)))
        self._ensure_vector_index(dimension)

    def vector_ids(self, owner: str) -> set[str]:
        """Ids of one owner's memories that have a stored vector."""
        rows = self._connection().execute(
            "SELECT id FROM memories WHERE owner = %s AND embedding IS NOT NULL", (owner,)
        )
        return {str(r[0]) for r in rows}

    def recall_rows(self, owner: str, ids: Sequence[str]) -> dict[str, RecallRow]:
        """The ranking fields of these memories, read from their stored documents."""
        # MATERIALIZED: each document is parsed once; an inlined subquery would cast
        # ``doc::jsonb`` again for every field read from it (10x slower at 1,000 ids).
        rows = self._connection().execute(
            "WITH m AS MATERIALIZED (SELECT id, seq, updated_at, doc::jsonb AS d"
            " FROM memories WHERE owner = %s AND id = ANY(%s))"
            " SELECT id, seq, updated_at, d->>'title', d->>'content', d->>'created_at',"
            " d->>'recorded_at', d->>'session', d->'extra'->>'x_speaker',"
            " (d->>'importance')::float8, (d->>'confidence')::float8, d->>'lifecycle',"
            " d->>'valid_from', d->>'valid_until', d->>'expires', d->'ttl'->>'policy',"
            " d->'ttl'->>'expires_at', (d->'ttl'->>'decay_days')::int FROM m",
            (owner, list(ids)),
        )
        return {row.memory_id: row for row in map(recall_row, rows)}

    def vector(
        self, owner: str, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Nearest retrievable memories by cosine similarity (higher is better), via HNSW.

        ``hnsw.ef_search`` is raised to the limit so the index returns as many neighbours
        as asked; ``iterative_scan`` keeps reading when the filter drops some. Both are
        set for this transaction only; once the server is known to take both, the
        transaction (BEGIN, settings, query, COMMIT) travels as one pipeline: one round
        trip.
        """
        where, params = self._where(owner, query)
        dimension = len(embedding)
        statement = sql.SQL(
            "SELECT id, 1 - (embedding::vector({dim}) <=> %s::vector({dim})) AS score"
            " FROM memories WHERE embedding IS NOT NULL AND {where}"
            " ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT %s"
        ).format(dim=sql.Literal(dimension), where=where)
        literal = _vector(embedding)
        db = self._connection()
        ef_search = str(min(max(limit, 40), 1000))
        arguments = [literal, *params, literal, limit]
        if (
            self._iterative_scan
            and getattr(self._local, "writing", None) is None
            and psycopg.Pipeline.is_supported()
        ):
            try:
                with db.pipeline():
                    db.execute("BEGIN")
                    db.execute(_SEARCH_SETTINGS, (ef_search,))
                    found = db.execute(statement, arguments)
                    db.execute("COMMIT")
            except BaseException:
                self._roll_back(db)
                raise
        else:  # inside a write (a savepoint of it), or while the settings are not known yet
            with self._transaction(db):
                if self._iterative_scan:
                    db.execute(_SEARCH_SETTINGS, (ef_search,))
                else:
                    db.execute("SELECT set_config('hnsw.ef_search', %s, true)", (ef_search,))
                    if self._iterative_scan is None:
                        try:
                            with self._transaction(db):
                                db.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                            self._iterative_scan = True
                        except psycopg.Error:
                            self._iterative_scan = False
                found = db.execute(statement, arguments)
        rows = found.fetchall()
        return [Hit(str(row[0]), rank, float(row[1])) for rank, row in enumerate(rows, start=1)]

    # -- bearer tokens (hashed; see core.access) ------------------------------------------

    _TOKEN_COLUMNS = sql.SQL(TOKEN_COLUMNS)

    @staticmethod
    def _token(row: Sequence[Any]) -> TokenRecord:
        return token_record(row, row[4])

    def put_token(self, record: TokenRecord) -> None:
        """Keep a new token record (hash only)."""
        self._connection().execute(
            sql.SQL("INSERT INTO tokens ({}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)").format(
                self._TOKEN_COLUMNS
            ),
            (
                record.token_id,
                record.secret_hash,
                record.principal,
                record.on_behalf_of,
                list(record.scopes),
                record.created_at,
                record.expires_at,
                record.revoked_at,
                record.label,
            ),
        )

    def token(self, token_id: str) -> TokenRecord | None:
        """One token record by id."""
        row = (
            self._connection()
            .execute(
                sql.SQL("SELECT {} FROM tokens WHERE id = %s").format(self._TOKEN_COLUMNS),
                (token_id,),
            )
            .fetchone()
        )
        return None if row is None else self._token(row)

    def tokens(self, principal: str | None = None) -> list[TokenRecord]:
        """Token records, oldest first."""
        statement = sql.SQL("SELECT {} FROM tokens").format(self._TOKEN_COLUMNS)
        params: tuple[str, ...] = ()
        if principal is not None:
            statement = sql.SQL("{} WHERE principal = %s").format(statement)
            params = (principal,)
        order = sql.SQL('{} ORDER BY created_at COLLATE "C", id COLLATE "C"').format(statement)
        return [self._token(row) for row in self._connection().execute(order, params)]

    def revoke_token(self, token_id: str, at: str) -> bool:
        """Mark a token revoked; False when there is no unrevoked token with that id."""
        cursor = self._connection().execute(
            "UPDATE tokens SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
            (at, token_id),
        )
        return bool(cursor.rowcount)

    # -- maintenance -----------------------------------------------------------------------

    def relation_files(self) -> dict[str, str]:
        """Each erasable table's relations (heap, TOAST, indexes) → file path in the data dir."""
        rows = self._connection().execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c"
            " WHERE c.oid IN ("
            "  SELECT t.oid FROM pg_class t WHERE t.relname = ANY(%(t)s)"
            "  UNION SELECT t.reltoastrelid FROM pg_class t WHERE t.relname = ANY(%(t)s)"
            "  UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
            "   WHERE t.relname = ANY(%(t)s)"
            "  UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.reltoastrelid ="
            "   i.indrelid WHERE t.relname = ANY(%(t)s))"
            " AND pg_relation_filepath(c.oid) IS NOT NULL",
            {"t": list(ERASABLE_TABLES)},
        )
        return {str(r[0]): str(r[1]) for r in rows}

    def compact(self) -> None:
        """Rewrite the tables erased text lived in, so no dead tuple or index page keeps it.

        ``VACUUM FULL`` writes each table, its TOAST table and all its indexes into new
        files and unlinks the old ones (a plain VACUUM only marks dead space reusable).
        It briefly locks the table; see docs/operations.md for the trade-off.
        """
        db = self._connection()
        try:
            for table in ERASABLE_TABLES:
                db.execute(sql.SQL("VACUUM (FULL) {}").format(sql.Identifier(table)))
        except psycopg.Error as exc:
            raise StorageError(f"the erasure maintenance could not run: {exc}") from exc
        # The old files are truncated at commit and unlinked at the next checkpoint; ask for
        # one now when the role may (superuser or pg_checkpoint), else the server's own comes.
        with suppress(psycopg.errors.InsufficientPrivilege):
            db.execute("CHECKPOINT")

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()

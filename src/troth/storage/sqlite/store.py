"""The embedded default: one SQLite file in WAL mode with FTS5 beside the ledger.

Erasure: ``secure_delete`` zeroes freed bytes, the full-text index runs with FTS5
``secure-delete``, and after an erasure commits its full-text segments are merged (in a
write transaction of its own) and the WAL is checkpointed and truncated so an erased text
is in no file under the store's directory. That last step waits for readers of
older snapshots without holding the write lock (``storage.erasure``): the erasure is
recorded as pending in its own transaction and finished as soon as they go, or on open.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from troth.core.errors import StorageError
from troth.core.lifecycle import in_ledger_order
from troth.core.query import CandidateLimits, Term
from troth.core.records import MemoryRecord
from troth.storage import sql
from troth.storage.base import (
    Candidates,
    Hit,
    MemoryFilter,
    RecallRow,
    Tip,
    searched_in_turn,
    stale_tip,
)
from troth.storage.erasure import ERASURE_WAIT, Finisher, wait_until
from troth.storage.packed import id_list
from troth.storage.rows import memory_from_doc
from troth.storage.sqlite import schema
from troth.storage.sqlite.context import ContextWrites
from troth.storage.sqlite.schema import sqlite3
from troth.storage.sqlite.search import FILTERS, SQLiteSearch
from troth.storage.sqlite.transaction import (
    DIALECT,
    FTS_MERGE_OWED,
    SQLiteTransaction,
    bump_generation,
    put_memory,
)

BULK_CHECKPOINT_PAGES = 16384
"""The log's size in pages (64 MB of 4 KB pages) past which a commit inside
``SQLiteStore.bulk_load`` checkpoints it."""


class SQLiteStore(sql.SQLReads):
    """The ``Store`` (and ``TokenStore``) on one SQLite file."""

    dialect = DIALECT
    filters = FILTERS
    meta_table = "meta"
    #: Reads are of a file of this machine (TokenStore.local).
    local = True

    def __init__(self, path: Path | str, *, erasure_wait: float = ERASURE_WAIT) -> None:
        self.path = Path(path)
        self.erasure_wait = erasure_wait
        self._erasures = Finisher(self._finish_erasures, f"troth-erasure {self.path.name}")
        self._connections = sql.Connections(lambda: schema.connect(self.path), lambda db: True)
        # Write transactions of this process queue here rather than in SQLite's busy
        # handler, which polls with sleeps of up to 100 ms and lets a waiter starve; it
        # also orders each write's update of the vector copy after the write before it.
        self._write_lock = threading.RLock()
        # The threads a recall's vector search runs on beside its lexical one (candidates),
        # made on the first such recall and again after a close (as connections are).
        self._beside: ThreadPoolExecutor | None = None
        self._beside_lock = threading.Lock()
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = self._connection()
        with self._immediate(db):
            # The schema versions this open applied (none for a file already current).
            self.migrated = schema.migrate(db, self.path)
        db.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('secure-delete', 1)")
        self.search = SQLiteSearch(None)
        model = self.vector_model()
        if model is not None:
            self.search.dimension = model[1]
        # An erasure committed by a process that stopped before finishing it (killed, or
        # its reader outlived it) is finished now, or as soon as the readers go.
        self._erasures.finish()

    # -- connections and transactions ------------------------------------------------------

    def _connection(self) -> Any:
        return self._connections.get()

    def schema_version(self) -> int:
        """The schema version of the file (``schema.SCHEMA_VERSION`` once opened)."""
        return schema.schema_version(self._connection())

    @contextmanager
    def _immediate(self, db: Any) -> Iterator[None]:
        with self._write_lock:
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StorageError(f"the database is locked or unavailable: {exc}") from exc
            try:
                yield
            except BaseException:
                db.execute("ROLLBACK")
                raise
            else:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as exc:
                    db.execute("ROLLBACK")
                    raise StorageError(f"the write could not be committed: {exc}") from exc

    def _write_one(self, statement: str, params: Sequence[Any]) -> Any:
        db = self._connection()
        with self._immediate(db):
            return db.execute(statement, params)

    @contextmanager
    def write(self, owner: str, expect: Tip | None = None) -> Iterator[SQLiteTransaction]:
        """Hold the database's write lock (and so ``owner``'s chain) for one transaction.

        With ``expect`` the tip is read under the lock at once (a local read costs little)
        and a moved chain raises :class:`StaleTipError` before anything is written.
        """
        db = self._connection()
        generation = None
        # The copy is updated before the next write of this process commits, so the
        # updates arrive in generation order and the copy is never dropped for a gap.
        with self._write_lock:
            with self._immediate(db):
                tx = SQLiteTransaction(db, owner, self.search.dimension)
                if expect is not None and tx.tip() != expect:
                    raise stale_tip(owner)
                yield tx
                tx.context.flush(db)
                if tx.vector_changes:
                    generation = bump_generation(db, owner)
            if generation is not None:
                self.search.vectors.apply(owner, generation, tx.vector_changes)
        if tx.erased:
            self._erasures.finish(self.erasure_wait)

    # -- reads -------------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """The thread's reads in one deferred transaction: in WAL mode its first read fixes
        the snapshot every later read in it sees (inside a write, the write's own)."""
        db = self._connection()
        if db.in_transaction:
            yield
            return
        db.execute("BEGIN")
        try:
            yield
        finally:
            db.execute("COMMIT")  # it read only: this ends the snapshot

    def get_many(self, owner: str, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """Projected memories by id, in one query (missing ids are left out)."""
        rows = self._connection().execute(
            "SELECT m.doc FROM json_each(?) AS j CROSS JOIN memories m ON m.id = j.value"
            " WHERE m.owner = ?",
            (id_list(memory_ids), owner),
        )
        found = (memory_from_doc(row[0]) for row in rows)
        return {memory.id: memory for memory in found}

    def projection(self, owner: str) -> dict[str, MemoryRecord]:
        """The stored projection of one owner, each indexed column held against its document.

        A column that disagrees (changed behind the ledger's back) raises an IntegrityError
        naming the memory and the field, which ``verify`` reports.
        """
        rows = self._connection().execute(
            f"SELECT doc, {', '.join(sql.PROJECTION_COLUMNS)} FROM memories WHERE owner = ?",
            (owner,),
        )
        return sql.checked_projection(rows, sql.PROJECTION_COLUMNS)

    def replace_projection(self, owner: str, memories: Mapping[str, MemoryRecord]) -> None:
        """Replace one owner's projection and full-text rows with recomputed ones."""
        db = self._connection()
        dimension = self.search.dimension
        with self._immediate(db):
            rids = [r[0] for r in db.execute("SELECT rid FROM memories WHERE owner = ?", (owner,))]
            for rid in rids:
                db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rid,))
                if dimension is not None:
                    db.execute("DELETE FROM memory_vec WHERE rowid = ?", (rid,))
            db.execute("DELETE FROM memories WHERE owner = ?", (owner,))
            context = ContextWrites()
            for memory in in_ledger_order(memories.values()):
                put_memory(db, memory, None, dimension, context=context)
            context.flush(db)
            # The rows have new rids and no vectors: `reindex` (the facade does) restores them.
            bump_generation(db, owner)
        self.search.vectors.forget(owner)

    # -- search ------------------------------------------------------------------------

    def lexical(
        self, owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Full-text candidates (bm25, lower is better in FTS5; returned negated)."""
        return self.search.lexical(self._connection(), owner, terms, limit, query)

    def vector(
        self, owner: str, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Nearest retrievable memories by cosine (higher is better); see ``SQLiteSearch``."""
        return self.search.vector(self._connection(), owner, embedding, limit, query)

    def candidates(
        self,
        owner: str,
        terms: Sequence[Term],
        embedding: Sequence[float] | None,
        limits: CandidateLimits,
        query: MemoryFilter,
    ) -> Candidates:
        """Both searches of a recall: the vector one on a thread of the store's own pool
        (with its own connection) while this thread runs the lexical one. FTS5's scoring and
        numpy's scan both let go of the GIL, so on two cores a recall waits about the longer
        of the two rather than their sum; the hits are those of the two calls in turn. In a
        transaction (a write, a snapshot) both run in turn, in that transaction's view, as
        they do on an in-memory database (another thread's connection opens another one)."""
        if (
            embedding is None
            or not terms
            or str(self.path) == ":memory:"
            or self._connection().in_transaction
        ):
            return searched_in_turn(self, owner, terms, embedding, limits, query)
        pending = self._pool().submit(self.vector, owner, embedding, limits.vector, query)
        try:
            lexical = self.lexical(owner, terms, limits.lexical, query)
        finally:
            wait([pending])  # never leave a search running behind a failed one
        return Candidates(lexical, pending.result())

    def _pool(self) -> ThreadPoolExecutor:
        with self._beside_lock:
            if self._beside is None:
                self._beside = ThreadPoolExecutor(max_workers=8, thread_name_prefix="troth-vector")
            return self._beside

    def recall_rows(self, owner: str, ids: Sequence[str]) -> dict[str, RecallRow]:
        """The ranking fields of these memories, read from their stored documents."""
        return self.search.recall_rows(self._connection(), owner, ids)

    def vector_ids(self, owner: str) -> set[str]:
        """Ids of one owner's memories that have a row in the vector index."""
        return self.search.vector_ids(self._connection(), owner)

    def set_vector_model(self, name: str, dimension: int) -> None:
        """Record the embedding model and (re)create the vec0 index for its dimension."""
        if not isinstance(dimension, int) or not 1 <= dimension <= 8192:
            raise StorageError(f"an embedding dimension must be 1..8192; got {dimension!r}")
        db = self._connection()
        with self._immediate(db):
            db.execute("DROP TABLE IF EXISTS memory_vec")
            db.execute(
                "CREATE VIRTUAL TABLE memory_vec USING vec0(owner TEXT PARTITION KEY,"
                f" embedding float[{dimension}] distance_metric=cosine)"
            )
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value",
                [("embedding_model", name), ("embedding_dim", str(dimension))],
            )
            db.execute("UPDATE vector_generations SET gen = gen + 1")
            # The dropped vectors derive from memory texts: their pages go like an erasure's.
            db.execute("INSERT INTO pending_erasures (owner) VALUES ('')")
        self.search.reset(dimension)
        self._erasures.finish(self.erasure_wait)

    # -- maintenance -------------------------------------------------------------------

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Checkpoint the write-ahead log less often while this thread loads.

        FTS5 and vec0 take rows at a constant cost (no index to build once), but each
        commit past ``wal_autocheckpoint`` pages (1,000 by default, and a batch of 1,000
        memories writes more) copies the log into the database and syncs it: a load's
        commits then pay a checkpoint each. Inside, this thread's connection checkpoints
        past :data:`BULK_CHECKPOINT_PAGES` instead, and once at the end. Every commit is
        still synced to the log first (``synchronous=FULL``), so durability is unchanged.
        """
        db = self._connection()
        before = int(db.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        db.execute(f"PRAGMA wal_autocheckpoint = {BULK_CHECKPOINT_PAGES}")
        try:
            yield
        finally:
            db.execute(f"PRAGMA wal_autocheckpoint = {before}")
            if not db.in_transaction:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def compact(self) -> None:
        """Truncate the WAL so no old page image survives in it, waiting (without holding
        the write lock) for readers of older snapshots, and finish the pending erasures (on
        SQLite, finishing one is the merge of the full-text segments it owes and this same
        truncation). Each of the two steps waits up to ``erasure_wait`` seconds, so a reader
        that never ends is reported after at most twice that."""
        self._erasures.finish(self.erasure_wait)
        db = self._connection()
        if not wait_until(lambda: self._truncate_wal(db), self.erasure_wait):
            raise StorageError(
                "the write-ahead log could not be truncated because another connection"
                " still reads an older snapshot; it is truncated once that reader ends"
            )

    def _finish_erasures(self) -> bool:
        db = self._connection()
        last = db.execute("SELECT max(id) FROM pending_erasures").fetchone()[0]
        if last is None:
            return True
        self._merge_fts(db)
        if not self._truncate_wal(db):
            return False
        # The full-text segments are merged, every page is in the main file, whose freed
        # bytes secure_delete zeroed, and the WAL is empty: no file holds what was erased
        # up to ``last``.
        with self._immediate(db):
            db.execute("DELETE FROM pending_erasures WHERE id <= ?", (last,))
        return True

    def _merge_fts(self, db: Any) -> None:
        """Merge the full-text segments into one (FTS5 ``optimize``) when an erasure owes it.

        Its own write transaction after the erasure's commit, not a step of that
        transaction: another writer waits for the erasure or for the merge, never for the
        two in a row. The erasure's transaction sets :data:`FTS_MERGE_OWED`, and this
        transaction clears it, so a merge a crash cut off is made on the next try or open
        (by whichever process) and one already made is not made again (a merge rewrites
        the whole index).
        """
        owed = "SELECT 1 FROM meta WHERE key = ?"
        if db.execute(owed, (FTS_MERGE_OWED,)).fetchone() is None:
            return
        with self._immediate(db):
            if db.execute(owed, (FTS_MERGE_OWED,)).fetchone() is None:
                return  # another connection merged meanwhile
            db.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
            db.execute("DELETE FROM meta WHERE key = ?", (FTS_MERGE_OWED,))

    @staticmethod
    def _truncate_wal(db: Any) -> bool:
        """One try at checkpointing and truncating the WAL, giving up at once (busy handler
        off) if a writer holds the file or a reader an older snapshot: a checkpoint that
        waited for readers would hold the write lock meanwhile, and stall every writer."""
        db.execute("PRAGMA busy_timeout = 0")
        try:
            busy, _log, _done = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError:
            return False
        finally:
            db.execute(f"PRAGMA busy_timeout = {schema.BUSY_TIMEOUT_MS}")
        return not busy

    def close(self) -> None:
        """Stop finishing erasures (what is pending is finished on the next open) and close
        every connection this store opened."""
        self._erasures.close()
        with self._beside_lock:
            beside, self._beside = self._beside, None
        if beside is not None:
            beside.shutdown(wait=True)
        self._connections.close(lambda db: db.close())

"""The server backend: PostgreSQL with pgvector, any number of processes writing at once.

Writes lock the owner's ``heads`` row (``transaction``); the schema and its migrations are
in ``schema``, the searches in ``search``. Full text is PostgreSQL's own (``tsvector`` +
GIN); vectors are pgvector with an HNSW index once the embedder's dimension is known.

Erasure: a transaction that erases text records a pending erasure (with its transaction
id); once no other session holds a snapshot older than it, the text is scrubbed from the
files of the tables it lived in with locks no write waits for (``postgres.scrub``: VACUUM,
REINDEX CONCURRENTLY of the GIN index, every page's free space overwritten), retried while
an older reader remains (``storage.erasure``). ``compact()`` is the full rewrite
(``VACUUM FULL``), which holds each table while it copies it; both run in
``postgres.maintenance``. What remains in WAL and
backups is stated in docs/operations.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg import sql as pgsql

from troth.core.errors import IntegrityError, StorageError
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
from troth.storage.erasure import ERASURE_WAIT, Finisher
from troth.storage.postgres import connection, context, maintenance, schema, search
from troth.storage.postgres.copies import VectorCopies
from troth.storage.postgres.nearest import RecallSearches
from troth.storage.postgres.schema import TEXT_SEARCH_CONFIG
from troth.storage.postgres.search import FILTERS
from troth.storage.postgres.transaction import (
    DIALECT,
    UPSERT_MEMORY,
    PostgresTransaction,
    idle,
    lock_head,
    memory_row,
    roll_back,
    write_error,
)
from troth.storage.rows import fts_body, memory_from_doc

# The projection columns verify holds against each stored document (see ``projection``).
_CHECKED_COLUMNS = (*sql.PROJECTION_COLUMNS, "tags", "digest")


class PostgresStore(sql.SQLReads):
    """The ``Store`` on a PostgreSQL database (``postgresql://…``).

    ``finish_at_open``: finish the erasures a stopped process left pending as the store
    opens (a scrub); False for a store opened to :meth:`compact`, whose rewrite finishes
    them, so that a scrub before it is not spent work. ``vector_copies``: search an owner's
    vectors in an in-process copy while it is current (``postgres.copies``); False always
    walks the HNSW index.
    """

    dialect = DIALECT
    filters = FILTERS
    meta_table = "store_meta"
    #: Reads are of a server across a network (TokenStore.local).
    local = False

    def __init__(
        self,
        url: str,
        *,
        compact_after_erase: bool = True,
        erasure_wait: float = ERASURE_WAIT,
        finish_at_open: bool = True,
        vector_copies: bool = True,
    ) -> None:
        self.url = url
        self.compact_after_erase = compact_after_erase
        self.erasure_wait = erasure_wait
        self._erasures = Finisher(self._finish_erasures, "troth-erasure")
        self._connections = sql.Connections(
            lambda: self._connect(own=True), lambda db: not db.closed
        )
        self._searches = RecallSearches(
            self._connect, VectorCopies(self._connect) if vector_copies else None
        )
        try:
            self.migrate()
        except StorageError:
            self.close()  # a store that cannot open leaves no connection behind
            raise
        model = self.vector_model()
        if model is not None and not schema.has_vector_index(self._connection(), model[1]):
            # The index a bulk load left out when it stopped before its build; while another
            # load runs, that load builds it when it ends.
            schema.build_vector_index(self._connection(), model[1], wait=False)
        # An erasure committed by a process that stopped before finishing it is finished
        # now, or as soon as the older snapshots go.
        if finish_at_open:
            self._erasures.finish()

    # -- connections and schema ----------------------------------------------------------

    def _connect(self, *, own: bool = False) -> psycopg.Connection[Any]:
        """A new connection: a thread's own (``own``: its cursors raise a lost connection
        as a ``StorageError``, ``postgres.connection``), else a recall's side connection
        (``nearest``, which words its errors itself)."""
        try:
            if own:
                return psycopg.connect(
                    self.url, autocommit=True, cursor_factory=connection.StoreCursor
                )
            return psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            raise StorageError(f"cannot connect to the database: {exc}") from exc

    def _connection(self) -> psycopg.Connection[Any]:
        return self._connections.get()

    @property
    def _local(self) -> threading.local:
        """This thread's state: its connection, its kept cursor, its open write."""
        return self._connections.local

    def _append_cursor(self) -> psycopg.Cursor[Any]:
        """One cursor per connection for the one-statement append, kept: a new cursor per
        write would set up its adapters again each time."""
        db = self._connection()
        cursor: psycopg.Cursor[Any] | None = getattr(self._local, "append_cursor", None)
        if cursor is None or cursor.connection is not db:
            cursor = db.cursor()
            self._local.append_cursor = cursor
        return cursor

    def schema_version(self) -> int:
        """The highest migration applied to the database (0 for a fresh one)."""
        return schema.schema_version(self._connection())

    def migrate(self) -> list[int]:
        """Apply every shipped migration the database lacks; returns the versions applied."""
        return schema.migrate(self._connection())

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
            db.execute("SELECT pg_advisory_lock_shared(%s)", (schema.BULK_LOCK,))
            model = self.vector_model()
            if model is not None:
                name = pgsql.Identifier(schema.vector_index_name(model[1]))
                db.execute(pgsql.SQL("DROP INDEX IF EXISTS {}").format(name))
        except psycopg.Error as exc:
            with suppress(psycopg.Error):
                db.execute("SELECT pg_advisory_unlock_shared(%s)", (schema.BULK_LOCK,))
            raise StorageError(f"a bulk load could not begin: {exc}") from exc
        try:
            yield
        except BaseException:
            # The body's error is the one to report; the index is still made if it can be.
            with suppress(StorageError, psycopg.Error):
                self._end_bulk_load(build_memory)
            raise
        self._end_bulk_load(build_memory)
        if self._searches.copies is not None:
            self._searches.copies.warm()  # the owners just loaded are searched next

    def _end_bulk_load(self, build_memory: str) -> None:
        db = self._connection()
        try:
            db.execute("SELECT pg_advisory_unlock_shared(%s)", (schema.BULK_LOCK,))
        except psycopg.Error as exc:
            raise StorageError(f"a bulk load could not end: {exc}") from exc
        model = self.vector_model()  # read again: the span may have recorded another
        if model is not None:
            # Waits while other loads run: the last one to end builds, once.
            schema.build_vector_index(db, model[1], wait=True, build_memory=build_memory)
        try:
            # Fresh statistics, or the planner, still counting the table as it was before
            # the load, prefers an exact scan to the new index (100k: 192 ms a recall).
            db.execute("ANALYZE memories")
        except psycopg.Error as exc:
            raise StorageError(f"the table could not be analysed after a bulk load: {exc}") from exc

    # -- writes ----------------------------------------------------------------------------

    def _open_write(self) -> PostgresTransaction | None:
        """This thread's open write on this store, if one is open."""
        found: PostgresTransaction | None = getattr(self._local, "writing", None)
        return found

    @contextmanager
    def _transaction(self, db: psycopg.Connection[Any]) -> Iterator[None]:
        """``db.transaction()``, or a savepoint inside a pipelined write of this thread.

        A pipelined write sends its BEGIN unsynced, so psycopg still counts the connection
        idle: its own ``transaction()`` would BEGIN and COMMIT, committing half a write.
        """
        open_write = self._open_write()
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

    def _write_one(self, statement: str, params: Sequence[Any]) -> psycopg.Cursor[Any]:
        return self._connection().execute(statement, params)  # autocommit: its own transaction

    def _open(
        self, db: psycopg.Connection[Any], owner: str, tip: Tip, *, held: bool = True
    ) -> PostgresTransaction:
        return PostgresTransaction(db, owner, tip, held=held, append_cursor=self._append_cursor)

    @contextmanager
    def _plain_write(
        self, db: psycopg.Connection[Any], owner: str
    ) -> Iterator[PostgresTransaction]:
        """``write`` without pipeline mode: one round trip per statement."""
        try:
            with self._transaction(db):
                tx = self._open(db, owner, lock_head(db, owner))
                yield tx
                tx.flush()
        except psycopg.Error as exc:
            raise write_error(exc, owner) from exc

    @contextmanager
    def write(self, owner: str, expect: Tip | None = None) -> Iterator[PostgresTransaction]:
        """Lock ``owner``'s heads row for one transaction; other owners proceed in parallel.

        The transaction runs in pipeline mode where libpq has it (14+): what needs no answer
        (BEGIN, the buffered rows, the head's update, COMMIT) travels with the next thing
        that does, so a write that reads nothing costs two round trips (lock the head,
        commit), and each read one more. With ``expect`` (the tip the writer last saw) a
        write of one entry creating one memory that reads nothing is one statement and one
        round trip; one that reads or writes more runs without the pipeline, a round trip
        per statement (see ``PostgresTransaction``). Each round trip, and
        each message the server wakes up for, costs context switches; with many writers
        sharing few cores they were a large part of a write's cost.
        """
        db = self._connection()
        tx: PostgresTransaction | None = None
        nested = self._open_write() is not None
        if nested or (expect is None and not psycopg.Pipeline.is_supported()):
            # (a write nested in this thread's open write runs as a savepoint of it)
            with self._plain_write(db, owner) as tx:
                if expect is not None and tx.tip() != expect:
                    raise stale_tip(owner)
                yield tx
        else:
            try:
                if expect is not None:
                    tx = self._open(db, owner, expect, held=False)
                    self._local.writing = tx
                    try:
                        yield tx
                        tx.commit_expected()
                    finally:
                        self._local.writing = None
                else:
                    with db.pipeline():
                        db.execute("BEGIN")
                        tx = self._open(db, owner, lock_head(db, owner))
                        self._local.writing = tx
                        try:
                            yield tx
                            tx.flush()
                        finally:
                            self._local.writing = None
                        db.execute("COMMIT")
            except BaseException as exc:
                roll_back(db)
                if isinstance(exc, psycopg.Error):
                    raise write_error(exc, owner) from exc
                raise
        if tx is not None and self._searches.copies is not None:
            self._searches.copies.written(owner, erased=tx.erasure_noted)
        if tx is not None and tx.erased and self.compact_after_erase:
            self._erasures.finish(self.erasure_wait)

    def replace_projection(self, owner: str, memories: Mapping[str, MemoryRecord]) -> None:
        """Replace one owner's projection and indexes with recomputed ones."""
        db = self._connection()
        rows = [memory_row(m, None) for m in in_ledger_order(memories.values())]
        with self._transaction(db):
            db.execute("DELETE FROM memories WHERE owner = %s", (owner,))
            if rows:
                with db.cursor() as cursor:
                    cursor.executemany(UPSERT_MEMORY, rows)
                db.execute(context.OWNER, (owner,))

    # -- reads -----------------------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """The thread's reads in one REPEATABLE READ, READ ONLY transaction: each statement
        sees the snapshot its first one took (inside a write, the write's own view)."""
        db = self._connection()
        if self._open_write() is not None or not idle(db):
            yield
            return
        with db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

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
        memories = sql.checked_projection(rows, _CHECKED_COLUMNS)
        ids = sorted(memories)
        found = db.execute(
            "SELECT m.id, m.body::text FROM memories m"
            " JOIN unnest(%s::text[], %s::text[]) AS x(id, b) ON m.owner = %s AND m.id = x.id"
            # The memory's own words are weight A, its neighbours' C (storage.postgres.context:
            # derived from theirs, not checked here); a lexeme of any other weight was not
            # written by troth.
            " WHERE ts_filter(m.body, '{a}')"
            " IS DISTINCT FROM setweight(to_tsvector(%s::regconfig, x.b), 'A')"
            " OR ts_filter(m.body, '{b,d}') <> ''::tsvector"
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
        """Full-text candidates ranked by BM25 (``search.bm25_statement``; higher is better)."""
        return search.lexical(self._connection(), owner, terms, limit, query)

    def set_vector_model(self, name: str, dimension: int) -> None:
        """Record the embedding model, drop every vector and index its dimension (HNSW)."""
        if not isinstance(dimension, int) or not 1 <= dimension <= 2000:
            raise StorageError(f"an HNSW-indexed dimension must be 1..2000; got {dimension!r}")
        db = self._connection()
        with self._transaction(db):
            db.execute("SELECT pg_advisory_xact_lock(%s)", (schema.MIGRATION_LOCK,))
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
            (schema.vector_index_name(dimension),),
        ).fetchall()
        for (index,) in stale:
            db.execute(pgsql.SQL("DROP INDEX IF EXISTS {}").format(pgsql.Identifier(index)))
        schema.ensure_vector_index(db, dimension)

    def vector_ids(self, owner: str) -> set[str]:
        """Ids of one owner's memories that have a stored vector."""
        rows = self._connection().execute(
            "SELECT id FROM memories WHERE owner = %s AND embedding IS NOT NULL", (owner,)
        )
        return {str(r[0]) for r in rows}

    @property
    def vector_copies(self) -> VectorCopies | None:
        """The in-process vector copies searches read (None when opened without)."""
        return self._searches.copies

    def recall_rows(self, owner: str, ids: Sequence[str]) -> dict[str, RecallRow]:
        """The ranking fields of these memories, read from their stored documents."""
        return search.recall_rows(self._connection(), owner, ids)

    def vector(
        self, owner: str, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Nearest retrievable memories by cosine similarity (higher is better), via HNSW.

        ``hnsw.ef_search`` is raised to the limit so the index returns as many neighbours
        as asked; ``iterative_scan`` keeps reading when the filter drops some; both for
        this transaction only, sent with the query in one round trip once the server is
        known to take them (``postgres.nearest``).
        """
        db = self._connection()
        writing = self._open_write() is not None
        nested = (lambda: self._transaction(db)) if writing else None
        return self._searches.vector(db, owner, embedding, limit, query, nested=nested)

    def candidates(
        self,
        owner: str,
        terms: Sequence[Term],
        embedding: Sequence[float] | None,
        limits: CandidateLimits,
        query: MemoryFilter,
    ) -> Candidates:
        """Both searches of a recall, the vector one on a second connection while the
        lexical one runs on this thread's (``postgres.nearest``): one wait, not two."""
        db = self._connection()
        if (
            embedding is None
            or not terms  # one search: nothing to run beside it
            or self._open_write() is not None
            or not self._searches.side_by_side(db)
        ):
            return searched_in_turn(self, owner, terms, embedding, limits, query)
        return self._searches.candidates(db, owner, terms, embedding, limits, query)

    # -- maintenance -----------------------------------------------------------------------

    def relation_files(self) -> dict[str, str]:
        """Each erasable table's relations (heap, TOAST, indexes) → file path in the data dir."""
        return maintenance.relation_files(self._connection())

    def compact(self) -> None:
        """Rewrite the tables erased text lived in, so no dead tuple or index page keeps it.

        ``VACUUM FULL`` writes each table, its TOAST table and all its indexes into new
        files and unlinks the old ones: no byte of the old files is left in a live one.
        It holds each table (``ACCESS EXCLUSIVE``) while it copies it, and every read and
        write of it waits meanwhile: an operator's maintenance command, not what a
        redaction runs (``finish_erasures`` scrubs without holding a table).

        The rewrite finishes the erasures pending when it starts, as a scrub would, so none
        is scrubbed before or after it: like a VACUUM, it keeps every row version a session
        with an older snapshot can see, so it first waits (holding nothing) up to
        ``erasure_wait`` seconds for such readers. Should one remain, the rewrite runs all
        the same and leaves those erasures pending, to be scrubbed once the reader ends.
        """
        if not maintenance.compact(self._connection(), self.erasure_wait):
            self._erasures.finish()  # scrubbed in the background once the reader ends

    def _finish_erasures(self) -> bool:
        return maintenance.finish(self._connection())

    def close(self) -> None:
        """Stop finishing erasures (what is pending is finished on the next open) and close
        every connection this store opened."""
        self._erasures.close()
        self._searches.close()
        self._connections.close(lambda db: db.close())

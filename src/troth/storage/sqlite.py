"""The embedded default: one SQLite file in WAL mode with FTS5 beside the ledger.

Durability: ``journal_mode=WAL`` with ``synchronous=FULL``, so an acknowledged append
survives power loss. Erasure: ``secure_delete`` zeroes freed bytes, the full-text index
runs with FTS5 ``secure-delete``, and :meth:`SQLiteStore.compact` checkpoints and
truncates the WAL so an erased text is in no file under the store's directory.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_vec

from troth.core.access import TokenRecord
from troth.core.chain import Entry
from troth.core.checkpoints import StoredReply
from troth.core.errors import StorageError
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
from troth.storage.vectors import (
    CachedVectors,
    VectorCache,
    as_vector,
    live_count,
    unpack_chunks,
)

try:  # The standard library's sqlite3 here may lack extension loading and a recent FTS5.
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover - platforms without the wheel
    import sqlite3

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (
    owner TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    content TEXT NOT NULL,
    source TEXT NOT NULL,
    tags TEXT NOT NULL,
    content_hash TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    redacted INTEGER NOT NULL DEFAULT 0,
    meta TEXT,
    texts TEXT,
    PRIMARY KEY (owner, seq)
);
CREATE TABLE IF NOT EXISTS heads (
    owner TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    head TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    principal TEXT NOT NULL,
    on_behalf_of TEXT,
    scopes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT,
    label TEXT
);
CREATE TABLE IF NOT EXISTS memories (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    retrievable INTEGER NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    partition TEXT NOT NULL,
    sensitivity TEXT NOT NULL,
    seq INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_owner ON memories (owner, status, seq);
CREATE TABLE IF NOT EXISTS vector_generations (owner TEXT PRIMARY KEY, gen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint_replies (
    owner TEXT NOT NULL,
    message_id TEXT NOT NULL,
    request_checksum TEXT NOT NULL,
    response BLOB NOT NULL,
    PRIMARY KEY (owner, message_id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    body, tokenize = 'porter unicode61 remove_diacritics 2',
    content = '', contentless_delete = 1
);
"""


# Rows are read in bulk when a chain is verified; stored JSON has no surrounding blanks.
_decode = json.JSONDecoder().raw_decode


# The vec0 KNN query reads at most this many neighbours (sqlite-vec's own limit).
_VEC0_MAX_K = 4096
_ROW_FIELDS = (
    "title",
    "content",
    "created_at",
    "recorded_at",
    "session",
    "extra.x_speaker",
    "importance",
    "confidence",
    "lifecycle",
    "valid_from",
    "valid_until",
    "expires",
    "ttl.policy",
    "ttl.expires_at",
    "ttl.decay_days",
)


def fts5_match(terms: Sequence[Term]) -> str:
    """An FTS5 MATCH expression ORing the terms, each quoted (inner quotes doubled) so no
    text reaches FTS5's syntax (``NEAR``, ``*``, column filters, parentheses)."""
    return " OR ".join(
        '"' + term.text.replace('"', '""') + '"' + "*" * term.prefix for term in terms if term.text
    )


class _Transaction:
    """An open write on one owner's chain (see ``Transaction`` in ``storage.base``)."""

    def __init__(self, store: SQLiteStore, connection: Any, owner: str) -> None:
        self._store = store
        self._db = connection
        self._owner = owner
        # (rid, vector or None for a deletion), applied to the vector cache after commit.
        self.vector_changes: list[tuple[int, Any]] = []

    @property
    def owner(self) -> str:
        return self._owner

    def tip(self) -> Tip:
        return self._store._tip(self._db, self._owner)

    def records(self, start: int = 0) -> Iterator[Record]:
        return self._store._records(self._db, self._owner, start)

    def get(self, memory_id: str) -> MemoryRecord | None:
        return self._store._get(self._db, self._owner, memory_id)

    def append(self, entry: Entry, meta: str | None, texts: Mapping[str, str]) -> int:
        tip = self.tip()
        self._db.execute(
            "INSERT INTO ledger (owner, seq, ts, content, source, tags, content_hash, prev_hash,"
            " hash, redacted, meta, texts) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                self._owner,
                tip.length,
                entry.ts,
                entry.content,
                entry.source,
                stored_json(list(entry.tags)),
                entry.content_hash,
                entry.prev_hash,
                entry.hash,
                int(entry.redacted),
                meta,
                stored_json(dict(texts)) if texts else None,
            ),
        )
        self._db.execute(
            "INSERT INTO heads (owner, length, head) VALUES (?,?,?) ON CONFLICT (owner) DO UPDATE"
            " SET length = excluded.length, head = excluded.head",
            (self._owner, tip.length + 1, entry.hash),
        )
        return tip.length

    def put(
        self, memory: MemoryRecord, embedding: Sequence[float] | None = None, *, new: bool = False
    ) -> None:
        self._store._put(self._db, memory, embedding, self.vector_changes, new=new)

    def erase(self, seq: int, entry: Entry, texts: Mapping[str, str]) -> None:
        self._db.execute(
            "UPDATE ledger SET content = ?, redacted = ?, texts = ? WHERE owner = ? AND seq = ?",
            (
                entry.content,
                int(entry.redacted),
                stored_json(dict(texts)) if texts else None,
                self._owner,
                seq,
            ),
        )
        self._store._erased = True

    def rewrite(self, seq: int, entry: Entry) -> None:
        self._db.execute(
            "UPDATE ledger SET ts = ?, content = ?, source = ?, tags = ?, content_hash = ?,"
            " prev_hash = ?, hash = ?, redacted = ? WHERE owner = ? AND seq = ?",
            (
                entry.ts,
                entry.content,
                entry.source,
                stored_json(list(entry.tags)),
                entry.content_hash,
                entry.prev_hash,
                entry.hash,
                int(entry.redacted),
                self._owner,
                seq,
            ),
        )
        self._db.execute(
            "UPDATE heads SET head = ? WHERE owner = ? AND length = ?",
            (entry.hash, self._owner, seq + 1),
        )

    def find_reply(self, message_id: str) -> StoredReply | None:
        row = self._db.execute(
            "SELECT request_checksum, response FROM checkpoint_replies"
            " WHERE owner = ? AND message_id = ?",
            (self._owner, message_id),
        ).fetchone()
        return None if row is None else StoredReply(self._owner, message_id, row[0], bytes(row[1]))

    def save_reply(self, reply: StoredReply) -> None:
        if reply.owner != self._owner:
            raise StorageError(
                f"a reply for {reply.owner} cannot be kept while holding {self._owner}'s chain",
                owner=reply.owner,
            )
        self._db.execute(
            "INSERT INTO checkpoint_replies (owner, message_id, request_checksum, response)"
            " VALUES (?,?,?,?)",
            (reply.owner, reply.message_id, reply.request_checksum, reply.response),
        )

    def drop_replies(self, containing: bytes) -> int:
        cursor = self._db.execute(
            "DELETE FROM checkpoint_replies WHERE owner = ? AND instr(response, ?) > 0",
            (self._owner, containing),
        )
        if cursor.rowcount:
            self._store._erased = True
        return int(cursor.rowcount)


# sqlite-vec 0.1's chunk table for a vec0 table with one partition key (memory_vec).
_CHUNK_COLUMNS = ("chunk_id", "size", "sequence_id", "partition00", "validity", "rowids")


class SQLiteStore:
    """The ``Store`` on one SQLite file."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._connections: list[Any] = []
        self._lock = threading.Lock()
        # Write transactions of this process queue here rather than in SQLite's busy
        # handler, which polls with sleeps of up to 100 ms and lets a waiter starve; it
        # also orders each write's update of the vector copy after the write before it.
        self._write_lock = threading.RLock()
        self._erased = False
        self._vectors = VectorCache()
        self._chunks_known: bool | None = None  # vec0's chunk layout, checked once
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = self._connection()
        with self._immediate(db):
            for statement in _SCHEMA.split(";\n"):
                if statement.strip():
                    db.execute(statement)
            db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        db.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('secure-delete', 1)")
        self._dimension: int | None = None
        model = self.vector_model()
        if model is not None:
            self._dimension = model[1]

    # -- connections -------------------------------------------------------------------

    def _connection(self) -> Any:
        db = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(
                    str(self.path), isolation_level=None, timeout=60, check_same_thread=False
                )
            except sqlite3.Error as exc:
                raise StorageError(f"cannot open the database at {self.path}: {exc}") from exc
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")
            db.execute("PRAGMA secure_delete = ON")
            db.execute("PRAGMA busy_timeout = 60000")
            db.execute("PRAGMA foreign_keys = ON")
            try:
                db.enable_load_extension(True)
                sqlite_vec.load(db)
                db.enable_load_extension(False)
            except (AttributeError, sqlite3.Error) as exc:
                raise StorageError(
                    f"sqlite-vec cannot be loaded ({exc}); install troth with its"
                    " pinned requirements (pysqlite3 and sqlite-vec)"
                ) from exc
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        return db

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

    @contextmanager
    def write(self, owner: str, expect: Tip | None = None) -> Iterator[_Transaction]:
        """Hold the database's write lock (and so ``owner``'s chain) for one transaction.

        With ``expect`` the tip is read under the lock at once (a local read costs little)
        and a moved chain raises :class:`StaleTipError` before anything is written.
        """
        db = self._connection()
        self._erased = False
        generation = None
        # The copy is updated before the next write of this process commits, so the
        # updates arrive in generation order and the copy is never dropped for a gap.
        with self._write_lock:
            with self._immediate(db):
                tx = _Transaction(self, db, owner)
                if expect is not None and tx.tip() != expect:
                    raise stale_tip(owner)
                yield tx
                if tx.vector_changes:
                    generation = self._bump_generation(db, owner)
            if generation is not None:
                self._vectors.apply(owner, generation, tx.vector_changes)
        if self._erased:
            self.compact()

    @staticmethod
    def _bump_generation(db: Any, owner: str) -> int:
        # A counter per owner that moves with every change of its vectors, so that a
        # cached copy (here or in another process) knows when it is out of date.
        row = db.execute(
            "INSERT INTO vector_generations (owner, gen) VALUES (?, 1) ON CONFLICT (owner)"
            " DO UPDATE SET gen = gen + 1 RETURNING gen",
            (owner,),
        ).fetchone()
        return int(row[0])

    # -- reads -------------------------------------------------------------------------

    def _tip(self, db: Any, owner: str) -> Tip:
        row = db.execute("SELECT length, head FROM heads WHERE owner = ?", (owner,)).fetchone()
        return Tip(0, "") if row is None else Tip(row[0], row[1])

    def _records(self, db: Any, owner: str, start: int) -> Iterator[Record]:
        cursor = db.execute(
            "SELECT seq, ts, content, source, tags, content_hash, prev_hash, hash, redacted, meta,"
            " texts FROM ledger WHERE owner = ? AND seq >= ? ORDER BY seq",
            (owner, start),
        )
        for row in cursor:
            entry = Entry(
                ts=row[1],
                content=row[2],
                source=row[3],
                tags=tuple(_decode(row[4])[0]),
                content_hash=row[5],
                prev_hash=row[6],
                hash=row[7],
                redacted=bool(row[8]),
            )
            yield Record(row[0], entry, row[9], _decode(row[10])[0] if row[10] else {})

    def _get(self, db: Any, owner: str, memory_id: str) -> MemoryRecord | None:
        row = db.execute(
            "SELECT doc FROM memories WHERE owner = ? AND id = ?", (owner, memory_id)
        ).fetchone()
        return None if row is None else memory_from_doc(row[0])

    def _put(
        self,
        db: Any,
        memory: MemoryRecord,
        embedding: Sequence[float] | None = None,
        changes: list[tuple[int, Any]] | None = None,
        *,
        new: bool = False,
    ) -> None:
        row = (
            None
            if new
            else db.execute("SELECT rid FROM memories WHERE id = ?", (memory.id,)).fetchone()
        )
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
            memory_doc(memory),
        )
        if row is None:
            try:
                cursor = db.execute(
                    "INSERT INTO memories (owner, status, retrievable, kind, scope, partition,"
                    " sensitivity, seq, updated_at, doc, id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
                " partition = ?, sensitivity = ?, seq = ?, updated_at = ?, doc = ? WHERE rid = ?",
                (*values, rid),
            )
            db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rid,))
        body = fts_body(memory)
        if body:
            db.execute("INSERT INTO memory_fts (rowid, body) VALUES (?, ?)", (rid, body))
        if self._dimension is None:
            return
        live = memory.searchable
        if embedding is not None and live:
            vector = as_vector(embedding, self._dimension)
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

    def tip(self, owner: str) -> Tip:
        """An owner's chain length and head."""
        return self._tip(self._connection(), owner)

    def records(self, owner: str, start: int = 0) -> Iterator[Record]:
        """An owner's stored rows in chain order."""
        return self._records(self._connection(), owner, start)

    def owners(self) -> list[str]:
        """Every owner with a chain."""
        return [r[0] for r in self._connection().execute("SELECT owner FROM heads ORDER BY owner")]

    def get(self, owner: str, memory_id: str) -> MemoryRecord | None:
        """One projected memory."""
        return self._get(self._connection(), owner, memory_id)

    def get_many(self, owner: str, memory_ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """Projected memories by id, in one query (missing ids are left out)."""
        rows = (
            self._connection()
            .execute(
                "SELECT m.doc FROM json_each(?) AS j CROSS JOIN memories m ON m.id = j.value"
                " WHERE m.owner = ?",
                (json.dumps(list(memory_ids)), owner),
            )
            .fetchall()
        )
        found = (memory_from_doc(row[0]) for row in rows)
        return {memory.id: memory for memory in found}

    def locate(self, memory_id: str) -> str | None:
        """The owner of a memory id."""
        row = (
            self._connection()
            .execute("SELECT owner FROM memories WHERE id = ?", (memory_id,))
            .fetchone()
        )
        return None if row is None else str(row[0])

    def _where(self, owner: str, query: MemoryFilter, alias: str = "") -> tuple[str, list[Any]]:
        p = f"{alias}." if alias else ""
        clauses = [f"{p}owner = ?"]
        params: list[Any] = [owner]
        if query.statuses is not None:
            clauses.append(f"{p}status IN ({','.join('?' * len(query.statuses))})")
            params.extend(query.statuses)
        if query.retrievable_only:
            clauses.append(f"{p}retrievable = 1 AND {p}status = 'active'")
        if query.kinds is not None:
            clauses.append(f"{p}kind IN ({','.join('?' * len(query.kinds))})")
            params.extend(query.kinds)
        if query.scope is not None:
            clauses.append(f"{p}scope = ?")
            params.append(query.scope)
        if query.partition is not None:
            clauses.append(f"{p}partition = ?")
            params.append(query.partition)
        if not query.include_sensitive:
            clauses.append(f"{p}sensitivity != 'sensitive'")
        for tag in query.tags:
            clauses.append(
                f"EXISTS (SELECT 1 FROM json_each(json_extract({p}doc, '$.tags')) WHERE value = ?)"
            )
            params.append(tag)
        return " AND ".join(clauses), params

    def memories(self, owner: str, query: MemoryFilter) -> list[MemoryRecord]:
        """Projected memories of one owner, newest first."""
        where, params = self._where(owner, query)
        sql = f"SELECT doc FROM memories WHERE {where} ORDER BY seq DESC"
        if query.limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [query.limit, query.offset]
        rows = self._connection().execute(sql, params)
        return [memory_from_doc(r[0]) for r in rows]

    def count(self, owner: str, query: MemoryFilter) -> int:
        """How many memories a filter matches."""
        where, params = self._where(owner, query)
        row = self._connection().execute(f"SELECT count(*) FROM memories WHERE {where}", params)
        return int(row.fetchone()[0])

    def projection(self, owner: str) -> dict[str, MemoryRecord]:
        """The stored projection of one owner.

        Filters read the indexed columns and reads the document; a column that disagrees
        with its document (changed behind the ledger's back) raises an IntegrityError naming
        the memory and the field, which ``verify`` reports.
        """
        rows = self._connection().execute(
            f"SELECT doc, {', '.join(PROJECTION_COLUMNS)} FROM memories WHERE owner = ?",
            (owner,),
        )
        return checked_projection(rows, PROJECTION_COLUMNS)

    def replace_projection(self, owner: str, memories: Mapping[str, MemoryRecord]) -> None:
        """Replace one owner's projection and full-text rows with recomputed ones."""
        db = self._connection()
        with self._immediate(db):
            rids = [r[0] for r in db.execute("SELECT rid FROM memories WHERE owner = ?", (owner,))]
            for rid in rids:
                db.execute("DELETE FROM memory_fts WHERE rowid = ?", (rid,))
                if self._dimension is not None:
                    db.execute("DELETE FROM memory_vec WHERE rowid = ?", (rid,))
            db.execute("DELETE FROM memories WHERE owner = ?", (owner,))
            for memory in sorted(memories.values(), key=lambda m: m.seq):
                self._put(db, memory)
            # The rows have new rids and no vectors: `reindex` (the facade does) restores them.
            self._bump_generation(db, owner)
        self._vectors.forget(owner)

    def lexical(
        self, owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Full-text candidates (bm25, lower is better in FTS5; returned negated)."""
        match = fts5_match(terms)
        if not match:
            return []
        where, params = self._where(owner, query, alias="m")
        db = self._connection()
        # FTS5 ranks its matches first (its own top-N sort, over every owner's rows); the
        # best are then joined and filtered. While too few pass, more are read. Left to
        # itself the planner would walk the owner's rows and probe FTS5 for each.
        # The matches come back as ONE row (a JSON array, scores printed exactly): every
        # row fetched lets go of the GIL and takes it back, and under a server's many
        # threads each take waits in line, so a thousand rows cost a thousand waits.
        want = limit * 2 + 64
        while True:
            try:
                packed = db.execute(
                    "WITH f AS MATERIALIZED (SELECT rowid, rank AS score FROM memory_fts"
                    " WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?)"
                    " SELECT json_group_array(json_array(m.id, printf('%!.17g', f.score), m.rid))"
                    f" FROM f CROSS JOIN memories m ON m.rid = f.rowid WHERE {where}",
                    [match, want, *params],
                ).fetchone()[0]
            except sqlite3.OperationalError as exc:
                raise StorageError(f"full-text query failed: {exc}", match=match) from exc
            rows = sorted(
                ((str(i), float(score), int(rid)) for i, score, rid in json.loads(packed)),
                key=lambda row: (row[1], row[2]),
            )
            if len(rows) >= limit:
                break
            total = db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)",
                (match, want + 1),
            ).fetchone()[0]
            if total <= want:
                break
            want *= 4
        rows = rows[:limit]
        return [Hit(row[0], rank, -float(row[1])) for rank, row in enumerate(rows, start=1)]

    # -- vectors -------------------------------------------------------------------------

    def vector_model(self) -> tuple[str, int] | None:
        """The embedding model (name, dimension) of the stored vectors, if any."""
        rows = dict(
            self._connection().execute(
                "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dim')"
            )
        )
        if "embedding_model" not in rows:
            return None
        return str(rows["embedding_model"]), int(rows["embedding_dim"])

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
        self._dimension = dimension
        self._chunks_known = None
        self._vectors.clear()
        self.compact()

    def vector_ids(self, owner: str) -> set[str]:
        """Ids of one owner's memories that have a row in the vector index."""
        if self._dimension is None:
            return set()
        rows = self._connection().execute(
            "SELECT m.id FROM memory_vec v JOIN memories m ON m.rid = v.rowid WHERE v.owner = ?",
            (owner,),
        )
        return {str(r[0]) for r in rows}

    def _generation(self, db: Any, owner: str) -> int:
        row = db.execute("SELECT gen FROM vector_generations WHERE owner = ?", (owner,)).fetchone()
        return 0 if row is None else int(row[0])

    def _chunk_layout(self, db: Any) -> bool:
        """Whether vec0 keeps its chunks as sqlite-vec 0.1 does (read directly, 20x faster)."""
        if self._chunks_known is None:
            columns = [r[1] for r in db.execute("PRAGMA table_info(memory_vec_chunks)")]
            vectors = [r[1] for r in db.execute("PRAGMA table_info(memory_vec_vector_chunks00)")]
            self._chunks_known = columns == list(_CHUNK_COLUMNS) and vectors == ["rowid", "vectors"]
        return self._chunks_known

    def _vector_count(self, db: Any, owner: str) -> int:
        if self._chunk_layout(db):
            rows = db.execute(
                "SELECT validity, size FROM memory_vec_chunks WHERE partition00 = ?", (owner,)
            ).fetchall()
            return live_count([r[0] for r in rows], [int(r[1]) for r in rows])
        return int(
            db.execute("SELECT count(*) FROM memory_vec WHERE owner = ?", (owner,)).fetchone()[0]
        )

    def _load_vectors(self, db: Any, owner: str, generation: int) -> CachedVectors:
        """The owner's vectors into the in-process copy: a chunk at a time when the layout is
        known, else a row at a time through vec0 (the same vectors: tested)."""
        dimension = self._dimension or 0
        if self._chunk_layout(db):
            chunks = db.execute(
                "SELECT c.size, c.validity, c.rowids, v.vectors FROM memory_vec_chunks c"
                " JOIN memory_vec_vector_chunks00 v ON v.rowid = c.chunk_id"
                " WHERE c.partition00 = ? ORDER BY c.chunk_id",
                (owner,),
            ).fetchall()
            rids, vectors = unpack_chunks(chunks, dimension)
            return self._vectors.load_arrays(owner, generation, rids, vectors)
        rows = db.execute(
            "SELECT rowid, embedding FROM memory_vec WHERE owner = ?", (owner,)
        ).fetchall()
        return self._vectors.load(owner, generation, rows, dimension)

    def _nearest(
        self, db: Any, owner: str, query: Any, k: int
    ) -> tuple[list[tuple[int, float]], int]:
        """The ``k`` nearest (rid, cosine) of one owner, and how many vectors it has."""
        generation = self._generation(db, owner)
        cached = self._vectors.get(owner, generation)
        if cached is None and self._vectors.wants(
            self._vector_count(db, owner), self._dimension or 0
        ):
            cached = self._load_vectors(db, owner, generation)
        if cached is not None:
            return self._vectors.nearest(cached, query, k)
        total = int(
            db.execute("SELECT count(*) FROM memory_vec WHERE owner = ?", (owner,)).fetchone()[0]
        )
        rows = db.execute(
            "SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ?"
            " AND owner = ? ORDER BY distance",
            (query.tobytes(), min(k, _VEC0_MAX_K), owner),
        ).fetchall()
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows], min(total, _VEC0_MAX_K)

    def vector(
        self, owner: str, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Nearest retrievable memories by cosine (higher is better) that pass the filter.

        Exact search: over an in-process copy of the owner's vectors (numpy) when it has
        as many as ``VectorCache.max_bytes`` holds, else sqlite-vec's vec0 KNN. The filter is
        applied to the nearest rows; while too few pass, more are read.
        """
        if self._dimension is None or limit < 1:
            return []
        db = self._connection()
        vector = as_vector(embedding, self._dimension)
        where_m, params = self._where(owner, query, alias="m")
        want = limit + 32
        while True:
            nearest, total = self._nearest(db, owner, vector, want)
            allowed = {
                int(r[0]): str(r[1])
                for r in db.execute(
                    "SELECT m.rid, m.id FROM json_each(?) AS j CROSS JOIN memories m"
                    f" ON m.rid = j.value WHERE {where_m}",
                    [json.dumps([rid for rid, _ in nearest]), *params],
                )
            }
            kept = [(allowed[rid], score) for rid, score in nearest if rid in allowed]
            if len(kept) >= limit or want >= total:
                break
            want *= 4
        return [Hit(mid, rank, score) for rank, (mid, score) in enumerate(kept[:limit], start=1)]

    def recall_rows(self, owner: str, ids: Sequence[str]) -> dict[str, RecallRow]:
        """The ranking fields of these memories, read from their stored documents."""
        # One row back (see ``lexical``): the fields are copied as the document's own JSON.
        paths = ", ".join(f"m.doc -> '$.{name}'" for name in _ROW_FIELDS)
        packed = (
            self._connection()
            .execute(
                f"SELECT json_group_array(json_array(m.id, m.seq, m.updated_at, {paths}))"
                " FROM json_each(?) AS j CROSS JOIN memories m ON m.id = j.value"
                " WHERE m.owner = ?",
                (json.dumps(list(ids)), owner),
            )
            .fetchone()[0]
        )
        rows = (recall_row(r) for r in json.loads(packed))
        return {row.memory_id: row for row in rows}

    # -- bearer tokens -------------------------------------------------------------------

    _TOKEN_COLUMNS = TOKEN_COLUMNS

    @staticmethod
    def _token(row: Any) -> TokenRecord:
        return token_record(row, json.loads(row[4]))

    def put_token(self, record: TokenRecord) -> None:
        """Keep a new token record (hash only)."""
        db = self._connection()
        with self._immediate(db):
            db.execute(
                f"INSERT INTO tokens ({self._TOKEN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    record.token_id,
                    record.secret_hash,
                    record.principal,
                    record.on_behalf_of,
                    json.dumps(list(record.scopes)),
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
            .execute(f"SELECT {self._TOKEN_COLUMNS} FROM tokens WHERE id = ?", (token_id,))
            .fetchone()
        )
        return None if row is None else self._token(row)

    def tokens(self, principal: str | None = None) -> list[TokenRecord]:
        """Token records, oldest first."""
        sql = f"SELECT {self._TOKEN_COLUMNS} FROM tokens"
        params: tuple[str, ...] = ()
        if principal is not None:
            sql += " WHERE principal = ?"
            params = (principal,)
        rows = self._connection().execute(sql + " ORDER BY created_at, id", params)
        return [self._token(row) for row in rows]

    def revoke_token(self, token_id: str, at: str) -> bool:
        """Mark a token revoked; False when there is no unrevoked token with that id."""
        db = self._connection()
        with self._immediate(db):
            cursor = db.execute(
                "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (at, token_id),
            )
        return bool(cursor.rowcount)

    # The erasure flag is per thread: a server runs transactions on many threads at once,
    # and one thread's write must not clear another's pending compaction.
    @property
    def _erased(self) -> bool:
        return bool(getattr(self._local, "erased", False))

    @_erased.setter
    def _erased(self, value: bool) -> None:
        self._local.erased = value

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Nothing to defer: FTS5 and vec0 take rows at a constant cost (no graph to grow)."""
        yield

    def compact(self) -> None:
        """Truncate the WAL after an erasure so no old page image survives in it."""
        db = self._connection()
        db.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        for _ in range(50):
            busy, _log, _done = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return
            threading.Event().wait(0.05)
        raise StorageError(
            "the write-ahead log could not be truncated because another connection is reading;"
            " run `troth verify` again when other processes have finished"
        )

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()

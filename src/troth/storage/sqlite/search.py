"""Search on SQLite: FTS5 for words, sqlite-vec (or an in-process copy) for vectors.

The full-text index is a contentless FTS5 table keyed by the projection row's ``rid``
(``secure-delete`` on); vectors are a ``vec0`` table partitioned by owner, created once
an embedding model is recorded, and mirrored per owner in an in-process copy
(``storage.vectors``) when they fit, which an exact numpy search reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from troth.core.errors import StorageError
from troth.core.query import Term
from troth.storage import sql
from troth.storage.base import Hit, MemoryFilter, RecallRow
from troth.storage.packed import id_list, parse
from troth.storage.rows import CONTEXT_WEIGHT, recall_row
from troth.storage.sqlite.schema import sqlite3
from troth.storage.sqlite.terms import CommonTerms
from troth.storage.sqlite.transaction import DIALECT
from troth.storage.vectors import CachedVectors, VectorCache, as_vector, live_count, unpack_chunks

# The vec0 KNN query reads at most this many neighbours (sqlite-vec's own limit).
_VEC0_MAX_K = 4096
# sqlite-vec 0.1's chunk table for a vec0 table with one partition key (memory_vec).
_CHUNK_COLUMNS = ("chunk_id", "size", "sequence_id", "partition00", "validity", "rowids")
FILTERS = sql.Filters(
    DIALECT,
    any_of=lambda column, values: (f"{column} IN ({','.join('?' * len(values))})", list(values)),
    true=" = 1",
    has_tags=lambda p, tags: (
        " AND ".join(
            f"EXISTS (SELECT 1 FROM json_each(json_extract({p}doc, '$.tags')) WHERE value = ?)"
            for _ in tags
        ),
        list(tags),
    ),
)
"""A memory filter as SQLite's WHERE clause."""


def fts5_match(terms: Sequence[Term]) -> str:
    """An FTS5 MATCH expression ORing the terms, each quoted (inner quotes doubled) so no
    text reaches FTS5's syntax (``NEAR``, ``*``, column filters, parentheses)."""
    return " OR ".join(
        '"' + term.text.replace('"', '""') + '"' + "*" * term.prefix for term in terms if term.text
    )


class SQLiteSearch:
    """The lexical and vector searches of one store, and its vectors' in-process copy.

    ``dimension`` is the recorded model's (None before one is); ``vectors`` the copy that
    each write's vector changes reach after it commits.
    """

    def __init__(self, dimension: int | None) -> None:
        self.dimension = dimension
        self.vectors = VectorCache()
        self.common = CommonTerms()
        self._chunks_known: bool | None = None  # vec0's chunk layout, checked once

    def reset(self, dimension: int) -> None:
        """A new model (and an empty vector table) of ``dimension``: the copy is dropped."""
        self.dimension = dimension
        self._chunks_known = None
        self.vectors.clear()

    def lexical(
        self, db: Any, owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Full-text candidates (bm25, lower is better in FTS5; returned negated)."""
        words = [t for t in terms if t.text]
        # The terms are chosen at the index size (N) the last search read, and this
        # search reads its own N in its statement: only if the terms that N decides
        # differ (the index grew or shrank past a cached count's drift) is it run again.
        seen = self.common.total
        kept = self.common.scored(db, words, fts5_match, seen)
        hits, total = self._lexical(db, owner, kept, limit, query)
        if total is None:  # nothing to match: nothing was read
            return hits
        self.common.total = total
        if len(words) >= 2 and seen != total:
            again = self.common.scored(db, words, fts5_match, total)
            if again != kept:
                hits, _ = self._lexical(db, owner, again, limit, query)
        return hits

    def _lexical(
        self, db: Any, owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
    ) -> tuple[list[Hit], int | None]:
        """The hits of these terms, and the index size N read in the same statement (None
        when there is nothing to match)."""
        match = fts5_match(terms)
        if not match:
            return [], None
        where, params = FILTERS.where(owner, query, alias="m")
        # FTS5 scores its matches first (over every owner's rows) and SQLite's sorter keeps
        # the best (bm25 is FTS5's `rank`; called by name, the top-N is SQLite's heap
        # rather than FTS5's rank sorter, ~40% less CPU at 100k memories, and ties break
        # by rowid as the order below does); the best are then joined and filtered. While
        # too few pass, more are read. Left to itself the planner would walk the owner's
        # rows and probe FTS5 for each.
        # The matches come back as ONE row (a JSON array, scores printed exactly): every
        # row fetched lets go of the GIL and takes it back, and under a server's many
        # threads each take waits in line, so a thousand rows cost a thousand waits. The
        # index size the common terms are decided at rides in the same row. The first read
        # joins a margin over ``limit``: every row joined is a probe of ``memories``
        # (~1 µs), and twice the limit cost ~0.5 ms more at 100k for one owner's rows.
        want = limit + 64
        total: int | None = None
        while True:
            try:
                # Only the best ``limit`` that pass are printed and parsed (SQLite's sorter
                # orders them; the sort below is then one pass over sorted rows).
                packed, size = db.execute(
                    "WITH f AS MATERIALIZED (SELECT rowid,"
                    f" bm25(memory_fts, 1.0, {CONTEXT_WEIGHT}) AS score"
                    " FROM memory_fts WHERE memory_fts MATCH ? ORDER BY score, rowid LIMIT ?)"
                    " SELECT (SELECT json_group_array(json_array(i, s, r, q)) FROM (SELECT"
                    " m.id AS i, printf('%!.17g', f.score) AS s, m.rid AS r, m.seq AS q FROM f"
                    f" CROSS JOIN memories m ON m.rid = f.rowid WHERE {where}"
                    f" ORDER BY f.score, f.rowid LIMIT ?)), ({CommonTerms.TOTAL})",
                    [match, want, *params, limit],
                ).fetchone()
            except sqlite3.OperationalError as exc:
                raise StorageError(f"full-text query failed: {exc}", match=match) from exc
            total = int(size) if total is None else total
            # (score, rid, id, seq): tuples sort by score then the unique rid, in C (a key
            # function would cost a call per row).
            rows = sorted(
                [(float(score), int(rid), str(i), int(seq)) for i, score, rid, seq in parse(packed)]
            )
            if len(rows) >= limit:
                break
            matched = db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)",
                (match, want + 1),
            ).fetchone()[0]
            if matched <= want:
                break
            want *= 4
        hits = [
            Hit(memory_id, rank, -score, seq)
            for rank, (score, _, memory_id, seq) in enumerate(rows, start=1)
        ]
        return hits, total

    def recall_rows(self, db: Any, owner: str, ids: Sequence[str]) -> dict[str, RecallRow]:
        """The ranking fields of these memories, from their rows' ``recall`` column."""
        # One row back (see ``lexical``): the columns, each a JSON array, joined as one.
        packed = db.execute(
            "SELECT '[' || coalesce(group_concat(m.recall, ','), '') || ']'"
            " FROM json_each(?) AS j CROSS JOIN memories m ON m.id = j.value WHERE m.owner = ?",
            (id_list(ids), owner),
        ).fetchone()[0]
        rows = (recall_row(r) for r in parse(packed))
        return {row.memory_id: row for row in rows}

    # -- vectors -------------------------------------------------------------------------

    def vector_ids(self, db: Any, owner: str) -> set[str]:
        """Ids of one owner's memories that have a row in the vector index."""
        if self.dimension is None:
            return set()
        rows = db.execute(
            "SELECT m.id FROM memory_vec v JOIN memories m ON m.rid = v.rowid WHERE v.owner = ?",
            (owner,),
        )
        return {str(r[0]) for r in rows}

    @staticmethod
    def generation(db: Any, owner: str) -> int:
        """The owner's vector generation as stored (0 before its first vector)."""
        row = db.execute("SELECT gen FROM vector_generations WHERE owner = ?", (owner,)).fetchone()
        return 0 if row is None else int(row[0])

    def chunk_layout(self, db: Any, *, known: bool | None = None) -> bool:
        """Whether vec0 keeps its chunks as sqlite-vec 0.1 does (read directly, 20x faster).

        ``known`` overrides what was found (a test compares both ways of reading).
        """
        if known is not None:
            self._chunks_known = known
        if self._chunks_known is None:
            columns = [r[1] for r in db.execute("PRAGMA table_info(memory_vec_chunks)")]
            vectors = [r[1] for r in db.execute("PRAGMA table_info(memory_vec_vector_chunks00)")]
            self._chunks_known = columns == list(_CHUNK_COLUMNS) and vectors == ["rowid", "vectors"]
        return self._chunks_known

    def vector_count(self, db: Any, owner: str) -> int:
        """How many vectors the owner has in the index."""
        if self.chunk_layout(db):
            rows = db.execute(
                "SELECT validity, size FROM memory_vec_chunks WHERE partition00 = ?", (owner,)
            ).fetchall()
            return live_count([r[0] for r in rows], [int(r[1]) for r in rows])
        return int(
            db.execute("SELECT count(*) FROM memory_vec WHERE owner = ?", (owner,)).fetchone()[0]
        )

    def load_vectors(self, db: Any, owner: str, generation: int) -> CachedVectors:
        """The owner's vectors into the in-process copy: a chunk at a time when the layout is
        known, else a row at a time through vec0 (the same vectors: tested)."""
        dimension = self.dimension or 0
        if self.chunk_layout(db):
            chunks = db.execute(
                "SELECT c.size, c.validity, c.rowids, v.vectors FROM memory_vec_chunks c"
                " JOIN memory_vec_vector_chunks00 v ON v.rowid = c.chunk_id"
                " WHERE c.partition00 = ? ORDER BY c.chunk_id",
                (owner,),
            ).fetchall()
            rids, vectors = unpack_chunks(chunks, dimension)
            return self.vectors.load_arrays(owner, generation, rids, vectors)
        rows = db.execute(
            "SELECT rowid, embedding FROM memory_vec WHERE owner = ?", (owner,)
        ).fetchall()
        return self.vectors.load(owner, generation, rows, dimension)

    def _nearest(
        self, db: Any, owner: str, query: Any, k: int
    ) -> tuple[list[tuple[int, float]], int]:
        """The ``k`` nearest (rid, cosine) of one owner, and how many vectors it has."""
        generation = self.generation(db, owner)
        cached = self.vectors.get(owner, generation)
        if cached is None and self.vectors.wants(self.vector_count(db, owner), self.dimension or 0):
            cached = self.load_vectors(db, owner, generation)
        if cached is not None:
            return self.vectors.nearest(cached, query, k)
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
        self, db: Any, owner: str, embedding: Sequence[float], limit: int, query: MemoryFilter
    ) -> list[Hit]:
        """Nearest retrievable memories by cosine (higher is better) that pass the filter.

        Exact search: over an in-process copy of the owner's vectors (numpy) when it has
        as many as ``VectorCache.max_bytes`` holds, else sqlite-vec's vec0 KNN. The filter is
        applied to the nearest rows; while too few pass, more are read.
        """
        if self.dimension is None or limit < 1:
            return []
        vector = as_vector(embedding, self.dimension)
        where_m, params = FILTERS.where(owner, query, alias="m")
        want = limit + 32
        while True:
            nearest, total = self._nearest(db, owner, vector, want)
            # One row back, as in ``lexical``: the rows that pass, each with its place in
            # ``nearest`` (json_each's key), which orders them again below.
            packed = db.execute(
                "SELECT json_group_array(json_array(j.key, m.id, m.seq)) FROM json_each(?) AS j"
                f" CROSS JOIN memories m ON m.rid = j.value WHERE {where_m}",
                [id_list(rid for rid, _ in nearest), *params],
            ).fetchone()[0]
            kept = [
                (str(mid), int(seq), nearest[place][1]) for place, mid, seq in sorted(parse(packed))
            ]
            if len(kept) >= limit or want >= total:
                break
            want *= 4
        return [
            Hit(mid, rank, score, seq)
            for rank, (mid, seq, score) in enumerate(kept[:limit], start=1)
        ]

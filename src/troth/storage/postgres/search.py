"""Search on PostgreSQL: ``tsvector`` + GIN for words, pgvector's HNSW for vectors.

The store runs the statements built here (a vector search needs its transaction's
settings, which the store owns); filters and rendering are here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql as pgsql

from troth.core.errors import StorageError
from troth.core.query import Term
from troth.storage import sql
from troth.storage.base import Hit, MemoryFilter, RecallRow
from troth.storage.packed import id_list, parse
from troth.storage.postgres.schema import TEXT_SEARCH_CONFIG
from troth.storage.postgres.transaction import DIALECT
from troth.storage.rows import CONTEXT_WEIGHT, recall_row

FILTERS = sql.Filters(
    DIALECT,
    any_of=lambda column, values: (f"{column} = ANY(%s)", [list(values)]),
    true="",
    has_tags=lambda p, tags: (f"{p}tags @> %s", [list(tags)]),
    text_order=' COLLATE "C"',
)
"""A memory filter as PostgreSQL's WHERE clause."""

SEARCH_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', %s, true),"
    " set_config('hnsw.iterative_scan', 'relaxed_order', true)"
)
"""A vector search's settings, for its transaction only (pgvector >= 0.8 knows both)."""

IDS_IN = "ANY(ARRAY(SELECT json_array_elements_text(%s::json)))"
"""``= IDS_IN``: one of the ids of a JSON array sent as one text parameter
(``storage.packed.id_list``). A list adapted element by element cost ~0.6 ms more of the
100k p50, in turns in one process (docs/benchmarks.md, "Issue 19, 2026-12-08")."""

# The ``recall`` columns of the rows, joined as one JSON array: one value back, not ~1,000.
_RECALL_ROWS = (
    "SELECT '[' || coalesce(string_agg(recall, ','), '') || ']' FROM memories"
    f" WHERE owner = %s AND id = {IDS_IN}"
)


def tsquery_text(terms: Sequence[Term]) -> str:
    """A ``to_tsquery`` input ORing the terms, each quoted so no input reaches its syntax."""
    return " | ".join(_tsquery_term(term) for term in terms)


def _tsquery_term(term: Term, weight: str = "") -> str:
    """One term as ``to_tsquery`` input, quoted; ``weight`` (e.g. "A") keeps only the
    lexemes of that weight (``'tea':A``, a prefix ``'kettl':*A``)."""
    quoted = "'" + term.text.replace("\\", "\\\\").replace("'", "''") + "'"
    return quoted + (":*" if term.prefix else ":" if weight else "") + weight


BM25_K1 = 1.2
"""BM25's term-frequency saturation, FTS5's ``bm25()`` constant: both backends weigh alike."""
BM25_B = 0.75
"""BM25's length normalisation, FTS5's constant."""


def bm25_statement(term_count: int, where: str) -> str:
    """The lexical search's statement for ``term_count`` terms: Okapi BM25 over the
    memories that match any term, ordered best first.

    Parameters, in order: the text search configuration and a ``tsquery`` text for the
    ORed terms, then for each term two (configuration, ``tsquery``) pairs (the term, its
    weight-A lexemes), then ``where``'s parameters, then the limit.

    ``ts_rank`` (before) has no idf: a word most memories hold counted as much as a rare
    one, and on LoCoMo PostgreSQL's recall@5 was 0.615 where SQLite's FTS5 ``bm25()`` gave
    0.731. Here each term ``t`` adds ``idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * len /
    avglen))``, where ``f`` is 1 for a term in the memory's own words and
    ``storage.rows.CONTEXT_WEIGHT`` for one only in its neighbours' (weight C; ``@@`` says
    whether, not how often: a word repeated does not outrank the text that says it once),
    ``len`` the
    memory's lexeme count (``length(body)``) and ``idf(t) = ln(1 + (N - n + 0.5) / (n +
    0.5))``. ``N``, ``n`` (the memories holding ``t``) and ``avglen`` are counted over the
    matching memories the filter admits, the rows this statement reads anyway (the owner's
    own counts cost a scan of all its rows: a 100k p50 of 57.0 ms against 32.8 in one
    scratch run each): a word that every match holds tells them apart by nothing.
    docs/retrieval.md, "BM25 on PostgreSQL"."""
    queries = ["to_tsquery(%s::regconfig, %s) AS q"]
    for i in range(term_count):
        queries += [
            f"to_tsquery(%s::regconfig, %s) AS p{i}",
            f"to_tsquery(%s::regconfig, %s) AS a{i}",
        ]
    # Each matching row is read once for its length and its ``f`` of each term, the own
    # words asked about only where the term is (a body holds A and C lexemes only): one
    # ``@@`` for each term a memory lacks, two for each it holds.
    found = "".join(
        f", CASE WHEN body @@ q.p{i} THEN CASE WHEN body @@ q.a{i} THEN 1.0::float8"
        f" ELSE {CONTEXT_WEIGHT}::float8 END ELSE 0.0::float8 END AS f{i}"
        for i in range(term_count)
    )
    # What does not vary by row is computed once, with the counts: each term's idf, and the
    # length norm's two parts (``k1 * (1 - b) + k1 * b / avglen * len``).
    idfs = "".join(
        f", ln(1 + (count(*) - count(*) FILTER (WHERE f{i} > 0) + 0.5::float8)"
        f" / (count(*) FILTER (WHERE f{i} > 0) + 0.5::float8)) AS w{i}"
        for i in range(term_count)
    )
    # float8 throughout: a bare literal is numeric in PostgreSQL, and with numeric
    # arithmetic the 100k p50 was 30.8 ms against 24.9 (docs/retrieval.md).
    norm = "(s.fixed + s.per_lexeme * m.len)"
    # A term the memory lacks adds nothing, and is not computed.
    score = " + ".join(
        f"CASE WHEN m.f{i} > 0 THEN s.w{i} * m.f{i} * {BM25_K1 + 1}::float8 / (m.f{i} + {norm})"
        " ELSE 0.0::float8 END"
        for i in range(term_count)
    )
    # MATERIALIZED: each CTE is computed once, never rescanned beside every row of a join.
    return (
        f"WITH q AS MATERIALIZED (SELECT {', '.join(queries)}),"
        f" m AS MATERIALIZED (SELECT id, seq, length(body)::float8 AS len{found} FROM memories, q"
        f" WHERE body @@ q.q AND {where}),"
        f" s AS MATERIALIZED (SELECT {BM25_K1 * (1 - BM25_B)}::float8 AS fixed,"
        f" {BM25_K1 * BM25_B}::float8 / greatest(avg(len), 1)::float8 AS per_lexeme{idfs}"
        " FROM m)"
        f" SELECT m.id, {score} AS score, m.seq FROM m, s"
        ' ORDER BY score DESC, m.seq DESC, m.id COLLATE "C" LIMIT %s'
    )


def lexical(
    db: psycopg.Connection[Any], owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
) -> list[Hit]:
    """Full-text candidates ranked by BM25 (:func:`bm25_statement`; higher is better)."""
    built = _lexical_statement(owner, terms, limit, query)
    if built is None:
        return []
    statement, arguments, text = built
    try:
        cursor = db.execute(statement, arguments)
    except psycopg.Error as exc:
        raise StorageError(f"full-text query failed: {exc}", match=text) from exc
    return LexicalAnswer(cursor, text).hits()


def _lexical_statement(
    owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
) -> tuple[str, list[Any], str] | None:
    """The lexical search's statement, its arguments and its ``tsquery`` text (None when
    no term is left to match)."""
    terms = [term for term in terms if term.text]
    if not terms:
        return None
    where, params = FILTERS.where(owner, query)
    text = tsquery_text(terms)
    arguments: list[Any] = [TEXT_SEARCH_CONFIG, text]
    for term in terms:
        for weight in ("", "A"):
            arguments += [TEXT_SEARCH_CONFIG, _tsquery_term(term, weight)]
    return bm25_statement(len(terms), where), [*arguments, *params, limit], text


class LexicalAnswer:
    """The lexical search's hits once its statement has been answered."""

    def __init__(self, cursor: psycopg.Cursor[Any] | None, match: str) -> None:
        self._cursor = cursor
        self.match = match

    def hits(self) -> list[Hit]:
        """The hits, best first (none when there was nothing to match)."""
        if self._cursor is None:
            return []
        try:
            rows = self._cursor.fetchall()
        except psycopg.Error as exc:
            raise StorageError(f"full-text query failed: {exc}", match=self.match) from exc
        return [
            Hit(str(row[0]), rank, float(row[1]), int(row[2]))
            for rank, row in enumerate(rows, start=1)
        ]


@contextmanager
def sent_lexical(
    db: psycopg.Connection[Any], owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
) -> Iterator[LexicalAnswer]:
    """The lexical search's statement sent on ``db`` in a pipeline that is synced as the
    block closes: the server works on it while the block runs (a recall's vector search
    from its in-process copy, ``postgres.nearest``); its answer is read after the block.
    A failure is the full-text search's ``StorageError``."""
    built = _lexical_statement(owner, terms, limit, query)
    if built is None:
        yield LexicalAnswer(None, "")
        return
    statement, arguments, text = built
    in_block = False  # what the block raises is its own, never labelled as this search's
    try:
        with db.pipeline():
            cursor = db.execute(statement, arguments)
            in_block = True
            yield LexicalAnswer(cursor, text)
            in_block = False
    except psycopg.Error as exc:
        if in_block:
            raise
        raise StorageError(f"full-text query failed: {exc}", match=text) from exc


def recall_rows(
    db: psycopg.Connection[Any], owner: str, ids: Sequence[str]
) -> dict[str, RecallRow]:
    """The ranking fields of these memories, from their rows' ``recall`` column."""
    packed = db.execute(_RECALL_ROWS, (owner, id_list(ids))).fetchone()
    rows = parse(packed[0]) if packed else []
    return {row.memory_id: row for row in map(recall_row, rows)}


def nearest_statement(
    owner: str, dimension: int, literal: str, limit: int, query: MemoryFilter
) -> tuple[pgsql.Composed, list[Any]]:
    """The exact-order nearest-neighbour query over the HNSW index, and its arguments."""
    where, params = FILTERS.where(owner, query)
    statement = pgsql.SQL(
        "SELECT id, 1 - (embedding::vector({dim}) <=> %s::vector({dim})) AS score, seq"
        " FROM memories WHERE embedding IS NOT NULL AND {where}"
        " ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT %s"
    ).format(dim=pgsql.Literal(dimension), where=pgsql.SQL(where))
    return statement, [literal, *params, literal, limit]

"""Search on PostgreSQL: ``tsvector`` + GIN for words, pgvector's HNSW for vectors.

The store runs the statements built here (a vector search needs its transaction's
settings, which the store owns); filters and rendering are here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql as pgsql

from troth.core.errors import StorageError
from troth.core.query import Term
from troth.storage import sql
from troth.storage.base import Hit, MemoryFilter, RecallRow
from troth.storage.postgres.schema import TEXT_SEARCH_CONFIG
from troth.storage.postgres.transaction import DIALECT
from troth.storage.rows import recall_row

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

# The ``recall`` columns of the rows, joined as one JSON array: one value back, not ~1,000.
_RECALL_ROWS = (
    "SELECT '[' || coalesce(string_agg(recall, ','), '') || ']' FROM memories"
    " WHERE owner = %s AND id = ANY(%s)"
)


def tsquery_text(terms: Sequence[Term]) -> str:
    """A ``to_tsquery`` input ORing the terms, each quoted so no input reaches its syntax."""
    parts = []
    for term in terms:
        quoted = "'" + term.text.replace("\\", "\\\\").replace("'", "''") + "'"
        parts.append(quoted + (":*" if term.prefix else ""))
    return " | ".join(parts)


def lexical(
    db: psycopg.Connection[Any], owner: str, terms: Sequence[Term], limit: int, query: MemoryFilter
) -> list[Hit]:
    """Full-text candidates ranked by ``ts_rank`` over the text's length (higher is better):
    a word repeated does not outrank the text that says it once (normalisation 2).

    ``ts_rank`` (a weighted sum per matched term), not ``ts_rank_cd`` (cover density),
    which ranked the same matches at ~3x the server's CPU, two thirds of a 100k recall's
    lexical search, for the same LoCoMo figures on PostgreSQL (docs/retrieval.md,
    "PostgreSQL at 100k (branch hpg4)"). Both read A at 1.0 and C at 0.2."""
    terms = [term for term in terms if term.text]
    if not terms:
        return []
    where, params = FILTERS.where(owner, query)
    statement = (
        "SELECT id, ts_rank(body, q, 2) AS score, seq FROM memories,"
        f" to_tsquery(%s::regconfig, %s) AS q WHERE body @@ q AND {where}"
        ' ORDER BY score DESC, seq DESC, id COLLATE "C" LIMIT %s'
    )
    text = tsquery_text(terms)
    try:
        rows = db.execute(statement, [TEXT_SEARCH_CONFIG, text, *params, limit]).fetchall()
    except psycopg.Error as exc:
        raise StorageError(f"full-text query failed: {exc}", match=text) from exc
    return [
        Hit(str(row[0]), rank, float(row[1]), int(row[2])) for rank, row in enumerate(rows, start=1)
    ]


def recall_rows(
    db: psycopg.Connection[Any], owner: str, ids: Sequence[str]
) -> dict[str, RecallRow]:
    """The ranking fields of these memories, from their rows' ``recall`` column."""
    packed = db.execute(_RECALL_ROWS, (owner, list(ids))).fetchone()
    rows = json.loads(packed[0]) if packed else []
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

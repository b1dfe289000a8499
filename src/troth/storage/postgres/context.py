"""Context expansion in PostgreSQL's full-text vector: SQLite's ``context`` column
(``storage.sqlite.context``) as lower-weighted lexemes of the same ``body`` tsvector.

``body`` is ``setweight(to_tsvector(text), 'A')`` (the memory's own words) followed by
``setweight(…, 'C')`` of the nearest lending memory before and after it by ``seq`` in the
same owner, session, partition and scope. The lexical rank counts a word found at A as
1.0 and one found only at C as ``storage.rows.CONTEXT_WEIGHT`` (0.2), as SQLite's
``bm25(memory_fts, 1.0, 0.2)`` does; the memory's own part is ``ts_filter(body, '{a}')``,
from which a neighbour's context is built without reading its document.

Erasure: :data:`REFRESH` rewrites the context of the memories a transaction put and of
their neighbours, in that transaction, after its rows; :data:`NEAR` finds the neighbours a
changed memory had *before* (a redaction erases the session that finds them).
"""

from __future__ import annotations

from typing import Final

from troth.storage.sql import lends_context_sql

_LENDS = lends_context_sql("m.", "")  # rows.lends_context, as this store's SQL
# A neighbour's status is tested as an expression no index holds: with it as a plain
# equality the planner walks ``memories_owner`` (owner, status, seq) backwards, filtering
# on the session, which for a conversation's first memory reads every earlier row of the
# owner (a batch of 1,000 took 20-27 s at 3,000 memories); without it only
# ``memories_session`` gives the rows in seq order.
_NEIGHBOUR_LENDS = lends_context_sql("n.", "", unindexed=("status",))
_SAME = (
    "n.owner = {t}.owner AND (n.recall::jsonb ->> 7) = {s} AND n.partition = {t}.partition"
    " AND n.scope = {t}.scope AND " + _NEIGHBOUR_LENDS
)
_BESIDE = (
    "(SELECT {what} FROM memories n WHERE {same} AND n.seq {op} {t}.seq"
    " ORDER BY n.seq {order} LIMIT 1)"
)


def _beside(what: str, t: str, session: str, op: str) -> str:
    return _BESIDE.format(
        what=what,
        same=_SAME.format(t=t, s=session),
        op=op,
        t=t,
        order="DESC" if op == "<" else "ASC",
    )


NEAR: Final = (
    "SELECT DISTINCT x.id FROM memories t CROSS JOIN LATERAL (SELECT t.id UNION ALL "
    + _beside("n.id", "t", "(t.recall::jsonb ->> 7)", "<")
    + " UNION ALL "
    + _beside("n.id", "t", "(t.recall::jsonb ->> 7)", ">")
    + ") AS x(id) WHERE t.owner = %s AND t.id = ANY(%s) AND x.id IS NOT NULL"
)
"""The ids of these memories of one owner and of their neighbours (owner, ids)."""

_CONTEXT = (
    "CASE WHEN (m.recall::jsonb ->> 7) IS NOT NULL AND "
    + _LENDS
    + " THEN setweight(coalesce("
    + _beside("ts_filter(n.body, '{a}')", "m", "(m.recall::jsonb ->> 7)", "<")
    + ", '') || coalesce("
    + _beside("ts_filter(n.body, '{a}')", "m", "(m.recall::jsonb ->> 7)", ">")
    + ", ''), 'C') ELSE ''::tsvector END"
)

ALL: Final = f"UPDATE memories m SET body = ts_filter(m.body, '{{a}}') || {_CONTEXT}"
"""Every row's context (the migration's back-fill)."""

OWNER: Final = f"{ALL} WHERE m.owner = %s"
"""Every row's context of one owner (``replace_projection``: ``troth rebuild``)."""

REFRESH: Final = f"{ALL} WHERE m.owner = %s AND m.id IN ({NEAR})"
"""Rewrite the context of these memories and of their neighbours (owner, owner, ids)."""

"""Erasing dead text from PostgreSQL's files without holding a table another owner writes.

A redaction leaves the erased text in dead row versions (heap and TOAST) and in the GIN
index's keys. ``VACUUM FULL`` removes them by writing every file anew, but holds an
``ACCESS EXCLUSIVE`` lock on each table while it copies it: 1.45 s of another owner's
write at 20,000 memories, 3.6 s for ``memories`` alone at 100,000 (docs/operations.md).
:func:`scrub` does the same work with locks no write waits for:

1. ``VACUUM (INDEX_CLEANUP ON, TRUNCATE OFF)`` of each erasable table (and its TOAST
   table): prunes every dead version, removes its index entries; pgvector's HNSW vacuum
   zeroes a deleted element's vector. ``SHARE UPDATE EXCLUSIVE``: inserts, updates and
   deletes go on; ``TRUNCATE OFF`` leaves out the end-of-table truncation, the one step
   of VACUUM that takes ``ACCESS EXCLUSIVE``.
2. ``REINDEX INDEX CONCURRENTLY`` of the indexes whose keys are text (the GIN index keeps
   a lexeme in its entry tree after its last row goes): a new file is built beside the old
   one, which is dropped once no transaction can use it.
3. Pruning frees a dead version's space but does not clear it: the page is compacted by
   moving the live versions together, and the bytes no live version moved over stay in
   the page's free space (measured: the last row written to a page keeps its text there
   after VACUUM). So every page's free space is overwritten: junk rows of decreasing size
   (random hex, which does not compress) are inserted, in one transaction that is rolled
   back, until the free-space map has no page left with room for the smallest; the same
   for each TOAST table, with values long enough to be stored out of line. Nobody ever
   sees those rows; a second VACUUM frees their space again.

What can still remain is stated in docs/operations.md ("Erasure on PostgreSQL").
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any, Final

import psycopg
from psycopg import sql as pgsql

from troth.storage.postgres.schema import ERASABLE_TABLES

TEXT_INDEXES: Final = ("memories_body", "memories_session")
"""Indexes whose keys hold erasable text (GIN lexemes; the session a redaction erases,
which the neighbours' index of context expansion keys on); the others key on owner, id,
seq."""

_BLOCK: Final = 8192
_BATCH: Final = 64  # junk rows per statement
# Junk lengths for the heap, largest first: each size fills what the one before left;
# the last adds nothing to a junk row of the table (its smallest row).
_HEAP_SIZES: Final = (1800, 900, 400, 160, 48, 0)
# Values stored out of line in chunks of 1996 bytes (TOAST_MAX_CHUNK_SIZE); the last
# chunk of a 2-chunk-plus-r value is r bytes, so these fill a TOAST page's gaps in turn.
_TOAST_SIZES: Final = tuple(2 * 1996 + r for r in (1996, 1000, 500, 200, 64, 1))
_PLACED: Final = " RETURNING (ctid::text::point)[0]::bigint"  # the page each row went to
# A junk row of each table: its key columns from the batch's own random prefix (so two
# scrubs never wait on each other's keys), its junk in the widest text column.
_JUNK: Final = {
    "ledger": (
        "INSERT INTO ledger (owner, seq, ts, content, source, tags, prev_hash, hash)"
        " SELECT '', -(g + %(base)s), '', substr(%(pad)s, 1, %(size)s), '', '[]', '', ''"
        " FROM generate_series(1, %(n)s) AS g" + _PLACED
    ),
    "memories": (
        "INSERT INTO memories (owner, id, status, retrievable, kind, scope, partition,"
        " sensitivity, tags, seq, updated_at, digest, doc, recall, body)"
        " SELECT '', %(prefix)s || g, '', false, '', '', '', '', '{}', 0, '', '',"
        " substr(%(pad)s, 1, %(size)s), '[]', ''::tsvector FROM generate_series(1, %(n)s) AS g"
        + _PLACED
    ),
    "checkpoint_replies": (
        "INSERT INTO checkpoint_replies (owner, message_id, request_checksum, response)"
        " SELECT '', %(prefix)s || g, '', convert_to(substr(%(pad)s, 1, %(size)s), 'UTF8')"
        " FROM generate_series(1, %(n)s) AS g" + _PLACED
    ),
}


def scrub(db: psycopg.Connection[Any], tables: Sequence[str] = ERASABLE_TABLES) -> None:
    """Remove erased text from every file of ``tables`` (see the module's docstring).

    ``db`` is in autocommit mode; the caller has made sure no session holds a snapshot
    older than the erasures (a VACUUM keeps every version such a snapshot can see).
    """
    vacuum(db, tables)
    for index in TEXT_INDEXES:
        reindex(db, index)
    overwrite_free_space(db, tables)
    vacuum(db, tables)  # frees the junk's space (and its index entries) again


def vacuum(db: psycopg.Connection[Any], tables: Sequence[str]) -> None:
    """Prune dead versions and their index entries, without the truncation's lock."""
    for table in tables:
        db.execute(
            pgsql.SQL("VACUUM (INDEX_CLEANUP ON, TRUNCATE OFF) {}").format(pgsql.Identifier(table))
        )


def reindex(db: psycopg.Connection[Any], index: str) -> None:
    """Rebuild ``index`` into a new file beside the old one, which is then dropped.

    A REINDEX CONCURRENTLY that stopped half way (cancelled, a lock timeout) leaves an
    invalid copy named ``<index>_ccnew`` or ``_ccold``; those are dropped first.
    """
    left = db.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE NOT i.indisvalid AND c.relname LIKE %s",
        (index.replace("_", "\\_") + "\\_cc%",),
    ).fetchall()
    for (name,) in left:
        db.execute(pgsql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(pgsql.Identifier(name)))
    db.execute(pgsql.SQL("REINDEX INDEX CONCURRENTLY {}").format(pgsql.Identifier(index)))


def overwrite_free_space(db: psycopg.Connection[Any], tables: Sequence[str]) -> int:
    """Fill every page's free space (heap and TOAST) of ``tables`` with junk rows in a
    transaction that is rolled back; returns how many junk rows were written."""
    written = 0
    with db.transaction(force_rollback=True):
        for table in tables:
            heap, toast = _relations(db, table)
            for size in _HEAP_SIZES:
                written += _fill(db, table, heap, size, heap=True)
            if toast is not None:
                for size in _TOAST_SIZES:
                    written += _fill(db, table, toast, size, heap=False)
    return written


def _relations(db: psycopg.Connection[Any], table: str) -> tuple[int, int | None]:
    row = db.execute(
        "SELECT oid::bigint, nullif(reltoastrelid, 0)::bigint FROM pg_class"
        " WHERE oid = to_regclass(%s)",
        (table,),
    ).fetchone()
    assert row is not None, table
    return int(row[0]), (int(row[1]) if row[1] is not None else None)


def _blocks(db: psycopg.Connection[Any], relation: int) -> int:
    row = db.execute("SELECT pg_relation_size(%s::oid)", (relation,)).fetchone()
    return int(row[0]) // _BLOCK if row else 0


def _fill(db: psycopg.Connection[Any], table: str, relation: int, size: int, *, heap: bool) -> int:
    """Insert junk rows of one size until two of them have gone to pages past the ones
    ``relation`` had (the free-space map had no page left with room for them), read from
    the rows' own ``ctid`` for the heap and from the relation's growth for TOAST. A cap of
    twice the relation's size (and 1 MB) bounds a run that keeps racing other writers for
    new pages. An empty relation has no free space to fill."""
    start = _blocks(db, relation)
    if start == 0:
        return 0
    cap = 2 * start * _BLOCK + (1 << 20)
    pad = secrets.token_hex(max(size, 1))  # hex of random bytes: pglz finds nothing to save
    written = 0
    past: set[int] = set()
    while len(past) < 2 and written * max(size, 64) < cap:
        stamp = secrets.randbelow(1 << 40)
        placed = db.execute(
            _JUNK[table],
            {
                "base": stamp << 16,
                "prefix": f"~scrub-{stamp:x}-",  # "~" is in no memory id (ID_PATTERN)
                "pad": pad,
                "size": size,
                "n": _BATCH,
            },
        ).fetchall()
        written += _BATCH
        if heap:
            past.update(int(row[0]) for row in placed if int(row[0]) >= start)
        else:
            past.update(range(start, _blocks(db, relation)))
    return written

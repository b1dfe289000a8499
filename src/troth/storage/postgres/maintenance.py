"""Finishing erasures on PostgreSQL, and the full rewrite: what ``PostgresStore`` runs on
one of its connections once an erasure has committed (``storage.erasure`` decides when).

:func:`finish` is one try of the scrub (``postgres.scrub``), given up at once while another
session holds a snapshot older than a pending erasure; :func:`compact` is the operator's
``VACUUM FULL``, which first waits (holding nothing) for such readers. Both run with
autocommit: VACUUM runs in no transaction.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import psycopg
from psycopg import sql as pgsql

from troth.core.errors import StorageError
from troth.storage.erasure import wait_until
from troth.storage.postgres import schema, scrub

__all__ = ["checkpoint", "compact", "finish", "relation_files"]

# Whether another session of this database holds a snapshot taken before the erasures up to
# the given id committed: its xmin is at or before their transaction ids (compared by age,
# as xids wrap). Where the role may not see other sessions' xmin, the lock taken without
# waiting is what holds the compaction back (docs/operations.md).
_OLDER_SNAPSHOT = (
    "SELECT EXISTS (SELECT 1 FROM pg_stat_activity a JOIN pending_erasures p ON p.id <= %s"
    " WHERE a.pid <> pg_backend_pid() AND a.datname = current_database()"
    " AND a.backend_xmin IS NOT NULL"
    " AND age(a.backend_xmin) >= age((p.xid::text::numeric %% 4294967296)::text::xid))"
)


def relation_files(db: psycopg.Connection[Any]) -> dict[str, str]:
    """Each erasable table's relations (heap, TOAST, indexes) → file path in the data dir."""
    rows = db.execute(
        "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c"
        " WHERE c.oid IN ("
        "  SELECT t.oid FROM pg_class t WHERE t.relname = ANY(%(t)s)"
        "  UNION SELECT t.reltoastrelid FROM pg_class t WHERE t.relname = ANY(%(t)s)"
        "  UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
        "   WHERE t.relname = ANY(%(t)s)"
        "  UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.reltoastrelid ="
        "   i.indrelid WHERE t.relname = ANY(%(t)s))"
        " AND pg_relation_filepath(c.oid) IS NOT NULL",
        {"t": list(schema.ERASABLE_TABLES)},
    )
    return {str(r[0]): str(r[1]) for r in rows}


def compact(db: psycopg.Connection[Any], wait: float) -> bool:
    """``VACUUM FULL`` of every erasable table, finishing the erasures pending when it
    starts once no session with an older snapshot is left (waited for up to ``wait``
    seconds, holding nothing): True when none is pending after it."""
    last = _last_erasure(db)
    finished = last is None or wait_until(lambda: not _older_snapshot(db, last), wait)
    try:
        for table in schema.ERASABLE_TABLES:
            db.execute(pgsql.SQL("VACUUM (FULL) {}").format(pgsql.Identifier(table)))
    except psycopg.Error as exc:
        raise StorageError(f"the erasure maintenance could not run: {exc}") from exc
    if last is not None and finished:
        db.execute("DELETE FROM pending_erasures WHERE id <= %s", (last,))
    checkpoint(db)
    return finished


def finish(db: psycopg.Connection[Any]) -> bool:
    """One try at finishing the pending erasures by a scrub: True once none is pending,
    False while an older snapshot (or a lock the scrub would wait for) holds it back."""
    last = _last_erasure(db)
    if last is None:
        return True
    if _older_snapshot(db, last):
        return False
    try:
        # No lock the scrub takes conflicts with a write's, so waiting for one queues no
        # writer; the timeout bounds a try (an autovacuum holding the table is cancelled
        # after deadlock_timeout, 1 s; a REINDEX waits for transactions under way).
        db.execute("SET lock_timeout = '5s'")
        scrub.scrub(db)
    except psycopg.errors.LockNotAvailable:
        return False
    finally:
        with suppress(psycopg.Error):
            db.execute("RESET lock_timeout")
    db.execute("DELETE FROM pending_erasures WHERE id <= %s", (last,))
    checkpoint(db)
    return True


def checkpoint(db: psycopg.Connection[Any]) -> None:
    """Ask for a checkpoint when the role may (superuser or pg_checkpoint): the old files
    are truncated at commit and unlinked at the next checkpoint; else the server's own
    comes."""
    with suppress(psycopg.errors.InsufficientPrivilege):
        db.execute("CHECKPOINT")


def _last_erasure(db: psycopg.Connection[Any]) -> int | None:
    row = db.execute("SELECT max(id) FROM pending_erasures").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _older_snapshot(db: psycopg.Connection[Any], last: int) -> bool:
    """Whether a session holds a snapshot older than an erasure up to ``last``: it may
    still read the erased row versions, and VACUUM (FULL or not) keeps every version
    such a snapshot can see."""
    older = db.execute(_OLDER_SNAPSHOT, (last,)).fetchone()
    return bool(older and older[0])

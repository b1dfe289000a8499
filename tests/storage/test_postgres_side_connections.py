"""PostgreSQL's side connections (``postgres.nearest.RecallSearches``) number the recalls
under way, not the threads that ever recalled.

A server's worker threads (40 under uvicorn) each recall now and then, while the recall
gate lets ``max_concurrent_recalls`` (default 1) run at once: a side connection kept per
thread would hold up to 40 more backends open for good, against PostgreSQL's default of
100 connections. A side connection is lent for one recall and given back idle, so
recalls one after the other on many threads share one.
"""

from __future__ import annotations

from typing import Any

import psycopg

from tests.conftest import vector_facade
from tests.pg import green_tea_candidates
from tests.processes import in_another_thread
from troth.service.recall import Query
from troth.storage.base import Candidates
from troth.storage.postgres import PostgresStore
from troth.storage.postgres.nearest import RecallSearches

_TEXTS = ["green tea in the morning", "the train to Lisbon", "piano lessons on Sundays"]


def test_recalls_in_turn_on_many_threads_share_one_side_connection(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    memory = vector_facade(store)
    opened: list[psycopg.Connection[Any]] = []

    def connect() -> psycopg.Connection[Any]:
        db = psycopg.connect(pg_url, autocommit=True)
        opened.append(db)
        return db

    searches = RecallSearches(connect)
    searches.iterative_scan = True  # as a first recall learns (the test's server takes it)
    found: list[Candidates] = []
    try:
        memory.remember_many(_TEXTS)
        memory.recall(Query(text="tea", min_relevance=None))
        assert memory.embedder is not None
        embedding = memory.embedder.embed(["green tea"])[0]

        def recall() -> None:
            with psycopg.connect(pg_url, autocommit=True) as db:
                found.append(green_tea_candidates(searches, db, memory.principal, embedding))

        for _ in range(4):
            in_another_thread(recall)
        assert len(found) == 4
        assert all(f == found[0] for f in found)
        assert found[0].vector
        assert len(opened) == 1
        assert not opened[0].closed
        searches.close()
        assert opened[0].closed
    finally:
        searches.close()
        memory.close()

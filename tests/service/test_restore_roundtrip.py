"""Restore is exact and idempotent: random ledgers exported in every format come back whole.

For any sequence of operations (the generator of ``test_properties``), each export — a PCP
archive as tar and as zip, a personaxis log, HUX as a JSON array and as JSON Lines — restored
into an empty ledger gives the same rows (entries, metadata, erasable texts) and so the same
projection: ids, times, statuses, provenance and audit; restored again into that ledger, or
into the one it came from, it changes nothing. SQLite runs the property; PostgreSQL runs it
with fewer examples (each example clones a database per format).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.backends import fresh_store
from tests.conftest import StepClock
from tests.pg import TestServer
from tests.service.test_properties import ALICE, operations, run
from troth.config import load_policy
from troth.core.errors import ConflictError
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.sealing import Sealer
from troth.storage.base import Store

FORMATS = [
    ("pcp", "a.tar"),
    ("pcp", "a.zip"),
    ("personaxis", "episodic.jsonl"),
    ("hux", "memories.json"),
    ("hux", "memories.jsonl"),
]
Rows = list[tuple[str, str | None, dict[str, str]]]


def sealed(store: Store, key: Path, clock: StepClock | None = None) -> Memory:
    """A facade that signs its exports with ``key`` (one key: each trusts the others')."""
    memory = Memory(store, policy=load_policy(None), principal=ALICE, clock=clock or StepClock())
    memory.seal_exports_with(Sealer(store, KeyStore(key), "test.ledger"))
    return memory


def rows(memory: Memory, owner: str = ALICE) -> Rows:
    """Every row of an owner's chain as it is stored."""
    return [(r.entry.to_line(), r.meta, dict(r.texts)) for r in memory.store.records(owner)]


def check_round_trips(source: Memory, backend: str, pg_server: TestServer, work: Path) -> None:
    """Each format, exported from ``source``, restores exactly and idempotently."""
    key = work / "signing.key"
    for fmt, name in FORMATS:
        before, projection = rows(source), source.store.projection(ALICE)
        path = work / name
        source.export_to(fmt, path)
        with fresh_store(backend, pg_server) as store, sealed(store, key) as target:
            report = target.import_path(path, mode="restore")
            assert (report.mode, report.as_import, report.refused) == ("restore", None, [])
            assert rows(target) == before, fmt
            assert target.store.projection(ALICE) == projection, fmt
            assert sorted(report.created) == sorted(projection)
            head = target.store.tip(ALICE)
            again = target.import_path(path, mode="restore")
            assert (again.created, again.unchanged) == ([], len(projection))
            assert target.store.tip(ALICE) == head
            assert all(r.ok for r in target.verify())
        head = source.store.tip(ALICE)
        home = source.import_path(path, mode="restore")  # the ledger it came from
        assert (home.mode, home.created) == ("restore", [])
        assert source.store.tip(ALICE) == head


@contextmanager
def source_ledger(
    backend: str, pg_server: TestServer, ops: list[tuple[Any, ...]], work: Path
) -> Iterator[Memory]:
    clock = StepClock()
    with fresh_store(backend, pg_server) as store, sealed(store, work / "signing.key", clock) as m:
        run(m, clock, ops)
        yield m


PROPERTY = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PG_PROPERTY = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(ops=operations)
def test_every_format_restores_an_identical_ledger_sqlite(
    pg_server: TestServer, ops: list[tuple[Any, ...]]
) -> None:
    with (
        tempfile.TemporaryDirectory() as work,
        source_ledger("sqlite", pg_server, ops, Path(work)) as m,
    ):
        check_round_trips(m, "sqlite", pg_server, Path(work))


@PG_PROPERTY
@given(ops=operations)
def test_every_format_restores_an_identical_ledger_postgres(
    pg_server: TestServer, ops: list[tuple[Any, ...]]
) -> None:
    with (
        tempfile.TemporaryDirectory() as work,
        source_ledger("postgres", pg_server, ops, Path(work)) as m,
    ):
        check_round_trips(m, "postgres", pg_server, Path(work))


# -- a ledger that holds part of it -----------------------------------------------------


def every_kind(memory: Memory) -> None:
    kept = memory.remember("I prefer green tea", kind="preference", title="Tea")
    proposed = memory.remember("Alice runs", actor="agent:bot", owner=ALICE, channel="synthesis")
    memory.approve(proposed.id, note="yes")
    memory.hide(kept.id)
    memory.forget(memory.remember("I owe Bob 10 euros").id, reason="paid")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_ledger_holding_part_of_an_export_gets_the_rest(
    backend: str, pg_server: TestServer, tmp_path: Path
) -> None:
    key = tmp_path / "signing.key"
    with fresh_store(backend, pg_server) as store, sealed(store, key) as source:
        every_kind(source)
        source.export_to("pcp", tmp_path / "early.zip")
        later = source.remember("I moved to Lyon")
        source.redact(source.remember("a secret to erase").id, reason="erasure request")
        source.edit(later.id, "I moved to Paris")
        before, projection = rows(source), source.store.projection(ALICE)
        source.export_to("personaxis", tmp_path / "late.jsonl")
        with fresh_store(backend, pg_server) as other, sealed(other, key) as target:
            first = target.import_path(tmp_path / "early.zip", mode="restore")
            assert first.mode == "restore"
            assert first.created
            rest = target.import_path(tmp_path / "late.jsonl", mode="restore")
            assert rest.mode == "restore"
            assert sorted(rest.created) == sorted(set(projection) - set(first.created))
            assert rows(target) == before
            assert target.store.projection(ALICE) == projection
            # The earlier export is a prefix of what the ledger now holds: nothing changes.
            head = target.store.tip(ALICE)
            assert target.import_path(tmp_path / "early.zip", mode="restore").created == []
            assert target.store.tip(ALICE) == head


def test_a_redaction_the_export_records_is_carried_out(tmp_path: Path) -> None:
    """A ledger restored from an older export still holds a text the newer one erased."""
    key = tmp_path / "signing.key"
    with fresh_store("sqlite", None) as store, sealed(store, key) as source:  # type: ignore[arg-type]
        secret = source.remember("the canary text")
        source.export_to("hux", tmp_path / "old.json")
        source.redact(secret.id, reason="erasure request")
        source.export_to("hux", tmp_path / "new.json")
        with fresh_store("sqlite", None) as other, sealed(other, key) as target:  # type: ignore[arg-type]
            target.import_path(tmp_path / "old.json", mode="restore")
            assert "the canary text" in str(rows(target))
            target.import_path(tmp_path / "new.json", mode="restore")
            assert "the canary text" not in str(rows(target))
            assert target.get(secret.id).redacted
            assert all(r.ok for r in target.verify())


def test_a_ledger_that_parts_from_the_export_is_refused_unchanged(tmp_path: Path) -> None:
    key = tmp_path / "signing.key"
    with fresh_store("sqlite", None) as store, sealed(store, key) as source:  # type: ignore[arg-type]
        source.remember("I prefer green tea")
        source.export_to("pcp", tmp_path / "a.tar")
        with fresh_store("sqlite", None) as other, sealed(other, key) as target:  # type: ignore[arg-type]
            target.remember("I prefer coffee")
            head = target.store.tip(ALICE)
            with pytest.raises(ConflictError, match=r"part at entry #0.*nothing was restored"):
                target.import_path(tmp_path / "a.tar", mode="restore")
            assert target.store.tip(ALICE) == head

"""One rule says which memories lend their words to their neighbours, and who wrote a text.

``storage.rows.LENDING`` is the rule; ``rows.lends_context`` reads it of a memory and
``storage.sql.lends_context_sql`` writes it as each store's SQL (both stores' context
statements are built from it). Here the Python predicate and each store's SQL, run on its
own rows, agree for every combination of the fields the rule reads; and the ``recall``
column's writer is ``MemoryRecord.writer``.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

from tests.backends import execute, is_postgres
from tests.conftest import StepClock, facade
from troth.core.records import MemoryRecord
from troth.storage.base import Store
from troth.storage.rows import LENDING, lends_context, memory_docs, recall_fields
from troth.storage.sql import lends_context_sql
from troth.storage.sqlite import SQLiteStore

STATUSES = ("active", "proposed", "hidden", "forgotten", "archived", "rejected")


def test_each_store_sql_and_the_python_predicate_agree(any_store: Store) -> None:
    with facade(any_store, clock=StepClock()) as mind:
        base = mind.remember("the violin lives in the attic", session="s1").memory
    variants: dict[str, MemoryRecord] = {}
    combos = itertools.product(STATUSES, (True, False), ("normal", "sensitive"))
    with any_store.write(base.owner) as tx:
        for n, (status, retrievable, sensitivity) in enumerate(combos):
            memory = replace(
                base,
                id=f"{base.id}-v{n}",
                seq=base.seq + 1 + n,
                status=status,
                retrievable=retrievable,
                sensitivity=sensitivity,
            )
            tx.put(memory, new=True)
            variants[memory.id] = memory
    true = "" if is_postgres(any_store) else " = 1"
    for prefix, unindexed in (("", ()), ("m.", ()), ("m.", ("status",))):
        where = lends_context_sql(prefix, true, unindexed=unindexed)
        found = {
            str(row[0])
            for row in execute(
                any_store,
                f"SELECT m.id FROM memories m WHERE m.owner = ? AND {where}",
                (base.owner,),
            )
        }
        expected = {i for i, m in variants.items() if lends_context(m)} | {base.id}
        assert found == expected, (prefix, unindexed)
    # The rule reads exactly these fields, and each is a field of the memory.
    assert {name for name, _ in LENDING} == {"status", "retrievable", "sensitivity"}
    assert sum(lends_context(m) for m in variants.values()) == 1


def test_the_recall_columns_writer_is_the_records_writer(tmp_path: Path) -> None:
    with facade(SQLiteStore(tmp_path / "t.db"), clock=StepClock()) as mind:
        own = mind.remember("the owner's own words").memory
    quoted = replace(own, origin="agent:scribe")
    blank = replace(own, origin="")  # an empty origin names none: the actor wrote it
    for memory in (own, quoted, blank):
        doc, column = memory_docs(memory)
        assert recall_fields(json.loads(doc))[-1] == memory.writer
        assert json.loads(column)[-1] == memory.writer
    assert quoted.writer == "agent:scribe"
    assert blank.writer == own.actor

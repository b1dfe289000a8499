"""The read path fails closed: the nine at-rest edits of the agent-memory-integrity method,
made to the raw store behind troth's back on SQLite and PostgreSQL, are each refused on
the next open by recall, get, list, brief and export, with a sentence naming what was found.
So are an owner swap, a silent redaction, and a rebuild after a rewrite; the untouched
store serves every read.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.backends import execute
from tests.conftest import StepClock, facade, open_backend
from troth.core.access import EXPORT, READ, SENSITIVE_READ, Grant
from troth.core.chain import TARGET_PREFIX, sha256_hex, v1_hash
from troth.core.errors import IntegrityError
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.scoped import ScopedMemory
from troth.service.sealing import Sealer
from troth.service.witness import DirectoryWitness
from troth.storage.base import Store

ALICE = "human:alice"
BOB = "human:bob"
TABLES = ("ledger", "heads", "memories")


@dataclass
class World:
    """A store with two owners' ledgers, sealed and witnessed; ``open`` is the next open."""

    backend: str
    home: Path
    url: str | None
    config: Path
    clock: StepClock
    ids: dict[str, str]
    opened: list[Memory]

    def store(self) -> Store:
        return open_backend(self.backend, self.home, self.url)

    def sealer(self, store: Store) -> Sealer:
        keys = KeyStore(self.config / "signing.key")
        return Sealer(store, keys, "ledger.test/fail-closed", [DirectoryWitness(self.config / "w")])

    def open(self) -> Memory:
        """A new facade on the store, held against the witness, as a new process opens it."""
        store = self.store()
        memory = facade(store, clock=self.clock)
        memory.anchor(self.sealer(store).witnessed)
        self.opened.append(memory)
        return memory

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """One raw statement on its own connection, committed (behind troth's back)."""
        store = self.store()
        try:
            cursor = execute(store, statement, params)
            rows = list(cursor.fetchall()) if cursor.description else []
            _commit(store)
            return rows
        finally:
            store.close()


def _commit(store: Store) -> None:
    from tests.backends import connection

    connection(store).commit()


@pytest.fixture
def world(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[World]:
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    w = World(backend, tmp_path / "home", url, tmp_path / "cfg", StepClock(), {}, [])
    memory = w.open()
    w.ids["tea"] = memory.remember("alice likes green tea in the morning", kind="preference").id
    w.ids["walk"] = memory.remember("alice walks by the river at noon").id
    w.ids["gone"] = memory.remember("alice's old phone number is 555 0100").id
    memory.redact(w.ids["gone"], reason="wrong number")
    w.ids["dentist"] = memory.remember("alice sees the dentist on fridays").id
    bob = facade(memory.store, principal=BOB, clock=w.clock)
    w.ids["bob"] = bob.remember("bob plays the cello on sundays").id
    bob.remember("bob is allergic to peanuts")
    w.sealer(memory.store).seal()
    try:
        yield w
    finally:
        for opened in w.opened:
            opened.close()


# -- the reads ------------------------------------------------------------------------------


def _scoped(memory: Memory) -> ScopedMemory:
    return ScopedMemory(memory, Grant(ALICE, frozenset({READ, SENSITIVE_READ, EXPORT})))


READS: dict[str, Callable[[Memory, World], object]] = {
    "recall": lambda m, w: m.recall("green tea morning river noon dentist phone", owner=ALICE),
    "get": lambda m, w: m.get(w.ids.get("target", w.ids["tea"]), owner=ALICE),
    "list": lambda m, w: m.memories(ALICE),
    "brief": lambda m, w: _scoped(m).brief("what does alice drink in the morning"),
    "export": lambda m, w: m.export("hux", owner=ALICE),
    "export personaxis": lambda m, w: m.export("personaxis", owner=ALICE),
}


def refused_everywhere(world: World, pattern: str, *, bob_too: bool = False) -> None:
    """Each read, on a fresh open, is refused with a sentence matching ``pattern``; a write
    to the owner is refused after it, and another owner (unless ``bob_too``) still reads."""
    for name, read in READS.items():
        memory = world.open()
        with pytest.raises(IntegrityError, match=pattern) as caught:
            served(read, memory, world, name)
        assert caught.value.details.get("owner") == ALICE, name
        assert "refused" in caught.value.message, name
        assert "troth" in caught.value.message, name
        with pytest.raises(IntegrityError):
            memory.remember("alice writes on", owner=ALICE)
        if not bob_too:  # bob's ledger is untouched: bob still reads it
            assert facade(memory.store, principal=BOB, clock=world.clock).memories(BOB), name


def served(
    read: Callable[[Memory, World], object], memory: Memory, world: World, name: str
) -> None:
    read(memory, world)
    pytest.fail(f"{name} was served")


def row(world: World, owner: str, seq: int) -> dict[str, Any]:
    columns = "seq, ts, content, source, tags, content_hash, prev_hash, hash, redacted, meta, texts"
    [values] = world.sql(f"SELECT {columns} FROM ledger WHERE owner = ? AND seq = ?", (owner, seq))
    return dict(zip([c.strip() for c in columns.split(",")], values, strict=True))


def seq_of(world: World, memory_id: str) -> int:
    [(seq,)] = world.sql(
        "SELECT seq FROM ledger WHERE owner = ? AND CAST(tags AS text) LIKE ? ORDER BY seq",
        (ALICE, f"%lm:memory:{memory_id}%"),
    )[:1]
    return int(seq)


def doc_of(world: World, memory_id: str) -> dict[str, Any]:
    [(doc,)] = world.sql("SELECT doc FROM memories WHERE id = ?", (memory_id,))
    return dict(json.loads(doc))


def set_doc(world: World, memory_id: str, doc: dict[str, Any], **columns: Any) -> None:
    sets = ", ".join(["doc = ?", *(f"{k} = ?" for k in columns)])
    world.sql(
        f"UPDATE memories SET {sets} WHERE id = ?",
        (json.dumps(doc), *columns.values(), memory_id),
    )


def _tags(value: Any) -> list[str]:
    return list(value) if isinstance(value, list) else list(json.loads(value))


def _tags_param(world: World, tags: list[str]) -> Any:
    return json.dumps(tags)


# -- the untouched store --------------------------------------------------------------------


def test_the_untouched_store_serves_every_read_and_takes_writes(world: World) -> None:
    for name, read in READS.items():
        memory = world.open()
        assert read(memory, world), name
    memory = world.open()
    assert memory.remember("alice writes on").status == "active"
    assert all(r.ok for r in memory.verify())


# -- the nine at-rest edits ------------------------------------------------------------------


def test_content_tamper_in_the_chain(world: World) -> None:
    seq = seq_of(world, world.ids["tea"])
    world.sql(
        "UPDATE ledger SET content = ? WHERE owner = ? AND seq = ?",
        ("alice likes black coffee in the morning", ALICE, seq),
    )
    refused_everywhere(world, rf"broken at entry #{seq} \(memory {world.ids['tea']}\).*content")


def test_content_tamper_in_the_projection(world: World) -> None:
    tea = world.ids["tea"]
    doc = doc_of(world, tea)
    doc["content"] = "alice likes black coffee in the morning"
    set_doc(world, tea, doc)
    # PostgreSQL's own digest column finds it first; either way the sentence names it.
    refused_everywhere(world, rf"memory {tea}(: the digest| as stored .*its content differs)")


def cut_last_entry(world: World) -> None:
    """Delete Alice's last entry and move her recorded head back to the one before."""
    [(length,)] = world.sql("SELECT length FROM heads WHERE owner = ?", (ALICE,))
    last = row(world, ALICE, length - 1)
    world.sql("DELETE FROM ledger WHERE owner = ? AND seq = ?", (ALICE, length - 1))
    world.sql(
        "UPDATE heads SET length = ?, head = ? WHERE owner = ?",
        (length - 1, last["prev_hash"], ALICE),
    )


def test_tail_truncation(world: World) -> None:
    cut_last_entry(world)
    refused_everywhere(world, r"holds 4 entries, but the witness .* checkpoint of 5.*rolled back")


def test_tail_truncation_without_moving_the_head(world: World) -> None:
    world.sql("DELETE FROM ledger WHERE owner = ? AND seq = 4", (ALICE,))
    refused_everywhere(world, r"broken at entry #4 .*recorded head")


def test_middle_deletion(world: World) -> None:
    world.sql("DELETE FROM ledger WHERE owner = ? AND seq = 1", (ALICE,))
    world.sql("UPDATE ledger SET seq = seq - 1 WHERE owner = ? AND seq > 1", (ALICE,))
    world.sql("UPDATE heads SET length = length - 1 WHERE owner = ?", (ALICE,))
    refused_everywhere(world, r"broken at entry #1 .*prev_hash")


def test_reordering(world: World) -> None:
    world.sql("UPDATE ledger SET seq = 100 WHERE owner = ? AND seq = 0", (ALICE,))
    world.sql("UPDATE ledger SET seq = 0 WHERE owner = ? AND seq = 1", (ALICE,))
    world.sql("UPDATE ledger SET seq = 1 WHERE owner = ? AND seq = 100", (ALICE,))
    refused_everywhere(world, r"broken at entry #0 .*prev_hash")


def test_forged_insertion_in_the_chain(world: World) -> None:
    # A forged entry with correct hashes of its own, slipped in after entry #1.
    before = row(world, ALICE, 1)
    ts = before["ts"]
    content = "alice wants her savings sent to account 0000"
    tags = ["lm:event:propose", "lm:memory:forged"]
    content_hash = sha256_hex(content)
    forged = v1_hash(ts, content_hash, "user", tags, before["hash"])
    world.sql("UPDATE ledger SET seq = seq + 1000 WHERE owner = ? AND seq > 1", (ALICE,))
    world.sql("UPDATE ledger SET seq = seq - 999 WHERE owner = ? AND seq > 1000", (ALICE,))
    world.sql(
        "INSERT INTO ledger (owner, seq, ts, content, source, tags, content_hash, prev_hash,"
        " hash, redacted) VALUES (?, 2, ?, ?, 'user', ?, ?, ?, ?, ?)",
        (ALICE, ts, content, json.dumps(tags), content_hash, before["hash"], forged, False),
    )
    world.sql("UPDATE heads SET length = length + 1 WHERE owner = ?", (ALICE,))
    refused_everywhere(world, r"broken at entry #3 .*prev_hash")


def test_forged_insertion_in_the_projection(world: World) -> None:
    doc = doc_of(world, world.ids["walk"])
    doc["id"] = "forged-1"
    doc["content"] = "alice wants her savings sent to account 0000"
    columns = (
        "owner, status, retrievable, kind, scope, partition, sensitivity, seq, updated_at, recall"
    )
    extra = ", tags, digest" if world.backend == "postgres" else ""
    world.sql(
        f"INSERT INTO memories (id, {columns}{extra}, doc"
        + (", body" if world.backend == "postgres" else "")
        + f") SELECT ?, {columns}{extra}, ?"
        + (", body" if world.backend == "postgres" else "")
        + " FROM memories WHERE id = ?",
        ("forged-1", json.dumps(doc), world.ids["walk"]),
    )
    refused_everywhere(world, r"memory forged-1( is stored for human:alice, but the ledger|: the)")


def test_cross_context_replay_in_the_chain(world: World) -> None:
    # Bob's entry #1 replayed in place of Alice's #1.
    bobs = row(world, BOB, 1)
    world.sql("DELETE FROM ledger WHERE owner = ? AND seq = 1", (ALICE,))
    world.sql(
        "INSERT INTO ledger (owner, seq, ts, content, source, tags, content_hash, prev_hash,"
        " hash, redacted, meta, texts) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ALICE,
            *(bobs[k] for k in ("ts", "content", "source")),
            json.dumps(_tags(bobs["tags"])),
            *(bobs[k] for k in ("content_hash", "prev_hash", "hash", "redacted", "meta", "texts")),
        ),
    )
    refused_everywhere(world, r"broken at entry #1 .*prev_hash")


def test_cross_context_replay_in_the_projection(world: World) -> None:
    cello = world.ids["bob"]
    doc = doc_of(world, cello)
    doc["owner"] = ALICE
    set_doc(world, cello, doc, owner=ALICE)
    world.ids["target"] = cello
    refused_everywhere(
        world, rf"memory {cello} is stored for human:alice, but the ledger never", bob_too=True
    )


def test_rollback_replay_of_an_erased_row(world: World) -> None:
    # The redacted entry put back as it was before the redaction (from an older copy).
    memory = world.open()
    pin = memory.remember("alice's bank pin is 1234").id
    seq = seq_of(world, pin)
    before = row(world, ALICE, seq)
    memory.redact(pin, reason="a secret")
    world.sealer(memory.store).seal()
    assert row(world, ALICE, seq)["content"] == "[redacted]"
    world.sql(
        "UPDATE ledger SET content = ?, redacted = ?, texts = ? WHERE owner = ? AND seq = ?",
        (before["content"], before["redacted"], before["texts"], ALICE, seq),
    )
    refused_everywhere(world, r"an erased row was put back")


def test_rollback_replay_of_a_projection_row(world: World) -> None:
    gone = world.ids["gone"]
    doc = doc_of(world, gone)
    doc.update(status="active", retrievable=True, redacted=False, content="555 0100")
    set_doc(world, gone, doc, status="active", retrievable=True)
    world.ids["target"] = gone
    # PostgreSQL's digest column finds the changed document as the census names the row.
    refused_everywhere(world, rf"memory {gone}(: the digest| as stored .*its status differs)")


def test_metadata_tamper_in_the_chain(world: World) -> None:
    seq = seq_of(world, world.ids["tea"])
    meta = row(world, ALICE, seq)["meta"]
    world.sql(
        "UPDATE ledger SET meta = ? WHERE owner = ? AND seq = ?",
        (meta.replace('"preference"', '"instruction"'), ALICE, seq),
    )
    refused_everywhere(world, rf"broken at entry #{seq} .*metadata does not match")


def test_metadata_tamper_in_the_projection(world: World) -> None:
    tea = world.ids["tea"]
    doc = doc_of(world, tea)
    doc["kind"] = "instruction"
    doc["sensitivity"] = "sensitive"
    set_doc(world, tea, doc, kind="instruction", sensitivity="sensitive")
    refused_everywhere(world, rf"memory {tea} as stored .*its sensitivity differs")


def test_a_doc_only_tamper_is_refused_when_served(world: World) -> None:
    # Only the document, not the columns the reads filter on: found as the memory is served.
    tea = world.ids["tea"]
    doc = doc_of(world, tea)
    doc["importance"] = 1.0
    set_doc(world, tea, doc)
    refused_everywhere(world, rf"memory {tea}(: the digest| as stored .*its importance differs)")


def test_whole_store_snapshot_rollback(world: World, tmp_path: Path) -> None:
    copy = tmp_path / "older"
    if world.backend == "postgres":
        for table in TABLES:
            world.sql(f"CREATE TABLE older_{table} AS SELECT * FROM {table}")
    else:
        shutil.copytree(world.home, copy)
    memory = world.open()
    memory.remember("alice moved to a new flat")
    world.sealer(memory.store).seal()
    memory.close()
    world.opened.remove(memory)
    if world.backend == "postgres":
        for table in TABLES:  # the whole database as the older copy had it
            world.sql(f"DELETE FROM {table}")
            world.sql(f"INSERT INTO {table} SELECT * FROM older_{table}")
    else:
        shutil.rmtree(world.home)
        shutil.copytree(copy, world.home)
    refused_everywhere(world, r"holds 5 entries, but the witness .* of 6: this store was rolled")


# -- the owner swap, the silent redaction, the rebuild after a rewrite -----------------------


def test_swapping_two_owners_chains_everywhere_is_refused(world: World) -> None:
    for table in TABLES:
        world.sql(f"UPDATE {table} SET owner = 'human:swap' WHERE owner = ?", (ALICE,))
        world.sql(f"UPDATE {table} SET owner = ? WHERE owner = ?", (ALICE, BOB))
        world.sql(f"UPDATE {table} SET owner = ? WHERE owner = 'human:swap'", (BOB,))
    for memory_id, doc in [(i, doc_of(world, i)) for (i,) in world.sql("SELECT id FROM memories")]:
        doc["owner"] = BOB if doc["owner"] == ALICE else ALICE
        set_doc(world, memory_id, doc)
    memory = world.open()
    memory.anchor(None)  # even with no witness: the chain itself names its owner
    [report] = [r for r in memory.verify() if r.owner == ALICE]
    assert not report.ok
    assert report.chain.broken_at == 0
    assert "commits to the owner human:bob, not human:alice" in str(report.chain.reason)
    refused_everywhere(world, r"commits to the owner human:bob, not human:alice", bob_too=True)


def test_a_silent_redaction_is_refused_and_cannot_be_rebuilt(world: World) -> None:
    seq = seq_of(world, world.ids["tea"])
    texts = json.dumps({"reason": "[redacted]"})
    world.sql(
        "UPDATE ledger SET content = '[redacted]', redacted = ?, texts = ? WHERE owner = ?"
        " AND seq = ?",
        (True, texts, ALICE, seq),
    )
    refused_everywhere(world, rf"entry #{seq} .*erased without a recorded redaction")
    with pytest.raises(IntegrityError, match="erased without a recorded redaction"):
        world.open().rebuild(ALICE)


def rewrite_chain(world: World, seq: int, content: str) -> None:
    """Rewrite entry ``seq``'s content and rehash every entry after it, as a forger who
    knows the algorithm would (tombstone targets follow), and move the recorded head."""
    [(length,)] = world.sql("SELECT length FROM heads WHERE owner = ?", (ALICE,))
    remapped: dict[str, str] = {}
    prev = row(world, ALICE, seq - 1)["hash"] if seq else ""
    for index in range(seq, length):
        old = row(world, ALICE, index)
        tags = [
            TARGET_PREFIX + remapped.get(t[len(TARGET_PREFIX) :], t[len(TARGET_PREFIX) :])
            if t.startswith(TARGET_PREFIX)
            else t
            for t in _tags(old["tags"])
        ]
        text = content if index == seq else old["content"]
        content_hash = sha256_hex(text) if index == seq else old["content_hash"]
        new = v1_hash(old["ts"], content_hash, old["source"], tags, prev)
        world.sql(
            "UPDATE ledger SET content = ?, content_hash = ?, tags = ?, prev_hash = ?, hash = ?"
            " WHERE owner = ? AND seq = ?",
            (text, content_hash, json.dumps(tags), prev, new, ALICE, index),
        )
        remapped[old["hash"]] = new
        prev = new
    world.sql("UPDATE heads SET head = ? WHERE owner = ?", (prev, ALICE))


def test_rebuild_refuses_a_rewritten_chain(world: World) -> None:
    seq = seq_of(world, world.ids["walk"])
    rewrite_chain(world, seq, "alice walks by the river at midnight")
    memory = world.open()
    memory.anchor(None)
    assert all(r.chain.ok for r in memory.verify(ALICE))  # it verifies by itself
    refused_everywhere(world, r"no longer hash to the root the witness .* holds: the chain was")
    with pytest.raises(IntegrityError, match=r"rewritten .*nothing was rebuilt"):
        world.open().rebuild(ALICE)
    assert doc_of(world, world.ids["walk"])["content"] == "alice walks by the river at noon"


def test_rebuild_refuses_a_truncated_tail(world: World) -> None:
    cut_last_entry(world)
    with pytest.raises(IntegrityError, match=r"rolled back.*nothing was rebuilt"):
        world.open().rebuild(ALICE)


def test_repair_rebuilds_a_tampered_projection_and_serves_again(world: World) -> None:
    tea = world.ids["tea"]
    doc = doc_of(world, tea)
    doc["content"] = "alice likes black coffee in the morning"
    set_doc(world, tea, doc)
    memory = world.open()
    with pytest.raises(IntegrityError, match=f"memory {tea}"):
        memory.get(tea)
    with pytest.raises(IntegrityError, match="refused"):
        memory.approve(tea)
    [result] = memory.rebuild(ALICE)
    assert not result["equal"]
    assert result["mismatch"]["memory"] == tea
    assert memory.get(tea).content == "alice likes green tea in the morning"
    assert memory.remember("alice writes on").status == "active"


def test_a_rebuild_needs_a_witnessed_checkpoint(world: World) -> None:
    memory = world.open()
    memory.remember("carol's first note", owner="human:carol", actor="human:carol")
    with pytest.raises(IntegrityError, match=r"no witness holds a checkpoint of human:carol"):
        memory.rebuild("human:carol")

"""The facade's use cases end to end, on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import threading

from troth.service.memory import Memory

ALICE = "human:alice"


def test_remember_approve_edit_forget_redact_verify_and_rebuild(any_memory: Memory) -> None:
    kept = any_memory.remember("I prefer window seats on trains", kind="preference")
    assert kept.status == "active"
    proposed = any_memory.remember(
        "Alice seems to like jazz", actor="agent:helper", owner=ALICE, channel="synthesis"
    )
    assert proposed.status == "proposed"
    assert any_memory.approve(proposed.id).status == "active"
    edited = any_memory.edit(kept.id, "I prefer aisle seats on trains")
    assert any_memory.get(kept.id).status == "forgotten"
    assert [h.memory.id for h in any_memory.recall("seats trains")] == [edited.id]
    forgotten = any_memory.forget(proposed.id)
    assert forgotten.status == "forgotten"
    secret = any_memory.remember("my locker code is 4711")
    any_memory.redact(secret.id, reason="asked to erase")
    assert "4711" not in any_memory.get(secret.id).content
    assert any_memory.recall("locker code") == []
    assert all(report.ok for report in any_memory.verify())
    rebuilt = any_memory.rebuild()
    assert [(r["owner"], r["equal"]) for r in rebuilt] == [(ALICE, True)]
    assert all(report.ok for report in any_memory.verify())


def test_threads_sharing_one_facade_and_one_owner_lose_no_write(any_memory: Memory) -> None:
    # The facade writes on the head it verified last; threads racing on one owner must
    # each land exactly once, on one linear chain, whichever of them went stale.
    any_memory.remember("first")
    made: list[str] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(10):
            result = any_memory.remember(f"thread {n} note {i}")
            with lock:
                made.append(result.id)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == len(set(made)) == 60
    assert {m.id for m in any_memory.memories()} >= set(made)
    assert [report.ok for report in any_memory.verify()] == [True]
    assert any_memory.store.tip(ALICE).length == 61

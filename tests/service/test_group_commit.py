"""Group commit: creations that arrive together share a transaction, and a failing one
fails alone (service.groupcommit), on both backends."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from troth.core.errors import StorageError
from troth.service.drafts import WriteResult
from troth.service.memory import Memory

ALICE = "human:alice"


def _held_first_write(memory: Memory) -> tuple[threading.Event, threading.Event]:
    """Make the next creation wait inside its transaction until released, so the writes
    started meanwhile queue behind it and commit as one group."""
    ledger = memory.parts.writes.ledger
    inside, release = threading.Event(), threading.Event()
    original = ledger.write_plan
    first = [True]

    def write_plan(tx: Any, plan: Any, vectors: Any = None) -> WriteResult:
        if first[0]:
            first[0] = False
            inside.set()
            assert release.wait(30)
        return original(tx, plan, vectors)

    ledger.write_plan = write_plan  # type: ignore[method-assign]
    return inside, release


def _in_threads(calls: list[Callable[[], WriteResult]]) -> list[WriteResult | BaseException]:
    results: list[WriteResult | BaseException] = [RuntimeError("not run")] * len(calls)

    def run(index: int) -> None:
        try:
            results[index] = calls[index]()
        except BaseException as exc:  # the test reads each outcome
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def _queued(memory: Memory, count: int) -> None:
    """Wait until ``count`` writes queue behind the held one."""
    group = memory.parts.writes.group
    for _ in range(3000):
        if group.waiting(ALICE) >= count:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"{count} writes did not queue")


def _behind_a_held_write(
    memory: Memory, held: tuple[threading.Event, threading.Event], leader: str, texts: list[str]
) -> list[WriteResult | BaseException]:
    """Write ``leader`` (held inside its transaction), queue ``texts`` behind it, release it:
    the outcomes of ``texts``, in order."""
    inside, release = held
    first = threading.Thread(target=lambda: memory.remember(leader, kind="fact"))
    first.start()
    assert inside.wait(30)
    outcomes: list[WriteResult | BaseException] = []
    rest = threading.Thread(
        target=lambda: outcomes.extend(
            _in_threads([lambda t=t: memory.remember(t, kind="fact") for t in texts])
        )
    )
    rest.start()
    _queued(memory, len(texts))
    release.set()
    first.join(60)
    rest.join(60)
    return outcomes


def test_writes_arriving_together_commit_as_one_group_in_one_chain(memory: Memory) -> None:
    memory.remember("before the group", kind="fact")
    held = _held_first_write(memory)
    texts = [f"note {i}: likes tea" for i in range(6)]
    outcomes = _behind_a_held_write(memory, held, texts[0], texts[1:])
    assert all(isinstance(o, WriteResult) for o in outcomes), outcomes
    sizes = memory.parts.writes.group.sizes
    assert sizes[5] == 1  # the five that queued behind the held write: one transaction
    report = memory.verify(ALICE)[0]
    assert report.ok
    assert report.chain.length == 7
    stored = {m.content for m in memory.memories(ALICE)}
    assert stored == {"before the group", *texts}


def test_a_failing_write_in_a_group_fails_alone_and_the_others_land(memory: Memory) -> None:
    memory.remember("before the group", kind="fact")
    inside, release = _held_first_write(memory)
    ledger = memory.parts.writes.ledger
    held = ledger.write_plan

    def write_plan(tx: Any, plan: Any, vectors: Any = None) -> WriteResult:
        if plan.content == "the bad one":
            raise StorageError("the disk refused this write")
        return held(tx, plan, vectors)

    ledger.write_plan = write_plan  # type: ignore[method-assign]
    texts = ["good one", "the bad one", "good two"]
    outcomes = _behind_a_held_write(memory, (inside, release), "the leader", texts)
    by_text = dict(zip(texts, outcomes, strict=True))
    assert isinstance(by_text["the bad one"], StorageError)
    assert isinstance(by_text["good one"], WriteResult)
    assert isinstance(by_text["good two"], WriteResult)
    assert memory.parts.writes.group.sizes[3] == 1  # the three were tried as one group
    report = memory.verify(ALICE)[0]
    assert report.ok
    assert report.chain.length == 4  # before, the leader, the two good ones: nothing else
    stored = {m.content for m in memory.memories(ALICE)}
    assert stored == {"before the group", "the leader", "good one", "good two"}
    # Each acknowledged write is the memory it named.
    for text in ("good one", "good two"):
        answer = by_text[text]
        assert isinstance(answer, WriteResult)
        assert memory.get(answer.id).content == text


@pytest.mark.parametrize("count", [16])
def test_many_concurrent_writes_all_land_once(memory: Memory, count: int) -> None:
    outcomes = _in_threads(
        [lambda i=i: memory.remember(f"note {i}", kind="fact") for i in range(count)]
    )
    assert all(isinstance(o, WriteResult) for o in outcomes), outcomes
    ids = {o.id for o in outcomes if isinstance(o, WriteResult)}
    assert len(ids) == count
    report = memory.verify(ALICE)[0]
    assert report.ok
    assert report.chain.length == count
    assert sum(size * n for size, n in memory.parts.writes.group.sizes.items()) == count


def _failing_after_a_group_commits(memory: Memory, failed: threading.Event) -> None:
    """Make a step after a group's transaction commits fail (``failed`` is set then)."""
    store = memory.parts.writes.ledger.store
    original = store.write

    @contextmanager
    def write(owner: str, expect: Any = None) -> Iterator[Any]:
        with original(owner, expect) as tx:
            before = tx.tip().length
            yield tx
            after = tx.tip().length
        if after - before > 1:  # the group's transaction, committed just now
            failed.set()
            raise StorageError("a step after the commit failed")

    store.write = write  # type: ignore[method-assign]


def test_a_group_that_committed_is_not_appended_twice_when_a_step_after_fails(
    memory: Memory,
) -> None:
    memory.remember("before the group", kind="fact")
    inside, release = _held_first_write(memory)
    _failing_after_a_group_commits(memory, threading.Event())
    texts = ["one", "two", "three"]
    outcomes = _behind_a_held_write(memory, (inside, release), "the leader", texts)
    assert all(isinstance(o, WriteResult) for o in outcomes), outcomes
    assert memory.parts.writes.group.sizes[3] == 1
    report = memory.verify(ALICE)[0]
    assert report.ok
    assert report.chain.length == 5  # each of the three once
    assert sorted(m.content for m in memory.memories(ALICE)) == sorted(
        ["before the group", "the leader", *texts]
    )


def test_a_group_whose_commit_cannot_be_confirmed_says_its_writes_may_be_stored(
    memory: Memory,
) -> None:
    # The commit happened, a step after it failed, and the chain cannot be read to confirm
    # it: telling the others "nothing was written, send it again" would make them write twice.
    memory.remember("before the group", kind="fact")
    inside, release = _held_first_write(memory)
    store = memory.parts.writes.ledger.store
    original_records = store.records
    gone = threading.Event()
    _failing_after_a_group_commits(memory, gone)

    def records(owner: str, start: int = 0) -> Iterator[Any]:
        if gone.is_set():
            raise StorageError("the database went away")
        return original_records(owner, start)

    store.records = records  # type: ignore[method-assign]
    outcomes = _behind_a_held_write(memory, (inside, release), "the leader", ["one", "two"])
    store.records = original_records  # type: ignore[method-assign]
    assert [type(o) for o in outcomes] == [StorageError, StorageError], outcomes
    # Whichever of the two leads the group (the threads race for it) gets its own error;
    # the other is told its write may be stored.
    said = sorted(("went away" in str(o), "may have been stored" in str(o)) for o in outcomes)
    assert said == [(False, True), (True, False)], outcomes
    assert memory.verify(ALICE)[0].chain.length == 4  # they were: each once

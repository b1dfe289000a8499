"""Searches queued for the same recall share one run; later ones and failed runs do not
(adapters.shared_recall), and served concurrent searches answer as a serial one does."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
import pytest

from tests.adapters.conftest import ALICE, Ledger, LiveServer, auth
from troth.adapters.shared_recall import SharedRecalls
from troth.core.access import HUMAN_DEFAULT_SCOPES


def test_queued_equal_recalls_run_once_and_a_later_one_runs_again() -> None:
    calls: list[str] = []
    release = threading.Event()

    def recall(name: str) -> list[str]:
        calls.append(name)
        if name == "held":
            assert release.wait(10)
        return [f"answer {len(calls)}"]

    async def main() -> dict[str, Any]:
        shared = SharedRecalls(anyio.CapacityLimiter(1))
        answers: dict[str, Any] = {}

        async def ask(label: str, key: str, name: str) -> None:
            answers[label] = await shared.run(key, lambda: recall(name))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "held", "other", "held")  # holds the gate
            await anyio.sleep(0.2)
            tg.start_soon(ask, "a", "tea", "a")
            tg.start_soon(ask, "b", "tea", "b")  # queued with a: shares its run
            tg.start_soon(ask, "c", "jazz", "c")  # another question: its own run
            await anyio.sleep(0.2)
            release.set()
        # A search asked after the tea run finished runs again: it may follow a new write.
        answers["d"] = await shared.run("tea", lambda: recall("d"))
        answers["runs"], answers["shared"] = shared.runs, shared.shared
        return answers

    answers = anyio.run(main)
    assert sorted(calls) == ["a", "c", "d", "held"]
    assert answers["a"] is answers["b"]
    assert answers["d"] != answers["a"]
    assert (answers["runs"], answers["shared"]) == (4, 1)


def test_a_search_arriving_while_its_recall_runs_waits_for_a_run_of_its_own() -> None:
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def recall(name: str) -> str:
        calls.append(name)
        if name == "first":
            started.set()
            assert release.wait(10)
        return name

    async def main() -> tuple[str, str]:
        shared = SharedRecalls(anyio.CapacityLimiter(1))
        got: dict[str, str] = {}

        async def ask(name: str) -> None:
            got[name] = await shared.run("tea", lambda: recall(name))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "first")
            await anyio.to_thread.run_sync(started.wait)
            tg.start_soon(ask, "second")  # the first run already started: not shared
            await anyio.sleep(0.1)
            release.set()
        return got["first"], got["second"]

    assert anyio.run(main) == ("first", "second")
    assert calls == ["first", "second"]


def test_when_the_shared_run_fails_each_search_asks_on_its_own() -> None:
    release = threading.Event()
    calls: list[str] = []

    def recall(name: str) -> str:
        calls.append(name)
        if name == "held":
            assert release.wait(10)
        if name == "a":
            raise RuntimeError("the store refused")
        return name

    async def main() -> dict[str, object]:
        shared = SharedRecalls(anyio.CapacityLimiter(1))
        got: dict[str, object] = {}

        async def ask(name: str, key: str) -> None:
            try:
                got[name] = await shared.run(key, lambda: recall(name))
            except RuntimeError as exc:
                got[name] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "held", "other")
            await anyio.sleep(0.2)
            tg.start_soon(ask, "a", "tea")
            tg.start_soon(ask, "b", "tea")
            await anyio.sleep(0.2)
            release.set()
        return got

    got = anyio.run(main)
    assert isinstance(got["a"], RuntimeError)
    assert got["b"] == "b"  # its own run, not a's error
    assert sorted(calls) == ["a", "b", "held"]


@pytest.mark.parametrize("clients", [12])
def test_concurrent_served_searches_answer_as_a_serial_one(
    ledger: Ledger, live: LiveServer, clients: int
) -> None:
    topics = ["tea", "jazz", "chess"]
    ledger.memory.remember_many(
        [
            {"text": f"client {i % 4} note {i}: likes {topics[i % 3]}", "kind": "fact"}
            for i in range(120)
        ]
    )
    tokens = [ledger.tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token for _ in range(clients)]

    def search(token: str, topic: str) -> list[tuple[str, float]]:
        answer = httpx2.get(
            f"{live.url}/api/search",
            params={"q": f"{topic} note", "limit": "10"},
            headers=auth(token),
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        return [(h["id"], h["score"]) for h in answer.json()["hits"]]

    serial = {topic: search(ledger.alice, topic) for topic in topics}
    assert all(serial.values())
    asked = [(tokens[i], topics[i % 3]) for i in range(clients) for _ in range(3)]
    with ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(lambda a: (a[1], search(*a)), asked))
    for topic, hits in answers:
        assert hits == serial[topic]
    # A reader without sensitive reads never shares a sensitive reader's answer: the
    # queries differ (include_sensitive), so they are different recalls.
    # The best match for "tea note" (both words twice), so it is in a sensitive reader's top ten.
    ledger.memory.remember(
        "tea note: my tea doctor's address, on the note pinned by the door",
        kind="fact",
        sensitivity="sensitive",
    )
    with ThreadPoolExecutor(4) as pool:
        pairs = list(
            pool.map(
                lambda token: search(token, "tea"),
                [ledger.alice, ledger.reader, ledger.alice, ledger.reader],
            )
        )
    sensitive = {m.id for m in ledger.memory.memories(ALICE) if m.sensitivity == "sensitive"}
    assert sensitive
    assert any(hit_id in sensitive for hit_id, _ in pairs[0])
    for hits in (pairs[1], pairs[3]):
        assert not any(hit_id in sensitive for hit_id, _ in hits)


def test_a_run_does_not_wait_for_the_threads_the_writes_use() -> None:
    # Writes run in anyio's default thread pool; a recall holding the gate must not wait
    # for one of those threads, or every search would queue behind stalled writes.
    release = threading.Event()

    async def main() -> str:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1
        shared = SharedRecalls(anyio.CapacityLimiter(1))
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: anyio.to_thread.run_sync(lambda: release.wait(10)))
            await anyio.sleep(0.1)  # the only default thread is now held by a "write"
            try:
                with anyio.fail_after(3):
                    return await shared.run("tea", lambda: "answered")
            finally:
                release.set()

    assert anyio.run(main) == "answered"

"""Shared recalls run on threads of their own, which take the next queued run without the
event loop (adapters.shared_recall): the gate is never idle while the loop is busy, no more
runs than the gate admits run at once, and an idle thread ends."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from troth.adapters import shared_recall
from troth.adapters.shared_recall import SharedRecalls


def test_the_next_queued_run_starts_while_the_loop_is_busy() -> None:
    started: dict[str, float] = {}
    first_running = threading.Event()

    def recall(name: str) -> str:
        started[name] = time.monotonic()
        if name == "first":
            first_running.set()
            time.sleep(0.2)
        return name

    async def main() -> dict[str, str]:
        shared = SharedRecalls(anyio.CapacityLimiter(1))
        got: dict[str, str] = {}

        async def ask(name: str) -> None:
            got[name] = await shared.run(name, lambda: recall(name))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "first")
            await anyio.to_thread.run_sync(first_running.wait)
            tg.start_soon(ask, "second")
            await anyio.sleep(0)  # the second is queued now
            # The loop is busy (a long synchronous step) from before the first run ends
            # until well after: the second run must not wait for it.
            busy_until = time.monotonic() + 0.8
            time.sleep(0.8)
            assert started["second"] < busy_until - 0.3
        return got

    assert anyio.run(main) == {"first": "first", "second": "second"}


@pytest.mark.parametrize("gate", [1, 2])
def test_no_more_runs_at_once_than_the_gate_admits(gate: int) -> None:
    lock = threading.Lock()
    running, most = 0, 0

    def recall(name: str) -> str:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return name

    async def main() -> dict[str, str]:
        shared = SharedRecalls(anyio.CapacityLimiter(gate))
        got: dict[str, str] = {}

        async def ask(name: str) -> None:
            got[name] = await shared.run(name, lambda: recall(name))

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(ask, f"q{i}")
        assert shared.runs == 8
        return got

    assert anyio.run(main) == {f"q{i}": f"q{i}" for i in range(8)}
    assert most == gate


def test_an_idle_recall_thread_ends_and_the_next_search_starts_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shared_recall, "IDLE_SECONDS", 0.05)

    async def main() -> tuple[int, int, str]:
        shared = SharedRecalls(anyio.CapacityLimiter(1))
        await shared.run("tea", lambda: "one")
        during = shared.threads
        deadline = time.monotonic() + 5
        while shared.threads and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        return during, shared.threads, await shared.run("tea", lambda: "two")

    during, after, again = anyio.run(main)
    assert (during, after, again) == (1, 0, "two")


def test_a_cancelled_search_leaves_the_others_their_answer() -> None:
    release = threading.Event()

    def recall() -> str:
        assert release.wait(10)
        return "answer"

    async def main() -> str:
        shared = SharedRecalls(anyio.CapacityLimiter(1))
        got: dict[str, str] = {}

        async def ask() -> None:
            got["kept"] = await shared.run("tea", recall)

        async with anyio.create_task_group() as tg:
            with anyio.move_on_after(0.1):  # a client that went away
                await shared.run("tea", recall)
            tg.start_soon(ask)
            await anyio.sleep(0.05)
            release.set()
        return got["kept"]

    assert anyio.run(main) == "answer"


def test_runs_arriving_together_use_every_slot_though_one_thread_is_idle() -> None:
    # One thread idle from a warm-up run; two different searches then arrive at once. The
    # idle count only drops once the woken thread runs, so deciding on it alone woke that
    # one thread twice and started none: the two ran one after the other on a gate of 2.
    def recall(seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    async def main() -> tuple[float, int]:
        shared = SharedRecalls(anyio.CapacityLimiter(2))
        await shared.run("warm", lambda: recall(0.0))
        await anyio.sleep(0.05)  # the warm-up thread waits, idle, for the next run
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(shared.run, "a", lambda: recall(0.5))
            tg.start_soon(shared.run, "b", lambda: recall(0.5))
        return time.monotonic() - started, shared.threads

    elapsed, threads = anyio.run(main)
    assert threads == 2
    assert elapsed < 0.9

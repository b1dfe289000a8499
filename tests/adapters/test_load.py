"""Concurrent clients on one owner's chain: nothing fails, nothing forks, nothing is lost."""

from __future__ import annotations

from bench.server import question, run_load

from tests.adapters.conftest import ALICE, Ledger, LiveServer
from troth.core.access import HUMAN_DEFAULT_SCOPES


def test_concurrent_writes_and_searches_keep_one_verified_chain(
    ledger: Ledger, live: LiveServer
) -> None:
    tokens = [ledger.tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token for _ in range(8)]
    result = run_load(live.url, tokens, ops=50)
    assert result.errors == []
    assert result.acknowledged == 8 * 50
    assert result.entries == result.acknowledged
    assert result.chain_ok
    reports = ledger.memory.verify(ALICE)
    assert reports[0].ok
    assert reports[0].chain.length == 400


def test_distinct_questions_never_repeat_across_clients_or_turns() -> None:
    asked = [
        question(topic, client, op, "distinct")
        for client in range(32)
        for op in range(50)
        for topic in ("tea", "jazz")
    ]
    assert len(set(asked)) == len(asked)
    assert question("tea", 3, 7, "topics") == question("tea", 9, 1, "topics") == "tea note"

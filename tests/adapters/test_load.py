"""Concurrent clients on one owner's chain: nothing fails, nothing forks, nothing is lost."""

from __future__ import annotations

from bench.server import run_load

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

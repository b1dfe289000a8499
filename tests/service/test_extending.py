"""``service.extending.since``: whether a chain still extends a tip seen before.

The one question the group commit, the read check's saved fold, the sealer's incremental
tree and a migration into a partly copied target ask (its row at the tip's length - 1
carries the tip's head), on both backends.
"""

from __future__ import annotations

from tests.backends import connection, execute
from tests.conftest import StepClock, facade
from troth.service.extending import since
from troth.storage.base import Store, Tip

ALICE = "human:alice"


def test_the_rows_after_a_tip_the_chain_extends(any_store: Store, clock: StepClock) -> None:
    memory = facade(any_store, clock=clock)
    for i in range(5):
        memory.remember(f"alice fact number {i}")
    rows = list(any_store.records(ALICE))
    at = Tip(3, rows[2].entry.hash)
    assert [r.seq for r in since(any_store, ALICE, at) or []] == [3, 4]
    assert [r.seq for r in since(any_store, ALICE, at, 1) or []] == [3]
    assert since(any_store, ALICE, at, 0) == []
    assert since(any_store, ALICE, Tip(5, rows[4].entry.hash)) == []
    assert [r.seq for r in since(any_store, ALICE, Tip(0, "")) or []] == [0, 1, 2, 3, 4]


def test_a_tip_the_chain_no_longer_extends(any_store: Store, clock: StepClock) -> None:
    memory = facade(any_store, clock=clock)
    for i in range(3):
        memory.remember(f"alice fact number {i}")
    rows = list(any_store.records(ALICE))
    assert since(any_store, ALICE, Tip(2, rows[0].entry.hash)) is None  # another head there
    assert since(any_store, ALICE, Tip(4, "f" * 64)) is None  # beyond the chain (cut)
    execute(any_store, "UPDATE ledger SET hash = ? WHERE owner = ? AND seq = 1", ("0" * 64, ALICE))
    connection(any_store).commit()
    assert since(any_store, ALICE, Tip(2, rows[1].entry.hash), 0) is None  # rewritten

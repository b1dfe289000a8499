"""One predicate decides what a witness's holding refuses: ``Holding.finding``.

``Sealer.witnessed`` (the read path's anchor) and ``Sealer.guard`` (a writer's check) both
refuse on it; a witness that cannot be reached is not a finding, a rollback or a rewrite is.
"""

from __future__ import annotations

import pytest

from troth.service.sealing import Holding


@pytest.mark.parametrize(
    ("state", "finding"),
    [
        ("ok", False),
        ("unreachable", False),
        ("rolled_back", True),
        ("rewritten", True),
        ("untrusted", True),
    ],
)
def test_only_a_witness_that_answered_against_the_store_is_a_finding(
    state: str, finding: bool
) -> None:
    held = Holding("human:alice", "troth.local/human:alice", "witness", 3, 2, state)
    assert held.finding is finding
    assert held.ok is (state == "ok")

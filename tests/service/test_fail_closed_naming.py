"""A whole fold's finding names the memory of the row it is at (``ReadCheck.broken``).

The fold of a whole chain keeps only the rows a finding can be at (``readcheck._Folding``):
an erased row put back is found at the redact event that erased it, which is about that
memory, so the finding names it as when every row was kept.
"""

from __future__ import annotations

import pytest

from tests.service.test_fail_closed import ALICE, World, row, seq_of, world
from troth.core.errors import IntegrityError

__all__ = ["world"]  # the fixture, imported to be used here


def test_an_erased_row_put_back_is_refused_naming_its_memory(world: World) -> None:
    memory = world.open()
    pin = memory.remember("alice's bank pin is 1234").id
    seq = seq_of(world, pin)
    before = row(world, ALICE, seq)
    memory.redact(pin, reason="a secret")
    memory.remember("alice writes after the redaction")  # the redact event is not the last row
    world.sql(
        "UPDATE ledger SET content = ?, redacted = ?, texts = ? WHERE owner = ? AND seq = ?",
        (before["content"], before["redacted"], before["texts"], ALICE, seq),
    )
    with pytest.raises(IntegrityError, match=r"an erased row was put back") as caught:
        world.open().memories(ALICE)
    assert f"(memory {pin})" in caught.value.message

"""A restore writes only a copy ``verify_copy`` made: a ``VerifiedCopy`` built any other
way is refused as it is built, so ``Restorer.restore`` (which trusts its rows) never sees
one whose rows were not verified and folded for its owner."""

from __future__ import annotations

import dataclasses

import pytest

from tests.conftest import StepClock, facade
from troth.core.errors import IntegrityError
from troth.core.events import Record
from troth.service.proofs import VerifiedCopy, verify_copy
from troth.storage.base import Store

ALICE = "human:alice"


def rows_of(store: Store, clock: StepClock) -> list[Record]:
    memory = facade(store, clock=clock)
    memory.remember("alice drinks green tea")
    memory.remember("alice walks at noon")
    return list(store.records(ALICE))


def test_verify_copy_makes_the_copy_a_restore_takes(any_store: Store, clock: StepClock) -> None:
    rows = rows_of(any_store, clock)
    copy = verify_copy(rows, ALICE)
    assert [r.entry.hash for r in copy.rows] == [r.entry.hash for r in rows]
    assert {m.content for m in copy.in_order()} == {"alice drinks green tea", "alice walks at noon"}
    with pytest.raises(TypeError):
        copy.projection["m_forged"] = next(iter(copy.projection.values()))  # type: ignore[index]


def test_a_copy_built_without_verify_copy_is_refused(any_store: Store, clock: StepClock) -> None:
    rows = rows_of(any_store, clock)
    forged = tuple(rows[:1])
    with pytest.raises(TypeError, match="made by verify_copy"):
        VerifiedCopy(ALICE, forged, {}, None)
    with pytest.raises(TypeError, match="made by verify_copy"):
        VerifiedCopy(ALICE, forged, {}, object())
    with pytest.raises(TypeError):
        VerifiedCopy(ALICE, forged, {})  # type: ignore[call-arg]
    # Nor can a verified copy be turned into another one.
    copy = verify_copy(rows, ALICE)
    with pytest.raises(ValueError, match="made_by"):
        dataclasses.replace(copy, owner="human:mallory")


def test_a_copy_whose_rows_do_not_verify_is_never_made(any_store: Store, clock: StepClock) -> None:
    rows = rows_of(any_store, clock)
    with pytest.raises(IntegrityError, match="entry #0 of the restore copy does not verify"):
        verify_copy(rows[1:], ALICE)

"""A redaction takes the owner's saved fold with it (docs/ledger.md, section 13).

A saved fold keeps a digest of each memory's record. One taken before a redaction is a
digest of the erased text: whoever holds the file could confirm a guess at a short text
(a PIN, a name) by hashing it. The write that erases drops the file; the next process
folds the chain whole, from the erased rows, and saves what it found. Both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.service.test_first_read import ALICE, Home, opened_home, saved
from troth.service import folds


@pytest.fixture
def place(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Home]:
    with opened_home(backend, tmp_path, request) as opened:
        yield opened


def test_a_redaction_drops_the_saved_fold_holding_a_digest_of_the_text(
    place: Home, tmp_path: Path
) -> None:
    kept = saved(place, tmp_path, 5)
    path = kept.file_for(ALICE)
    memory, _ = place.open(kept)
    secret = next(m for m in memory.memories(ALICE) if m.content.endswith("number 3"))
    before = folds.digest(secret)
    assert before in path.read_bytes()  # the saved fold holds the record's digest
    memory.redact(secret.id, reason="the person asked", owner=ALICE)
    assert not path.exists()  # taken by the erasure, not left until a later save
    memory.close()
    assert not path.exists() or before not in path.read_bytes()
    # The next process folds the erased chain whole and still serves the rest.
    again, _ = place.open(kept)
    served = {m.id: m.content for m in again.memories(ALICE)}
    assert secret.content not in served.values()
    assert sum(text.startswith("alice fact number") for text in served.values()) == 4
    again.close()
    assert before not in path.read_bytes()

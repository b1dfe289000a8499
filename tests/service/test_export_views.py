"""``Memory.export`` (the bytes) and ``export_to``/``export_file`` (the file with its proof)
build a personaxis or HUX export one way: from the fold of one read of the owner's rows.

Those rows are what the export's checkpoint signs and what a restore folds again to check
the view, so the bytes alone are the same bytes the file with its proof holds, whichever
verb made them: the same at every tip, an edit, a forget and a redaction included. And,
made from one read, the ``export`` event lists exactly the memories the bytes carry, even
when another writer commits while the export is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.bundles import export_member
from tests.conftest import StepClock, facade
from tests.processes import in_another_thread
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"
FLAT = ["personaxis", "hux", "hux-jsonl"]


def twin(memory: Memory, where: Path) -> Memory:
    """A facade over a new SQLite store holding ``memory``'s rows for Alice, verbatim."""
    copy = facade(SQLiteStore(where / "twin.db"), clock=StepClock())
    copy.restore_chain(ALICE, memory.store.records(ALICE))
    return copy


def files_made(memory: Memory, fmt: str, where: Path) -> list[bytes]:
    """The export in ``fmt`` as the file verbs make it, each on a twin at ``memory``'s tip:
    ``export_to`` (a file with its restore copy beside it) and, for a bundle's formats,
    ``export_file`` (the export inside its bundle)."""
    made = []
    verbs: list[tuple[str, Callable[[Memory], bytes]]] = [
        ("to", lambda m: _written(m, fmt, where / "to")),
    ]
    if fmt != "hux-jsonl":  # a bundle's HUX is a JSON array
        verbs.append(("file", lambda m: export_member(m.export_file(fmt).data)))
    for name, verb in verbs:
        (where / name).mkdir()
        with twin(memory, where / name) as copy:
            made.append(verb(copy))
    return made


def _written(memory: Memory, fmt: str, where: Path) -> bytes:
    path = where / ("export.jsonl" if fmt != "hux" else "export.json")
    memory.export_to("hux" if fmt == "hux-jsonl" else fmt, path)
    return path.read_bytes()


@pytest.fixture
def steps(memory: Memory) -> Callable[[], None]:
    """Alice's ledger through its changes: each call makes the next (an edit, a forget, a
    redaction), after one with a kept memory, an approved proposal and a hidden one."""
    kept = memory.remember("I prefer green tea", kind="preference", title="Tea")
    made = memory.remember("Alice runs", actor="agent:bot", owner=ALICE, channel="synthesis")
    memory.approve(made.id, note="yes")
    memory.hide(memory.remember("My locker is 12").id)
    bike = memory.remember("My bike is blue")
    secret = memory.remember("a text to erase")
    changes = iter(
        [
            lambda: memory.edit(bike.id, "My bike is green", reason="painted"),
            lambda: memory.forget(kept.id, reason="no longer true"),
            lambda: memory.redact(secret.id, reason="erasure request"),
        ]
    )
    return lambda: next(changes)()


@pytest.mark.parametrize("fmt", FLAT)
def test_the_bytes_are_the_file_with_its_proof_at_every_tip(
    memory: Memory, steps: Callable[[], None], tmp_path: Path, fmt: str
) -> None:
    for step in ("start", "edit", "forget", "redact"):
        if step != "start":
            steps()
        where = tmp_path / step
        where.mkdir()
        files = files_made(memory, fmt, where)  # first: the twins hold no export event
        data, _count = memory.export(fmt)
        assert files, (fmt, step)
        assert all(f == data for f in files), (fmt, step)
    if fmt != "personaxis":
        assert "a text to erase" not in data.decode()
        assert "My bike is green" in data.decode()


def _hux_ids(data: bytes) -> set[str]:
    text = data.decode()
    records = json.loads(text) if text.lstrip().startswith("[") else _lines(text)
    return {str(r["id"]) for r in records}


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("fmt", ["hux", "hux-jsonl"])
def test_the_export_event_lists_what_the_bytes_carry_when_a_write_comes_between(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    memory.remember("I prefer green tea")
    memory.export(fmt)  # the owner is read once: what follows is the export's own reading
    other = facade(memory.store, clock=StepClock())
    store = memory.parts.portability.store
    raced: list[str] = []

    def reading(name: str) -> None:
        real = getattr(store, name)

        def then_a_write(*args: Any, **kwargs: Any) -> Any:
            found = real(*args, **kwargs)
            found = list(found) if name == "records" else found
            if not raced:  # another writer commits between the export's first read and the rest
                in_another_thread(lambda: raced.append(other.remember("My bike is blue").id))
            return iter(found) if name == "records" else found

        monkeypatch.setattr(store, name, then_a_write)

    for name in ("records", "memories", "projection"):
        reading(name)
    data, _count = memory.export(fmt)
    monkeypatch.undo()
    assert raced
    [*_, last] = memory.store.records(ALICE)
    event = last.decode()
    assert event is not None
    assert event.event == "export"
    assert _hux_ids(data) == set(event.memories)


@pytest.mark.parametrize("fmt", FLAT)
def test_the_bytes_alone_sign_no_checkpoint(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    # The bytes carry no proof, so none is made: no signature, no witness called.
    memory.remember("I prefer green tea")

    def signed(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Memory.export signed a checkpoint its bytes do not carry")

    monkeypatch.setattr(memory.parts.portability.proofs, "sign", signed)
    data, count = memory.export(fmt)
    assert count >= 1
    assert b"green tea" in data

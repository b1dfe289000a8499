"""The sealer, the key store and the directory witness, as a library."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import StepClock
from troth.config import SealingSettings, Settings, load_policy
from troth.core.errors import ConflictError, IntegrityError, InvalidInputError
from troth.formats import note, tlog
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.sealing import Sealer
from troth.service.witness import DirectoryWitness
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[Memory, Sealer, DirectoryWitness]]:
    store = SQLiteStore(tmp_path / "home" / "troth.db")
    memory = Memory(store, policy=load_policy(None), principal=ALICE, clock=StepClock())
    witness = DirectoryWitness(tmp_path / "witness")
    sealer = Sealer(store, KeyStore(tmp_path / "keys" / "signing.key"), "ledger.test/1", [witness])
    with memory:
        yield memory, sealer, witness


def test_a_chain_that_does_not_verify_is_not_signed(
    parts: tuple[Memory, Sealer, DirectoryWitness], tmp_path: Path
) -> None:
    memory, sealer, witness = parts
    memory.remember("alice likes green tea")
    memory.remember("alice walks at noon")
    with sqlite3.connect(tmp_path / "home" / "troth.db") as db:
        db.execute("UPDATE ledger SET ts = '2020-01-01T00:00:00.000Z' WHERE seq = 0")
    with pytest.raises(IntegrityError, match=r"does not verify .*it is not signed"):
        sealer.seal(ALICE)
    assert witness.origins("") == []


def test_the_witness_keeps_the_newest_checkpoint_and_refuses_an_older_or_forked_one(
    parts: tuple[Memory, Sealer, DirectoryWitness],
) -> None:
    memory, sealer, witness = parts
    memory.remember("one")
    [old] = sealer.seal()
    memory.remember("two")
    [new] = sealer.seal()
    assert witness.latest(sealer.origin(ALICE)) == new.note
    verifiers = sealer.keys.verifier_keys()
    with pytest.raises(ConflictError, match="behind its witness"):
        witness.submit(old.note, None, verifiers)
    signer = sealer.keys.signer(create=False)
    assert signer is not None
    fork = tlog.Checkpoint(sealer.origin(ALICE), new.checkpoint.size + 1, b"\x07" * 32)
    with pytest.raises(IntegrityError, match="does not extend"):
        witness.submit(note.sign(fork.to_text(), signer), [b"\x01" * 32], verifiers)
    stranger = note.Signer.generate("someone.else/key")
    with pytest.raises(IntegrityError, match="no trusted key signed"):
        witness.submit(note.sign(fork.to_text(), stranger), None, verifiers)
    assert witness.latest(sealer.origin(ALICE)) == new.note
    # Sealing the same tree again changes nothing (Ed25519 signatures are deterministic).
    assert sealer.seal()[0].note == new.note


def test_a_checkpoint_signed_by_an_unknown_key_is_reported_with_the_fix(
    parts: tuple[Memory, Sealer, DirectoryWitness], tmp_path: Path
) -> None:
    memory, sealer, _ = parts
    memory.remember("one")
    sealer.seal()
    old_key = sealer.keys.signer(create=False)
    assert old_key is not None
    sealer.keys.path.rename(tmp_path / "retired.key")
    [held] = sealer.hold()
    assert held.state == "untrusted"
    assert str(sealer.keys.trusted_path) in held.message
    # After a rotation the old verifier key, listed in trusted.keys, checks old checkpoints.
    sealer.keys.trusted_path.write_text(f"# retired\n{old_key.verifier.to_key()}\n")
    [held] = sealer.hold()
    assert held.ok
    memory.remember("two")
    assert sealer.seal()[0].checkpoint.size == 2


def test_the_key_is_made_once_even_by_racing_processes(tmp_path: Path) -> None:
    made: list[str] = []

    def make() -> None:
        signer = KeyStore(tmp_path / "cfg" / "signing.key").signer()
        assert signer is not None
        made.append(signer.verifier.to_key())

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 1
    assert [p.name for p in (tmp_path / "cfg").iterdir()] == ["signing.key"]


def test_bad_key_files_say_how_to_repair(tmp_path: Path) -> None:
    path = tmp_path / "signing.key"
    path.write_text("not a key\n")
    path.chmod(0o600)
    with pytest.raises(InvalidInputError, match="is not a signer key"):
        KeyStore(path).signer()
    KeyStore(tmp_path / "k2" / "signing.key").signer()
    (tmp_path / "k2" / "trusted.keys").write_text("garbage\n")
    with pytest.raises(InvalidInputError, match=r"trusted\.keys line 1"):
        KeyStore(tmp_path / "k2" / "signing.key").verifier_keys()


def test_the_ledger_name_follows_the_store_and_may_be_named(tmp_path: Path) -> None:
    settings = Settings.load(home=tmp_path / "a", environ={})
    same = SealingSettings.load(Settings.load(home=tmp_path / "a", environ={}), {})
    other = SealingSettings.load(Settings.load(home=tmp_path / "b", environ={}), {})
    mine = SealingSettings.load(settings, {})
    assert mine.ledger == same.ledger != other.ledger
    assert mine.ledger.startswith("troth.local/")
    assert mine.key_path.name == "signing.key"
    assert not mine.key_path.is_relative_to(tmp_path / "a")
    pg = Settings.load(
        home=tmp_path, environ={"TROTH_DATABASE_URL": "postgresql://u:pw@db:5433/mem"}
    )
    pg_other_user = Settings.load(
        home=tmp_path,
        environ={"TROTH_DATABASE_URL": "postgresql://v:x@db:5433/mem?sslmode=require"},
    )
    assert SealingSettings.load(pg, {}).ledger == SealingSettings.load(pg_other_user, {}).ledger
    named = SealingSettings.load(settings, {"TROTH_LEDGER": "memory.example.com/alice"})
    assert named.ledger == "memory.example.com/alice"
    assert SealingSettings.load(settings, {"TROTH_WITNESS": "off"}).witness is None
    with pytest.raises(InvalidInputError, match="TROTH_LEDGER"):
        SealingSettings.load(settings, {"TROTH_LEDGER": "a+b"})


def behind_the_programs_back(
    backend: str, home: Path, request: pytest.FixtureRequest, *statements: str
) -> None:
    """Run SQL on the raw store, as someone who can write the database would."""
    if backend == "sqlite":
        with sqlite3.connect(home / "troth.db") as db:
            for statement in statements:
                db.execute(statement)
        return
    import psycopg

    with psycopg.connect(request.getfixturevalue("pg_url"), autocommit=True) as db:
        for statement in statements:
            db.execute(statement)


def test_a_cut_tail_with_its_head_rewritten_passes_the_chain_but_not_the_witness(
    any_memory: Memory, backend: str, home: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    witness = DirectoryWitness(tmp_path / "witness")
    sealer = Sealer(
        any_memory.store, KeyStore(tmp_path / "k" / "signing.key"), "t.test/1", [witness]
    )
    for text in ("one", "two", "three"):
        any_memory.remember(f"memory {text}")
    sealer.seal()
    second = [r.entry.hash for r in any_memory.store.records(ALICE)][1]
    behind_the_programs_back(
        backend,
        home,
        request,
        "DELETE FROM ledger WHERE seq = 2",
        f"UPDATE heads SET length = 2, head = '{second}'",
    )
    # The chain and its recorded head agree again: only the witness knows better.
    [report] = any_memory.verify()
    assert report.chain.ok
    [held] = sealer.hold()
    assert (held.state, held.size, held.witnessed_size) == ("rolled_back", 2, 3)
    with pytest.raises(IntegrityError, match="holds 2 entries, but the witness"):
        sealer.guard()


def test_the_tree_reads_only_new_rows_but_notices_a_changed_last_row(
    parts: tuple[Memory, Sealer, DirectoryWitness], tmp_path: Path
) -> None:
    memory, sealer, _ = parts
    memory.remember("one")
    memory.remember("two")
    assert sealer.tree(ALICE).size == 2
    memory.remember("three")
    grown = sealer.tree(ALICE)
    assert grown.size == 3
    assert grown.root() == sealer.__class__(memory.store, sealer.keys, "x").tree(ALICE).root()
    with sqlite3.connect(tmp_path / "home" / "troth.db") as db:
        db.execute("UPDATE ledger SET hash = ? WHERE seq = 2", ("0" * 64,))
        db.execute("UPDATE heads SET head = ?", ("0" * 64,))
    with pytest.raises(IntegrityError, match="entry #2"):
        sealer.tree(ALICE)

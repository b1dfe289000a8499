"""How often checkpoints are made, and what a new sealer reads: the sealed tips."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import StepClock
from troth.config import load_policy, parse_every
from troth.core.errors import InvalidInputError
from troth.formats import tlog
from troth.service.keys import KeyStore
from troth.service.memory import Memory
from troth.service.schedule import SealingSchedule
from troth.service.sealing import CheckpointPolicy, Sealer
from troth.service.tips import SealedTips
from troth.service.witness import DirectoryWitness, open_checkpoint
from troth.storage.base import Tip
from troth.storage.sqlite import SQLiteStore

OWNER = "human:alice"
LEDGER = "troth.local/0123456789abcdef"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    store = SQLiteStore(tmp_path / "home" / "troth.db")
    with Memory(store, policy=load_policy(None), principal=OWNER, clock=StepClock()) as memory:
        yield memory


def sealer_for(memory: Memory, config: Path, policy: CheckpointPolicy, **kw: object) -> Sealer:
    return Sealer(
        memory.store,
        KeyStore(config / "signing.key"),
        LEDGER,
        [DirectoryWitness(config / "witness")],
        policy=policy,
        tips=SealedTips(config / "sealed"),
        **kw,  # type: ignore[arg-type]
    )


def witnessed(config: Path) -> int:
    data = DirectoryWitness(config / "witness").latest(tlog.origin_for(LEDGER, OWNER))
    if data is None:  # nothing witnessed yet (the folder may exist, made by its lock)
        return 0
    keys = KeyStore(config / "signing.key").verifier_keys()
    return open_checkpoint(data, keys).checkpoint.size


def test_the_frequency_reads_as_the_configuration_writes_it() -> None:
    assert parse_every("commit", "x") == CheckpointPolicy(1, None)
    assert parse_every("10 commits", "x") == CheckpointPolicy(10, None)
    assert parse_every("each 25 entries", "x") == CheckpointPolicy(25, None)
    assert parse_every("30s", "x") == CheckpointPolicy(None, 30.0)
    assert parse_every("100 commits or 2.5 seconds", "x") == CheckpointPolicy(100, 2.5)
    for bad in ("", "0 commits", "often", "-3s", "5 minutes"):
        with pytest.raises(InvalidInputError, match="not a checkpoint frequency"):
            parse_every(bad, "TROTH_CHECKPOINT_EVERY")
    policy = CheckpointPolicy(entries=3, seconds=60)
    assert not policy.due(0, 1e9)
    assert not policy.due(2, 59)
    assert policy.due(3, 0)
    assert policy.due(1, 60)


def test_every_n_entries_seals_at_each_nth(memory: Memory, tmp_path: Path) -> None:
    config = tmp_path / "config"
    sizes = []
    for i in range(7):
        sealer = sealer_for(memory, config, CheckpointPolicy(entries=3))  # a new process each
        before = sealer.guard()
        memory.remember(f"note {i}")
        sealer.seal_moved(before)
        sizes.append(witnessed(config))
    # The first write is sealed (no checkpoint yet), then each third entry after it.
    assert sizes == [1, 1, 1, 4, 4, 4, 7]


def test_every_t_seconds_seals_once_that_long_has_passed(memory: Memory, tmp_path: Path) -> None:
    config = tmp_path / "config"
    policy = CheckpointPolicy(entries=None, seconds=0.3)
    sealer = sealer_for(memory, config, policy)
    memory.remember("first")
    assert [s.checkpoint.size for s in sealer.seal_due()] == [1]
    memory.remember("second")
    assert sealer.seal_due() == []
    time.sleep(0.35)
    assert [s.checkpoint.size for s in sealer.seal_due()] == [2]


def test_a_new_sealer_starts_from_the_sealed_tip_and_tells_the_write_path(
    memory: Memory, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    for i in range(9):
        memory.remember(f"note {i}")
    sealer_for(memory, config, CheckpointPolicy()).seal()
    memory.remember("one more")
    told: list[tuple[str, Tip]] = []
    fresh = sealer_for(
        memory, config, CheckpointPolicy(), on_verified=lambda o, t: told.append((o, t))
    )
    tree = fresh.tree(OWNER)
    assert (tree.first, tree.size) == (9, 10)  # nine leaves known by their compact range
    assert told == [(OWNER, memory.store.tip(OWNER))]
    [seal] = fresh.seal_due()
    assert seal.checkpoint.root == fresh.full_tree(OWNER).root()
    assert witnessed(config) == 10


def test_a_sealed_tip_that_does_not_check_out_is_ignored(memory: Memory, tmp_path: Path) -> None:
    config = tmp_path / "config"
    for i in range(4):
        memory.remember(f"note {i}")
    sealer_for(memory, config, CheckpointPolicy()).seal()
    [tip_file] = (config / "sealed").iterdir()
    tip_file.write_text(tip_file.read_text().replace('"head": "', '"head": "00'))
    assert sealer_for(memory, config, CheckpointPolicy()).tree(OWNER).first == 0
    tip_file.write_text("not json")
    assert sealer_for(memory, config, CheckpointPolicy()).tree(OWNER).first == 0


def test_a_served_store_is_sealed_on_schedule_and_when_it_stops(
    memory: Memory, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    schedule = SealingSchedule(sealer_for(memory, config, CheckpointPolicy(entries=2)), tick=0.1)
    schedule.start()
    try:
        memory.remember("first")
        deadline = time.monotonic() + 10
        while witnessed(config) < 1:
            assert time.monotonic() < deadline, "the schedule sealed nothing"
            time.sleep(0.05)
        memory.remember("second")
        memory.remember("third")
        while witnessed(config) < 3:
            assert time.monotonic() < deadline, "the schedule did not seal the third"
            time.sleep(0.05)
        memory.remember("fourth")  # one past the checkpoint: not due yet
        time.sleep(0.3)
        assert witnessed(config) == 3
    finally:
        schedule.stop()
    assert witnessed(config) == 4  # sealed on the way out


def test_the_sealing_file_lists_witnesses_and_says_what_is_wrong(
    tmp_path: Path, sealing_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from troth.config import SealingSettings, Settings, WitnessSetting, build_sealer
    from troth.formats import note
    from troth.service.witness_client import HTTPWitness

    settings = Settings.load(home=tmp_path / "home", principal=OWNER)
    sealing_file = sealing_config / "sealing.toml"
    sealing_config.mkdir(parents=True, exist_ok=True)
    cosigner = note.Cosigner.generate("witness.test/w1")
    sealing_file.write_text(
        'every = "10 commits or 30s"\n'
        f'[[witness]]\nurl = "http://127.0.0.1:9/"\nkey = "{cosigner.verifier.to_key()}"\n'
        f'[[witness]]\npath = "{tmp_path / "share"}"\n'
    )
    loaded = SealingSettings.load(settings)
    assert loaded.policy == CheckpointPolicy(10, 30.0)
    assert loaded.witnesses[1] == WitnessSetting(path=tmp_path / "share")
    with Memory(
        SQLiteStore(tmp_path / "home" / "troth.db"), policy=load_policy(None), principal=OWNER
    ) as memory:
        sealer = build_sealer(memory, settings)
        kinds = [type(w).__name__ for w in sealer.witnesses]
        assert kinds == ["HTTPWitness", "DirectoryWitness", "DirectoryWitness"]
        assert isinstance(sealer.witnesses[0], HTTPWitness)
        monkeypatch.setenv("TROTH_CHECKPOINT_EVERY", "30s")
        assert SealingSettings.load(settings).policy == CheckpointPolicy(None, 30.0)
        monkeypatch.delenv("TROTH_CHECKPOINT_EVERY")
        plain = note.Signer.generate("witness.test/w1").verifier.to_key()
        cases = {
            f'[[witness]]\nurl = "http://x/"\nkey = "{plain}"\n': "type 0x01",
            '[[witness]]\nurl = "ftp://x/"\nkey = "k"\n': "http(s) url",
            '[[witness]]\npath = "/a"\nurl = "http://x/"\n': "not both",
            'every = "often"\n': "not a checkpoint frequency",
            "every = [\n": "cannot be read as TOML",
        }
        for text, sentence in cases.items():
            sealing_file.write_text(text)
            with pytest.raises(InvalidInputError, match=re.escape(sentence)):
                build_sealer(memory, settings)

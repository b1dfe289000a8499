"""A bulk load writes exactly what one ``remember`` at a time writes (SQLite).

The same items, with the same clock and the same ids, go into one store through
``remember_many`` in batches inside ``bulk_load`` (the path ``bench.scale`` and an import
take) and into another through ``remember``, one transaction each. Every stored byte must
agree: the ledger rows (so the chain and its hashes), the heads, the projection rows, the
full-text rows with their conversation context, and the vectors. Only the vector
generation differs, by design: it counts transactions. The batch embedder is held to the
per-text mean it replaced, bit for bit.
"""

from __future__ import annotations

import itertools
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from troth.config import load_policy
from troth.embedding import (
    DEFAULT_MODEL,
    MODELS_DIR,
    StaticEmbedder,
    WordPieceTokenizer,
    read_safetensors,
)
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore

OWNER = "human:bulk"
MOMENT = datetime(2026, 12, 2, 1, 0, tzinfo=UTC)
WORDS = [
    *("tea", "garden", "parrot", "coast", "novel", "river", "lantern", "violin"),
    *("harbour", "maple", "pepper", "quiet", "morning", "letter", "sister", "bakery"),
    *("museum", "winter", "ticket", "marathon"),
]


def items(count: int) -> list[dict[str, Any]]:
    """Conversational turns: sessions of uneven length (so batches split them), two
    speakers, a turn without a session, and texts the policy reads as sensitive or does
    not store."""
    rng = np.random.default_rng(19)
    out: list[dict[str, Any]] = []
    session = 0
    left = 0
    for i in range(count):
        if not left:
            session += 1
            left = int(rng.integers(1, 9))
        left -= 1
        speaker = ("Avery", "Blake")[i % 2]
        words = " ".join(WORDS[int(j)] for j in rng.integers(0, len(WORDS), 8))
        item: dict[str, Any] = {
            "text": f"{speaker}: {words}",
            "session": f"s{session}",
            "recorded_at": "2023-05-01T10:00:00Z",
            "extra": {"x_speaker": speaker},
        }
        if i % 17 == 5:
            item["text"] += " my password is hunter2-tea"  # credentials: the policy decides
        if i % 23 == 7:
            item["text"] += " I was diagnosed with asthma"  # health: sensitive
        if i % 29 == 11:
            del item["session"]  # a turn outside any conversation
        out.append(item)
    return out


@pytest.fixture
def fixed_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same memory ids in every store (their random part counts up instead)."""
    counter = itertools.count()
    monkeypatch.setattr(secrets, "token_hex", lambda n=None: f"{next(counter):010x}")


def memory_at(path: Path) -> Memory:
    return Memory(
        SQLiteStore(path),
        policy=load_policy(None),
        principal=OWNER,
        embedder=StaticEmbedder.default(),
        clock=lambda: MOMENT,
    )


def dump(memory: Memory) -> dict[str, list[tuple[Any, ...]]]:
    """Every table a write fills, in a fixed order (vectors as their bytes)."""
    db = memory.store._connection()  # type: ignore[attr-defined]
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms"
        " USING fts5vocab(main, 'memory_fts', 'instance')"
    )
    return {
        "ledger": db.execute("SELECT * FROM ledger ORDER BY owner, seq").fetchall(),
        "heads": db.execute("SELECT * FROM heads ORDER BY owner").fetchall(),
        "memories": db.execute("SELECT * FROM memories ORDER BY rid").fetchall(),
        # The index is contentless: every token it holds, by row, column and position.
        "memory_fts": db.execute(
            "SELECT doc, col, offset, term FROM fts_terms ORDER BY doc, col, offset"
        ).fetchall(),
        "memory_vec": db.execute(
            "SELECT rowid, owner, embedding FROM memory_vec ORDER BY rowid"
        ).fetchall(),
    }


def test_bulk_load_writes_what_one_at_a_time_writes(tmp_path: Path, fixed_ids: None) -> None:
    given = items(130)
    bulk = memory_at(tmp_path / "bulk" / "troth.db")
    with bulk.bulk_load():
        for start in range(0, len(given), 40):
            bulk.remember_many(given[start : start + 40])  # type: ignore[arg-type]
    first = dump(bulk)
    bulk.store.close()

    # The same ids again, for the one-at-a-time store.
    counter = itertools.count()
    secrets.token_hex = lambda n=None: f"{next(counter):010x}"  # undone by the fixture
    single = memory_at(tmp_path / "single" / "troth.db")
    for item in given:
        fields = dict(item)
        single.remember(fields.pop("text"), **fields)
    second = dump(single)
    single.verify()
    single.store.close()

    assert len(first["ledger"]) == len(given)
    # The corpus reaches every write path: kept, held for review or not stored, sensitive,
    # and conversations whose neighbours lend words (a row with context).
    docs = " ".join(str(row) for row in first["memories"])
    assert "'sensitive'" in docs
    assert any(col == "context" for _, col, _, _ in first["memory_fts"]), "no context words"
    assert len(first["memory_vec"]) < len(given), "not every memory is searchable"
    for table in first:
        assert first[table] == second[table], table


def test_batch_embedding_is_the_per_text_mean() -> None:
    embedder = StaticEmbedder.default()
    texts = [str(item["text"]) for item in items(300)]
    texts += ["", "?!", "Ça va, Zoë? 中文 naïve", "word " * 700, "x" * 300]
    # The reference reads the shipped model itself, as the embedder does.
    folder = MODELS_DIR / DEFAULT_MODEL
    tensors = read_safetensors(folder / "embeddings.safetensors")
    matrix = (
        tensors["embeddings"].astype(np.float32) * tensors["scales"].astype(np.float32)[:, None]
    )
    tokenizer = WordPieceTokenizer.from_file(folder / "tokenizer.json")
    expected = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for row, text in enumerate(texts):
        ids = [i for i in tokenizer.encode(text)[:512] if i != tokenizer.unknown_id]
        if ids:
            expected[row] = matrix[ids].mean(axis=0)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    expected = (expected / norms).astype(np.float32)
    batch = embedder.embed(texts)
    assert batch.tobytes() == expected.tobytes()
    one_by_one = np.vstack([embedder.embed([text]) for text in texts])
    assert one_by_one.tobytes() == expected.tobytes()

"""Tests for the embedders: the packaged static model loads offline and behaves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from troth.embedding import (
    DEFAULT_MODEL,
    MODELS_DIR,
    Embedder,
    HashingEmbedder,
    StaticEmbedder,
    WordPieceTokenizer,
    read_safetensors,
)


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return StaticEmbedder.default()


def test_packaged_model_files_are_small() -> None:
    files = list((MODELS_DIR / DEFAULT_MODEL).iterdir())
    assert {f.name for f in files} >= {"embeddings.safetensors", "tokenizer.json", "config.json"}
    assert all(f.stat().st_size < 5_000_000 for f in files)


def test_static_embedder_returns_unit_float32_rows(static: StaticEmbedder) -> None:
    vectors = static.embed(["I adopted a puppy", "We went hiking in the mountains", ""])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, static.dim)
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)
    assert not vectors[2].any()


def test_static_embedder_places_paraphrases_closer_than_unrelated_text(
    static: StaticEmbedder,
) -> None:
    a, b, c = static.embed(
        [
            "My dog loves playing fetch",
            "The puppy enjoys chasing a ball",
            "Tax forms are due in April",
        ]
    )
    assert float(a @ b) > float(a @ c)


def test_static_embedder_is_deterministic(static: StaticEmbedder) -> None:
    texts = ["same text", "another one"]
    assert np.array_equal(static.embed(texts), static.embed(texts))
    assert static.embed([]).shape == (0, static.dim)


def test_embedders_satisfy_the_protocol(static: StaticEmbedder) -> None:
    assert isinstance(static, Embedder)
    assert isinstance(HashingEmbedder(), Embedder)


def test_embed_rejects_a_bare_string(static: StaticEmbedder) -> None:
    with pytest.raises(TypeError):
        static.embed("one text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        HashingEmbedder().embed("one text")  # type: ignore[arg-type]


def test_hashing_embedder_is_stable_and_normalised() -> None:
    embedder = HashingEmbedder(dim=128, name="hashing-128")
    first = embedder.embed(["the cat sat", "the cat sat on a mat", "quantum chromodynamics"])
    assert first.shape == (3, 128)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert float(first[0] @ first[1]) > float(first[0] @ first[2])
    assert np.array_equal(
        first, embedder.embed(["the cat sat", "the cat sat on a mat", "quantum chromodynamics"])
    )


def test_default_model_loads_without_network_or_torch(tmp_path: Path) -> None:
    # A fresh interpreter with the hub forced offline and torch made unimportable.
    blocker = tmp_path / "torch.py"
    blocker.write_text("raise ImportError('torch must not be needed')\n")
    code = (
        "from troth.embedding import StaticEmbedder\n"
        "v = StaticEmbedder.default().embed(['offline works'])\n"
        "assert v.shape[0] == 1\n"
        "import sys; assert 'torch' not in sys.modules\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(tmp_path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


# Expected ids produced by Hugging Face `tokenizers` 0.23.3 from the same tokenizer.json
# (add_special_tokens=False); the pure-Python tokenizer must agree exactly.
TOKENIZERS_REFERENCE = [
    ("Hello, World!", [6595, 13, 1091, 2]),
    ("Café naïve résumé", [6671, 14746, 12749]),
    (
        "unbelievably_long-words 2023",
        [3898, 7674, 1669, 2570, 5324, 38, 1149, 14, 1619, 15801, 1512],
    ),
    ("中文 text\twith\ttabs", [749, 864, 2796, 1010, 20631, 1018]),
    ("I\u2019m painting", [48, 524, 52, 3172]),
]


@pytest.mark.parametrize(("text", "expected"), TOKENIZERS_REFERENCE)
def test_wordpiece_matches_the_reference_tokenizer(text: str, expected: list[int]) -> None:
    tokenizer = WordPieceTokenizer.from_file(MODELS_DIR / DEFAULT_MODEL / "tokenizer.json")
    assert tokenizer.encode(text) == expected


def test_wordpiece_marks_unsplittable_words_unknown() -> None:
    tokenizer = WordPieceTokenizer({"[UNK]": 0, "play": 1, "##ing": 2})
    assert tokenizer.encode("playing PLAY xyz") == [1, 2, 1, 0]


def test_read_safetensors_reads_int8_and_float16(tmp_path: Path) -> None:
    import json
    import struct

    first = np.arange(6, dtype=np.int8).reshape(2, 3)
    second = np.array([0.5, -2.0], dtype=np.float16)
    header = {
        "__metadata__": {"format": "np"},
        "a": {"dtype": "I8", "shape": [2, 3], "data_offsets": [0, 6]},
        "b": {"dtype": "F16", "shape": [2], "data_offsets": [6, 10]},
    }
    encoded = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + first.tobytes() + second.tobytes())
    tensors = read_safetensors(path)
    assert np.array_equal(tensors["a"], first)
    assert np.array_equal(tensors["b"], second)

"""The benchmark's int8 ONNX MiniLM embedder: its inputs and pooling, on a stand-in session.

The model itself (23 MB, onnxruntime) lives in the benchmark's own venv
(bench/requirements-peers.txt), not in the project's; what is checked here is troth's part:
the ids it feeds (``[CLS]`` text ``[SEP]``, truncated), the masks, and the mean pooling
over real tokens only, so a text's vector does not depend on what it is batched with.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from bench.peers.onnx_minilm import OnnxMiniLMEmbedder

VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "dog": 4, "likes": 5, "ball": 6, "##s": 7}


class StandInSession:
    """Returns, per token, a hidden state that is a function of its id and position only
    (as a model's output is a function of its inputs), and records what it was fed."""

    def __init__(self) -> None:
        self.feeds: list[dict[str, np.ndarray]] = []

    def run(self, _outputs: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.feeds.append(feeds)
        ids = feeds["input_ids"].astype(np.float32)
        hidden = np.zeros((*ids.shape, 384), dtype=np.float32)
        hidden[..., 0] = ids
        hidden[..., 1] = 1.0
        # Padding positions get a large value: pooling must ignore them.
        hidden[feeds["attention_mask"] == 0] = 1000.0
        return [hidden]


def test_ids_frame_the_text_and_truncate() -> None:
    embedder = OnnxMiniLMEmbedder(StandInSession(), VOCAB, max_tokens=4)
    assert embedder.ids("dog likes") == [2, 4, 5, 3]
    assert embedder.ids("dog likes balls") == [2, 4, 5, 3]  # cut to 4 with the markers
    assert embedder.ids("cat") == [2, 1, 3]


def test_vectors_are_unit_and_independent_of_the_batch() -> None:
    session = StandInSession()
    embedder = OnnxMiniLMEmbedder(session, VOCAB, batch=8)
    together = embedder.embed(["dog", "dog likes balls dog likes balls"])
    alone = embedder.embed(["dog"])
    assert together.dtype == np.float32
    assert together.shape == (2, 384)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)
    assert np.allclose(together[0], alone[0], atol=1e-6)
    # Mean over [CLS] dog [SEP] = ids (2, 4, 3): component 0 is 3, component 1 is 1.
    expected = np.zeros(384, dtype=np.float32)
    expected[:2] = (3.0, 1.0)
    assert np.allclose(alone[0], expected / np.linalg.norm(expected), atol=1e-6)
    batched = session.feeds[0]
    # "balls" is ball ##s, so the long text is 2 + 8 ids wide; the short row is masked after 3.
    assert batched["attention_mask"].tolist()[0] == [1, 1, 1] + [0] * 7
    assert not batched["token_type_ids"].any()


def test_order_is_kept_when_batches_are_sorted_by_length() -> None:
    embedder = OnnxMiniLMEmbedder(StandInSession(), VOCAB, batch=1)
    texts = ["dog likes balls", "dog", "ball"]
    vectors = embedder.embed(texts)
    for text, vector in zip(texts, vectors, strict=True):
        assert np.allclose(vector, embedder.embed([text])[0])
    assert embedder.embed([]).shape == (0, 384)

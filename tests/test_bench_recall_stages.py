"""bench.recall_stages: each stage of a recall is timed where the recall makes the call, and
the store is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.recall_stages import STORE_CALLS, main, measure
from bench.scale import OWNER, Corpus, ingest, sqlite_store

from troth.config import load_policy
from troth.embedding import StaticEmbedder
from troth.service.memory import Memory


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_run_times_every_store_call_and_both_searches(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "stages.json"
    assert main(["--backend", backend, "--size", "300", "--rounds", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["backend"] == backend
    assert result["memories"] == 300
    # bench.scale asks 200 questions of any corpus of 200 memories or more: one round.
    assert result["recalls"] == 200
    assert set(result["store_calls_p50_ms"]) == set(STORE_CALLS)
    assert set(result["alone_p50_ms"]) == {"lexical", "vector"}
    calls = result["store_calls_p50_ms"]
    # A recall waits for its searches and its rows: its median is above theirs, and what
    # is left for the ranking is a positive part of it.
    assert result["recall_p50_ms"] > calls["candidates"] > 0
    assert 0 < result["ranking_in_python_p50_ms"] < result["recall_p50_ms"]
    printed = capsys.readouterr().out
    assert "| store.candidates |" in printed
    assert "| vector search alone |" in printed


def test_the_timing_wrappers_are_taken_off_the_store() -> None:
    embedder = StaticEmbedder.default()
    with sqlite_store() as (store, _size, _label):
        memory = Memory(store, policy=load_policy(None), principal=OWNER, embedder=embedder)
        corpus = Corpus()
        samples, *_ = ingest(memory, corpus, 120, lambda *_: None)
        measure(store, [corpus.question(t) for t in samples][:60], 1, embedder)
        # No instance attribute is left shadowing the class's methods.
        assert not set(STORE_CALLS) & set(vars(store))


def test_bad_arguments_are_refused_with_a_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--size", "0"])
    assert "at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--shared-buffers", "2GB"])
    assert "a setting of the PostgreSQL server" in capsys.readouterr().err

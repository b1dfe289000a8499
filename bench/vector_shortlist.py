"""The vector stage alone: the sign-code shortlist against the exact scan, cost and overlap.

Usage::

    PYTHONPATH=$PWD/src .venv/bin/python -m bench.vector_shortlist --sizes 50000,100000
    PYTHONPATH=$PWD/src .venv/bin/python -m bench.vector_shortlist --sizes 1000000 --factor 32

Embeds the first N memories of the ``bench.scale`` corpus with the packaged model (~25 s
per 100k), and 100 questions about some of them, then searches an in-process copy of the
vectors for 532 neighbours (a recall's 500 and its margin) both ways. Per size: the
median thread CPU of a search, exact and shortlisted, and how much of the exact top 500
and top 10 the shortlist's keeps (mean, 10th percentile, minimum). ``--factor`` replaces
``signcodes.SHORTLIST_FACTOR`` for the run. docs/retrieval.md, "The vector stage at scale".
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence

import numpy as np

from bench.scale import Corpus
from troth.embedding import StaticEmbedder
from troth.storage import signcodes
from troth.storage.vectors import CachedVectors, VectorCache

_K = 532
_NEVER = 10**12


def _searches(
    cache: VectorCache, cached: CachedVectors, questions: np.ndarray
) -> tuple[list[list[int]], float]:
    found, cpu = [], []
    for query in questions:
        started = time.thread_time()
        hits, _ = cache.nearest(cached, query, _K)
        cpu.append(time.thread_time() - started)
        found.append([rid for rid, _ in hits])
    return found, statistics.median(cpu) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    """Print one line per size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--factor", type=int, default=signcodes.SHORTLIST_FACTOR)
    args = parser.parse_args(argv)
    signcodes.SHORTLIST_FACTOR = args.factor
    sizes = sorted(int(s.replace("_", "")) for s in args.sizes.split(",") if s)
    corpus = Corpus()
    texts = [item["text"] for item in corpus.items(sizes[-1])]
    embedder = StaticEmbedder.default()
    step = 5000
    matrix = np.concatenate(
        [embedder.embed(texts[at : at + step]) for at in range(0, len(texts), step)]
    ).astype(np.float32)
    for size in sizes:
        asked = np.random.default_rng(7).integers(0, size, 100)
        questions = embedder.embed([corpus.question(texts[i]) for i in asked]).astype(np.float32)
        cache = VectorCache(max_bytes=8 << 30, approximate_from=_NEVER)
        rids = np.arange(1, size + 1, dtype=np.int64)
        cached = cache.load_arrays("bench", 1, rids, matrix[:size].copy())
        exact, exact_ms = _searches(cache, cached, questions)
        cache.approximate_from = 0
        cache.nearest(cached, questions[0], _K)  # starts the codes' build
        cache.join_builds()
        found, shortlist_ms = _searches(cache, cached, questions)
        top = [len(set(f[:500]) & set(e[:500])) / 500 for f, e in zip(found, exact, strict=True)]
        ten = [len(set(f[:10]) & set(e[:10])) / 10 for f, e in zip(found, exact, strict=True)]
        print(
            f"{size:,} vectors, shortlist {signcodes.shortlist_size(_K, size):,} rows:"
            f" CPU exact {exact_ms:.2f} ms, shortlist {shortlist_ms:.2f} ms;"
            f" of the exact top 500 {np.mean(top):.3f} (10th pct {np.percentile(top, 10):.3f},"
            f" min {min(top):.3f}), of the top 10 {np.mean(ten):.3f};"
            f" load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

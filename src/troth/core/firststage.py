"""Recall's first stage: which of the indexes' candidates the full ranking reads and ranks.

The lexical and vector indexes each return up to 500 candidates (``candidate_limits``),
~600 distinct memories. Reading every one's ranking fields and ranking them in Python
cost ~25 ms of CPU at 100k memories, most of a recall. Most of them cannot reach the top:
:func:`shortlist` orders them by the fused score of step 1 of the ranking
(:func:`troth.core.ranking.fuse_scores`, computed from the index scores alone), keeps the best
:data:`SHORTLIST`, and adds back what keeps the full ranking's arithmetic the same for
them:

* the neighbours (``seq`` at the ranking's ``neighbour_offsets``) found by either index of the best
  :data:`EXPANDED`, so the neighbour lift still finds the turn that answers next to the
  turn that matches (the ranking's largest step; docs/retrieval.md, "First stage");
* the candidates holding the best lexical score and the best and weakest cosine, so the
  fusion normalises every kept candidate exactly as it would among all of them.

Pure standard library; nothing here weighs anything the ranking does not.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Mapping
from typing import Any

from troth.core.ranking import DEFAULT_RANKING, RankingConfig, fuse_scores, neighbour_offsets

__all__ = ["EXPANDED", "SHORTLIST", "shortlist"]

SHORTLIST = 150
"""How many candidates, best fused score first, the full ranking reads (and their
neighbours): on LoCoMo dev, R@5/R@10 within 0.005 of ranking all (docs/retrieval.md)."""
EXPANDED = 50
"""How many of the best bring their found neighbours along."""


def shortlist(
    found: Mapping[str, Mapping[str, Any]],
    seqs: Mapping[str, int],
    *,
    keep: int = SHORTLIST,
    expand: int = EXPANDED,
    config: RankingConfig = DEFAULT_RANKING,
) -> list[str]:
    """The ids of ``found`` (id -> its ``lexical_*``/``vector_*`` scores) to rank, in
    ``found``'s order; ``seqs`` gives the position of those an index placed. All of them
    when there are no more than ``keep``."""
    if len(found) <= keep:
        return list(found)
    ids = list(found)
    scores = list(found.values())
    # The fusion's inputs, and the extremes it normalises by, read with comprehensions and
    # C builtins (max/min over (score, id) pairs: the same pair a loop keeping the largest
    # finds, since no two pairs are equal): ~950 found memories a recall.
    lexical_scores: list[float | None] = [s.get("lexical_score") for s in scores]
    vector_scores: list[float | None] = [s.get("vector_score") for s in scores]
    lexical = [(v, m) for v, m in zip(lexical_scores, ids, strict=True) if v is not None]
    vector = [(v, m) for v, m in zip(vector_scores, ids, strict=True) if v is not None]
    extremes = [max(lexical)] if lexical else []
    if vector:
        extremes += [max(vector), min(vector)]
    ranks: dict[str, list[int | None]] = {}
    if config.fusion == "rrf":  # the only fusion that reads the ranks
        ranks = {
            "lexical_ranks": [s.get("lexical_rank") for s in scores],
            "vector_ranks": [s.get("vector_rank") for s in scores],
        }
    # The fusion over the index scores as they are: no Candidate per found memory.
    base = fuse_scores(ids, lexical_scores, vector_scores, config, **ranks)
    # Best first, ties by id (tuples compare in C): only the head is needed, so a heap.
    best = heapq.nsmallest(
        max(keep, expand), zip(map(operator.neg, base.values()), base, strict=True)
    )
    order = [memory_id for _, memory_id in best]
    chosen = set(order[:keep])
    chosen.update(memory_id for _, memory_id in extremes)
    # The neighbours of the best ``expand``: only the positions they ask for are looked up.
    offsets = neighbour_offsets(config)
    wanted: set[int] = set()
    for memory_id in order[:expand]:
        seq = seqs.get(memory_id)
        if seq is not None:
            wanted.update(seq + offset for offset in offsets)
    if wanted:
        chosen.update(memory_id for memory_id, position in seqs.items() if position in wanted)
    return [memory_id for memory_id in ids if memory_id in chosen]

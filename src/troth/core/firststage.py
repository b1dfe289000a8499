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
    lexical_scores: list[float | None] = []
    vector_scores: list[float | None] = []
    lexical_best: tuple[float, str] | None = None
    vector_best: tuple[float, str] | None = None
    vector_weakest: tuple[float, str] | None = None
    # One pass over the found scores: the fusion's inputs and the extremes it normalises by.
    for memory_id, scores in found.items():
        lexical = scores.get("lexical_score")
        vector = scores.get("vector_score")
        lexical_scores.append(lexical)
        vector_scores.append(vector)
        if lexical is not None and (lexical_best is None or (lexical, memory_id) > lexical_best):
            lexical_best = (lexical, memory_id)
        if vector is not None:
            if vector_best is None or (vector, memory_id) > vector_best:
                vector_best = (vector, memory_id)
            if vector_weakest is None or (vector, memory_id) < vector_weakest:
                vector_weakest = (vector, memory_id)
    ranks: dict[str, list[int | None]] = {}
    if config.fusion == "rrf":  # the only fusion that reads the ranks
        ranks = {
            "lexical_ranks": [s.get("lexical_rank") for s in found.values()],
            "vector_ranks": [s.get("vector_rank") for s in found.values()],
        }
    # The fusion over the index scores as they are: no Candidate per found memory.
    base = fuse_scores(ids, lexical_scores, vector_scores, config, **ranks)
    # Best first, ties by id (tuples compare in C): only the head is needed, so a heap.
    best = heapq.nsmallest(max(keep, expand), ((-score, m) for m, score in base.items()))
    order = [memory_id for _, memory_id in best]
    chosen = set(order[:keep])
    for extreme in (lexical_best, vector_best, vector_weakest):
        if extreme is not None:
            chosen.add(extreme[1])
    at: dict[int, list[str]] = {}
    for memory_id, position in seqs.items():
        at.setdefault(position, []).append(memory_id)
    offsets = neighbour_offsets(config)
    for memory_id in order[:expand]:
        seq = seqs.get(memory_id)
        if seq is None:
            continue
        for offset in offsets:
            chosen.update(at.get(seq + offset, ()))
    return [memory_id for memory_id in ids if memory_id in chosen]

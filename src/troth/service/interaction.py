"""Late interaction: re-rank recall's best candidates by how well their words match the question's.

:func:`troth.core.ranking.rank` scores a memory by its lexical score (exact and stemmed
words) and the cosine of two whole-text vectors. Neither sees that "courageous" is close
to "brave" *and* that the memory says little else: the whole-text vector of a long turn
is diluted by everything else it says. Late interaction (as in ColBERT, here over word
vectors) scores each question word by its most similar word of the memory and averages:

    maxsim(q, m) = mean over the question's content words w of max over m's words v of cos(w, v)

A memory holding every content word of the question scores 1 (a word is most similar to
itself); one that paraphrases them scores close to it; one about something else scores
low. The :func:`rerank` step adds ``weight * maxsim / best maxsim among the top`` to the
scores of the first ``top`` hits (an ``interaction`` adjustment in the hit's explanation)
and re-sorts them; hits below ``top`` are not touched, and since the lift is never
negative no hit leaves the head.

Word vectors come from the recall's own embedder, one word at a time (for the shipped
static model: the mean of the word's WordPiece rows, the same rows its text vectors are
built from), cached per process (:class:`WordVectors`). Nothing here knows any
conversation: the words are the question's and the memory's, less the general stopwords.
docs/retrieval.md ("Late interaction") has the measurements.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from troth.core.query import content_terms
from troth.core.ranking import RankedHit, lift_head
from troth.embedding import Embedder

__all__ = [
    "DEFAULT_INTERACTION",
    "Interaction",
    "WordReading",
    "WordVectors",
    "forget_words",
    "rerank",
    "word_vectors",
]

FloatMatrix = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Interaction:
    """How the late-interaction step re-ranks: the first ``top`` hits, lifted by up to
    ``weight`` (the fused scores it adds to are ~0.5-2). Tuned on three of the five dev
    conversations and checked on the other two (docs/retrieval.md)."""

    top: int = 30
    weight: float = 0.3


DEFAULT_INTERACTION = Interaction()


#: The words of a text that carry its topic: tokens less the general stopwords, repeats
#: dropped, in order (the query's content terms, read the same way for a memory).
content_words = content_terms


class WordVectors:
    """Unit vectors of single words from an embedder, computed once and kept.

    ``max_words`` bounds the memory (128 floats each for the shipped model: 50,000 words
    are ~26 MB); when full, the cache starts again empty (a recall needs a few hundred
    words, so a refill costs one batch). Safe to share between threads.

    The words are memories' words, so the cache is a copy of their text: :meth:`forget`
    empties it when an erasure commits in this process (:func:`forget_words`), and a recall
    that read its texts before then keeps nothing it computes (:meth:`reading` pins the
    epoch). An erasure another process commits moves the store's erasure epoch
    (``Store.erasure_epoch``); a recall hands :meth:`reading` the number it read, and a
    cache that last saw another number from that store empties first.
    """

    def __init__(self, embedder: Embedder, *, max_words: int = 50_000) -> None:
        """Cache the word vectors of ``embedder``."""
        self._embedder = embedder
        self._max_words = max_words
        self._vectors: dict[str, FloatMatrix] = {}
        self._epoch = 0
        self._lock = threading.Lock()
        # The erasure epoch each store read through this cache was last seen at (weakly:
        # a closed store's entry goes with it).
        self._seen: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()

    def __len__(self) -> int:
        """How many words are cached."""
        return len(self._vectors)

    def __contains__(self, word: object) -> bool:
        """Whether ``word`` is cached."""
        return word in self._vectors

    def forget(self) -> None:
        """Drop every cached word; what a recall begun before computes is not kept."""
        with self._lock:
            self._vectors = {}
            self._epoch += 1

    def reading(self, store: object | None = None, erasures: int | None = None) -> WordReading:
        """This cache as a recall about to read memory texts sees it (see :meth:`forget`).

        ``store`` and ``erasures``, its erasure epoch read before any text: if the cache
        last saw another epoch of that store (or never saw the store), an erasure may have
        committed elsewhere since, and every word it holds is dropped first."""
        if store is not None and erasures is not None:
            with self._lock:
                if self._seen.get(store) != erasures:
                    # Even when empty: a recall pinned before must not keep its words now.
                    self._seen[store] = erasures
                    self._vectors = {}
                    self._epoch += 1
        return WordReading(self, self._epoch)

    def matrix(self, words: Sequence[str], *, epoch: int | None = None) -> FloatMatrix:
        """One unit row per word (a zero row for a word the model cannot read).

        With ``epoch`` (:meth:`reading`'s), new words are kept only if no erasure has
        committed since: the texts they came from may be the erased ones."""
        # This dict is only ever added to; a reset replaces it, so it stays whole for us.
        known = self._vectors
        missing = [w for w in dict.fromkeys(words) if w not in known]
        fresh: dict[str, FloatMatrix] = {}
        if missing:
            # One batch for the new words; the embedder's rows are already L2-normalised.
            rows = np.asarray(self._embedder.embed(missing), dtype=np.float32)
            fresh = dict(zip(missing, rows, strict=True))
            with self._lock:
                if epoch is None or epoch == self._epoch:  # else: served, not kept
                    if len(self._vectors) + len(fresh) > self._max_words:
                        self._vectors = {}
                    if len(fresh) <= self._max_words:  # else: served, not kept
                        self._vectors.update(fresh)
        if not words:
            return np.zeros((0, self._embedder.dim), dtype=np.float32)
        # np.array copies the rows in C (np.stack checks and reshapes each row in Python
        # first: ~300 words a recall); the same float32 rows either way.
        return np.array([fresh[w] if w in fresh else known[w] for w in words], dtype=np.float32)


@dataclass(frozen=True, slots=True)
class WordReading:
    """A :class:`WordVectors` pinned at an epoch: one recall's view of the cache."""

    cache: WordVectors
    epoch: int

    def matrix(self, words: Sequence[str]) -> FloatMatrix:
        """:meth:`WordVectors.matrix` at this epoch."""
        return self.cache.matrix(words, epoch=self.epoch)


# One cache per model, by its identity: the embedder's class, name and dimension. The name
# is "a stable identifier of the model" (``Embedder.name``; the store keeps it beside the
# vectors to detect a change), so two embedders alike embed a word alike and share one
# cache. Keyed so, not by ``id(embedder)``, an embedder made per facade (or per test) adds
# no cache that is never released, and no dead object's id can be taken by another's.
_SHARED: dict[tuple[type, str, int], WordVectors] = {}
_SHARED_LOCK = threading.Lock()


def word_vectors(embedder: Embedder) -> WordVectors:
    """The process-wide :class:`WordVectors` of ``embedder``'s model (one per model)."""
    key = (type(embedder), embedder.name, embedder.dim)
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = WordVectors(embedder)
        return found


def forget_words() -> None:
    """Empty every process-wide word cache: called when an erasure commits, since the
    cached words are memories' words (the erased text's among them)."""
    with _SHARED_LOCK:
        caches = list(_SHARED.values())
    for cache in caches:
        cache.forget()


def rerank(
    query: str,
    hits: Sequence[RankedHit],
    texts: Mapping[str, str],
    vectors: WordVectors | WordReading,
    config: Interaction = DEFAULT_INTERACTION,
) -> list[RankedHit]:
    """Re-rank the first ``config.top`` hits by late interaction; the rest are unchanged.

    ``texts`` maps a hit's memory id to its text. Ties keep the memory-id order of
    :func:`troth.core.ranking.rank`.
    """
    if config.weight <= 0 or config.top < 2 or len(hits) < 2:
        return list(hits)
    asked = content_words(query)
    if not asked:
        return list(hits)
    head, tail = list(hits[: config.top]), list(hits[config.top :])
    per_memory = [content_words(texts.get(hit.memory_id, "")) for hit in head]
    every = list(dict.fromkeys(asked + [w for words in per_memory for w in words]))
    row_of = {word: i for i, word in enumerate(every)}
    # One product of the question's words with every word of the head, then the best per
    # question word within each memory's columns (maxsim of each memory, all at once).
    matrix = vectors.matrix(every)
    similarity = matrix[: len(asked)] @ matrix.T
    scores = [0.0] * len(head)
    columns = [row_of[w] for words in per_memory for w in words]
    holding = [i for i, words in enumerate(per_memory) if words]
    if columns:
        starts = np.cumsum([0] + [len(per_memory[i]) for i in holding[:-1]])
        best_each = np.maximum.reduceat(similarity[:, columns], starts, axis=1)
        for i, value in zip(holding, best_each.mean(axis=0).tolist(), strict=True):
            scores[i] = value
    return lift_head(head, scores, config.weight, "interaction") + tail

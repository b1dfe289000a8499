"""Which words of a lexical query FTS5's bm25 gives no weight: those in half the rows or more.

FTS5's ``bm25()`` weighs a term by ``idf = log((N - n + 0.5) / (n + 0.5))`` over the N rows
of the index, n of which hold the term, and clamps an idf of 0 or less to 1e-6
(``fts5_aux.c``): a word in half the rows or more changes no score. It still costs: FTS5
scores every row that matches any term, so "note" in every one of 16,000 served memories
made each search score 16,000 rows (docs/benchmarks.md, "Issue 19"). :class:`CommonTerms`
finds such terms, and the lexical search leaves them out while another term remains:
the order of the rows that hold the other terms is unchanged (each score moves by at
most 1e-6 times its term-frequency factor), and the rows that hold only the common word,
which scored ~0, are no longer fetched.

A term's row count is counted once (in C, no scoring: up to N/2 + 1 rows) and cached
until the index has grown or shrunk by an eighth since. N is the largest projection rid,
never below the index's row count, so a term is only ever left out when its idf is
clamped. The search reads N in its own statement (:attr:`CommonTerms.total` keeps the
last one read); terms are chosen with the N the previous search read, and the search is
run again with the terms chosen at its own N in the rare case they differ. So after a
store's first search (which reads N in a statement of its own: there is no previous one)
no statement of its own reads N, and the terms are those of an N read with a search, as
sound as reading N just before it (which is what it did).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from troth.core.query import Term, drop_common_terms

__all__ = ["CommonTerms"]

# Recheck a cached term once the index size moved by more than this share.
_DRIFT = 8
_MAX_CACHED = 4096


class CommonTerms:
    """A per-store cache of which lexical terms are in at least half the index's rows."""

    #: The statement a search reads N with (as a column of its own statement).
    TOTAL = "SELECT coalesce(max(rid), 0) FROM memories"

    def __init__(self) -> None:
        self._known: dict[tuple[str, bool], tuple[int, bool]] = {}
        self._lock = threading.Lock()
        #: The N the last search read (None before the first).
        self.total: int | None = None

    def scored(
        self,
        db: Any,
        terms: Sequence[Term],
        match: Callable[[Sequence[Term]], str],
        total: int | None = None,
    ) -> list[Term]:
        """``terms`` without those bm25 gives no weight at ``total`` rows (read here when
        None), unless every one is such a term (the rule of ``core.query.drop_common_terms``)."""
        if len(terms) < 2:
            return list(terms)
        if total is None:
            total = int(db.execute(self.TOTAL).fetchone()[0])
        if total < 64:  # small ledgers: nothing to save
            return list(terms)
        common = {term for term in terms if self._common(db, term, total, match)}
        return drop_common_terms(terms, common)

    def _common(
        self, db: Any, term: Term, total: int, match: Callable[[Sequence[Term]], str]
    ) -> bool:
        key = (term.text, term.prefix)
        with self._lock:
            cached = self._known.get(key)
        if cached is not None and abs(cached[0] - total) * _DRIFT <= cached[0]:
            return cached[1]
        half = total // 2
        held = int(
            db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)",
                (match([term]), half + 1),
            ).fetchone()[0]
        )
        common = held > half
        with self._lock:
            if len(self._known) >= _MAX_CACHED:
                self._known.clear()
            self._known[key] = (total, common)
        return common

"""Recall: the query value object, the filters, and hits with the reasons they ranked.

:func:`recall` is the whole read path (docs/retrieval.md): the store gives candidates
from its lexical index and its vector index and the ranking fields of each
(:class:`~troth.storage.base.RecallRow`); the filters below drop what may not be
returned; :func:`troth.core.ranking.rank` orders the rest; only the top ``limit``
memories are read in full.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from troth.core.firststage import shortlist
from troth.core.query import (
    QueryAnalysis,
    Term,
    analyze_query,
    candidate_limits,
    lexical_terms,
)
from troth.core.ranking import (
    DEFAULT_FLOOR,
    DEFAULT_RANKING,
    Candidate,
    RankedHit,
    assess_relevance,
    cap_per_writer,
    rank,
    weaker_after_stronger,
)
from troth.core.records import MemoryRecord
from troth.service.conflicts import conflicts_of, contradicted
from troth.service.interaction import DEFAULT_INTERACTION, WordReading, rerank, word_vectors
from troth.storage.base import Hit, MemoryFilter, RecallRow

if TYPE_CHECKING:
    from troth.embedding import Embedder
    from troth.storage.base import Store

_WORD = re.compile(r"\w+", re.UNICODE)
# The floor judges the first ten hits whatever the limit (docs/retrieval.md).
_FLOOR_TOP = 10


@dataclass(frozen=True, slots=True)
class Query:
    """What to recall, for whom, and within which bounds.

    ``valid_on`` (a date or time) keeps memories valid then (``valid_from`` ≤ D ≤
    ``valid_until``, open ends unbounded). ``as_of`` (a UTC time) answers as the ledger
    stood then: memories created by then and active and retrievable then by their audit
    trail, among those whose text is still held (erased text stays erased). ``now``
    (default: the facade's clock) decides expiry, staleness and recency. ``indexes``
    chooses the candidate sources (``lexical``, ``vector``; both by default).
    ``min_relevance`` is the relevance floor (docs/retrieval.md, "Nothing when nothing
    fits"): the share of the question's content words the best of the top ten hits must
    hold, else (unless a candidate's cosine reaches the floor's paraphrase level) the
    recall returns no hit; a question naming something no found memory mentions returns
    none either. ``None`` turns the floor off (the top ``limit`` are returned, however weak).
    ``max_per_writer`` caps how many hits from one writer other than the owner come before
    everyone else's (:func:`troth.core.ranking.cap_per_writer`; ``None``: no cap).
    ``interaction`` re-ranks the best candidates by late interaction over word vectors
    (:mod:`troth.service.interaction`; needs an embedder; ``False`` turns it off).
    """

    text: str
    owner: str | None = None
    limit: int = 10
    kinds: tuple[str, ...] | None = None
    scope: str | None = None
    partition: str | None = None
    tags: tuple[str, ...] = ()
    include_sensitive: bool = False
    include_stale: bool = True
    include_archived: bool = False
    valid_on: str | None = None
    as_of: str | None = None
    now: str | None = None
    indexes: tuple[str, ...] = ("lexical", "vector")
    min_relevance: float | None = DEFAULT_FLOOR.min_coverage
    max_per_writer: int | None = DEFAULT_RANKING.max_per_writer
    interaction: bool = True


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled memory, its score and why it ranked where it did."""

    memory: MemoryRecord
    score: float
    why: dict[str, Any] = field(default_factory=dict)
    conflicts: tuple[str, ...] = ()
    """The memories this one contradicts or is contradicted by (``why["conflict"]`` says
    which side is the weaker): served marked, never as equals (service.conflicts)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "id": self.memory.id,
            "score": round(self.score, 6),
            "content": self.memory.content,
            "kind": self.memory.kind,
            "channel": self.memory.channel,
            "origin": self.memory.writer,
            "flagged": self.memory.flagged,
            "created_at": self.memory.created_at,
            "why": self.why,
            "conflicts": list(self.conflicts),
        }


def fts_match(text: str) -> tuple[Term, ...] | None:
    """Lexical terms matching any word of ``text`` exactly (``None`` without a word)."""
    words = [w for w in _WORD.findall(text.lower()) if w]
    if not words:
        return None
    return tuple(Term(w) for w in dict.fromkeys(words))


def memory_text(memory: MemoryRecord) -> str:
    """The text a memory is indexed and embedded by: its title and content."""
    return " ".join(part for part in (memory.title, memory.content) if part)


def _parse(value: str) -> datetime:
    text = value.replace("Z", "+00:00")
    if len(text) == 10:
        text += "T00:00:00+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def is_expired(row: RecallRow, now: datetime) -> bool:
    """Retention has run out (``expires``, a ttl ``expires_at`` or ``decay``), swept or not."""
    if row.expires is not None and _parse(row.expires) <= now:
        return True
    if row.ttl_policy == "expires_at" and row.ttl_expires_at is not None:
        return _parse(row.ttl_expires_at) <= now
    if row.ttl_policy == "decay" and row.ttl_decay_days is not None:
        return _parse(row.updated_at) + timedelta(days=row.ttl_decay_days) <= now
    return False


def is_stale(row: RecallRow, now: datetime) -> bool:
    """Lifecycle ``stale``, or ``valid_until`` already past: down-ranked, not excluded."""
    if row.lifecycle == "stale":
        return True
    return row.valid_until is not None and _end_of(row.valid_until) < now


def _end_of(value: str) -> datetime:
    # A date-only bound covers its whole day.
    moment = _parse(value)
    return moment + timedelta(days=1) - timedelta(microseconds=1) if len(value) == 10 else moment


def is_valid_on(row: RecallRow, moment: str) -> bool:
    """Whether the memory's validity interval contains ``moment`` (a date or a time)."""
    start, end = _parse(moment), _end_of(moment)
    if row.valid_from is not None and _parse(row.valid_from) > end:
        return False
    return row.valid_until is None or _end_of(row.valid_until) >= start


_LEAVES = frozenset(
    ["rejected", "expired", "forgotten", "superseded", "retrieval_removed", "no_store"]
)


def was_retrievable_at(memory: MemoryRecord, moment: datetime) -> bool:
    """Whether a memory's audit trail says it was active and retrievable at ``moment``.

    Created by then (an automatic write is active at once; a proposal from its approval),
    and not yet rejected, expired, forgotten, superseded or removed from retrieval.
    """
    if _parse(memory.created_at) > moment:
        return False
    # The trail says when it became active: an automatic write or an import is approved in
    # its creating entry; a proposal (however the policy is set) when a person approves it.
    active = False
    for item in memory.audit:
        if _parse(item.at) > moment:
            break
        if item.action == "approved":
            active = True
        elif item.action in _LEAVES:
            active = False
    return active


def recall(
    store: Store,
    embedder: Embedder | None,
    owner: str,
    query: Query,
    *,
    text: str,
    now: datetime,
    speakers_from: Collection[str],
) -> list[RecallHit]:
    """Rank an owner's memories for a query (validated by the facade); best first.

    ``speakers_from``: the channels whose declared speaker (``extra["x_speaker"]``) the
    ranking's speaker step may lift (the policy's most trusted: ``Policy.most_trusted``).
    The speaker is the writer's word; through a weaker channel it is a claim nobody vouched
    for, and the lift would let it outrank what the person recorded that speaker saying
    (docs/retrieval.md, "Planted memories")."""
    flt = MemoryFilter(
        retrievable_only=query.as_of is None,
        # As of T: hidden memories too (their text is held); forgotten ones have none.
        statuses=None if query.as_of is None else ("active",),
        kinds=query.kinds,
        scope=query.scope,
        partition=query.partition,
        tags=query.tags,
        include_sensitive=query.include_sensitive,
    )
    limits = candidate_limits(query.limit)
    # Pinned before any text is read: words of a text erased meanwhile are not kept, and
    # a cache that saw another erasure epoch (another process erased since) empties first.
    vectors = None
    if embedder is not None and query.interaction:
        vectors = word_vectors(embedder).reading(store, store.erasure_epoch())
    terms = lexical_terms(text) if "lexical" in query.indexes else ()
    vector = None
    if embedder is not None and "vector" in query.indexes:
        vector = embedder.embed([text])[0]
        if not vector.any():
            vector = None
    # Both searches in one call: a server backend runs them at once (docs/retrieval.md).
    searched = store.candidates(owner, terms, vector, limits, flt)
    found, seqs = _found(searched.lexical, searched.vector)
    if not found:
        return []
    # The first stage (core.firststage): the full ranking reads and ranks the best
    # candidates by fused score and their neighbours; all of them when the filters below
    # leave too few of those.
    chosen = shortlist(found, seqs)
    rows = store.recall_rows(owner, chosen)
    kept = _admitted(query, found, chosen, rows, now)
    if len(kept) < max(query.limit, _FLOOR_TOP) and len(chosen) < len(found):
        rows |= store.recall_rows(owner, [m for m in found if m not in rows])
        kept = _admitted(query, found, list(found), rows, now)
    held: dict[str, MemoryRecord] = {}
    if query.as_of is not None:  # which of them were retrievable then: their audit trails
        moment = _parse(query.as_of)
        held = store.get_many(owner, [row.memory_id for row, _, _ in kept])
        kept = [
            c
            for c in kept
            if c[0].memory_id in held and was_retrievable_at(held[c[0].memory_id], moment)
        ]
    candidates = [_candidate(row, scores, stale, speakers_from) for row, scores, stale in kept]
    analysis = analyze_query(text)
    ranked = _ranked(analysis, candidates, now, max(query.limit, _FLOOR_TOP), vectors)
    relevance = assess_relevance(analysis, candidates, ranked, top=_FLOOR_TOP)
    floor = query.min_relevance
    if floor is not None and not relevance.fits(replace(DEFAULT_FLOOR, min_coverage=floor)):
        return []
    writers = {row.memory_id: row.writer for row, _, _ in kept}
    ranked, deferred = _capped(analysis, candidates, ranked, writers, owner, query, now, vectors)
    ranked = ranked[: query.limit]
    missing = [best.memory_id for best in ranked if best.memory_id not in held]
    if missing:
        held |= store.get_many(owner, missing)
    fit = relevance.to_dict()
    capped = {"deferred": "writer cap: more of its writer's memories rank above it"}
    found_hits = [
        RecallHit(
            held[best.memory_id],
            best.score,
            best.explanation.to_dict()
            | {"relevance": fit}
            | (capped if best.memory_id in deferred else {}),
        )
        for best in ranked
        if best.memory_id in held
    ]
    return _with_conflicts(store, owner, found_hits)


def _found(
    lexical: Sequence[Hit], vector: Sequence[Hit]
) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """The found memories (id -> their ``lexical_*``/``vector_*`` ranks and scores), the
    lexical index's first and then the vector index's others, and the positions the
    indexes gave (``Hit.seq``). Built with literals: ~1,000 hits a recall."""
    found: dict[str, dict[str, Any]] = {
        hit.memory_id: {"lexical_rank": hit.rank, "lexical_score": hit.score} for hit in lexical
    }
    seqs = {hit.memory_id: hit.seq for hit in lexical if hit.seq is not None}
    for hit in vector:
        memory_id = hit.memory_id
        scores = found.get(memory_id)
        if scores is None:
            found[memory_id] = {"vector_rank": hit.rank, "vector_score": hit.score}
        else:
            scores["vector_rank"], scores["vector_score"] = hit.rank, hit.score
        if hit.seq is not None:
            seqs[memory_id] = hit.seq
    return found, seqs


def _admitted(
    query: Query,
    found: dict[str, dict[str, Any]],
    chosen: list[str],
    rows: Mapping[str, RecallRow],
    now: datetime,
) -> list[tuple[RecallRow, dict[str, Any], bool]]:
    """The chosen candidates' ranking rows (``rows``, read once) that the query's filters
    admit, with their index scores and whether each is stale."""
    kept: list[tuple[RecallRow, dict[str, Any], bool]] = []
    for memory_id in chosen:
        row = rows.get(memory_id)
        if row is None or not row.text or is_expired(row, now):
            continue
        if row.lifecycle == "archived" and not query.include_archived:
            continue
        if query.valid_on is not None and not is_valid_on(row, query.valid_on):
            continue
        stale = is_stale(row, now)
        if stale and not query.include_stale:
            continue
        kept.append((row, found[memory_id], stale))
    return kept


def _capped(
    analysis: QueryAnalysis,
    candidates: list[Candidate],
    ranked: list[RankedHit],
    writers: dict[str, str | None],
    owner: str,
    query: Query,
    now: datetime,
    vectors: WordReading | None,
) -> tuple[list[RankedHit], frozenset[str]]:
    """The ranked hits with the per-writer cap applied, re-ranked in full when the cap
    left fewer than ``limit`` hits in front (one writer filled the ranked window)."""
    capped, deferred = cap_per_writer(ranked, writers, owner=owner, cap=query.max_per_writer)
    if deferred and len(capped) - len(deferred) < query.limit < len(candidates):
        every = _ranked(analysis, candidates, now, None, vectors)
        capped, deferred = cap_per_writer(every, writers, owner=owner, cap=query.max_per_writer)
    return capped, deferred


def _ranked(
    analysis: QueryAnalysis,
    candidates: list[Candidate],
    now: datetime,
    limit: int | None,
    vectors: WordReading | None,
) -> list[RankedHit]:
    """:func:`rank`, then the late-interaction re-rank of its head when ``vectors``."""
    if vectors is None:
        return rank(analysis, candidates, now=now, limit=limit)
    # The re-rank reads the first DEFAULT_INTERACTION.top hits: rank at least that many.
    depth = None if limit is None else max(limit, DEFAULT_INTERACTION.top)
    ranked = rank(analysis, candidates, now=now, limit=depth)
    texts = {c.memory_id: c.text for c in candidates}
    reranked = rerank(analysis.text, ranked, texts, vectors)
    return reranked if limit is None else reranked[:limit]


def _with_conflicts(store: Store, owner: str, hits: list[RecallHit]) -> list[RecallHit]:
    """Mark the hits that contradict a more trusted memory (and that memory), the weaker one
    after the stronger: recall shows the conflict instead of serving both as equals."""
    wanted = {t for hit in hits for t in contradicted(hit.memory)}
    if not wanted:
        return hits
    targets = store.get_many(owner, sorted(wanted))
    found = conflicts_of([hit.memory for hit in hits], targets)
    if not found:
        return hits
    marked = []
    for hit in hits:
        conflict = found.get(hit.memory.id)
        if conflict is None:
            marked.append(hit)
            continue
        why = hit.why | {"conflict": conflict.to_dict()}
        marked.append(RecallHit(hit.memory, hit.score, why, conflict.with_ids))
    # The weaker side of a conflict never ranks above the stronger memory it contradicts.
    weaker = {i: c.with_ids for i, c in found.items() if c.weaker}
    by_id = {hit.memory.id: hit for hit in marked}
    return [by_id[i] for i in weaker_after_stronger(list(by_id), weaker)]


def _candidate(
    row: RecallRow, scores: dict[str, Any], stale: bool, speakers_from: Collection[str]
) -> Candidate:
    get = scores.get  # positional, the index scores by name: built ~180 times a recall
    return Candidate(
        row.memory_id,
        row.text,
        # The time the memory speaks of when the writer gave one (e.g. a session date).
        row.recorded_at or row.valid_from or row.created_at,
        get("lexical_rank"),
        get("lexical_score"),
        get("vector_rank"),
        get("vector_score"),
        row.session,
        row.seq,
        # A speaker only where the channel vouches for it (recall's ``speakers_from``).
        row.speaker if row.channel in speakers_from else None,
        row.importance,
        row.confidence,
        stale,
    )

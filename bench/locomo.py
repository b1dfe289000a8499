"""LoCoMo retrieval benchmark: recall@k of troth's ranking against baselines.

Protocol: each conversation is indexed on its own, one memory per turn, created at its
session's date. Only the turn text, speaker, session date and image caption
(``blip_caption``) are input; ``observation``, summaries and answers never are. For each
question of categories 1-4, recall@k is the share of its ``evidence`` dia_ids among the
top-k retrieved turns. Malformed evidence ids are repaired when unambiguous
(``D:11:26`` -> ``D11:26``, ``"D8:6; D9:17"`` -> two ids) and dropped otherwise; the
counts are printed.

Usage::

    .venv/bin/python -m bench.locomo                    # main methods
    .venv/bin/python -m bench.locomo --ablation         # + ablation variants
    .venv/bin/python -m bench.locomo --data other.json --json results.json
    .venv/bin/python -m bench.locomo --conversations conv-42,conv-43  # a held-out split
    .venv/bin/python -m bench.locomo --methods troth --backend postgres  # troth on PostgreSQL

Methods are :class:`Method` objects: ``build(conversation)`` returns a searcher whose
``search(question, k)`` gives dia_ids. The harness's own SQLite index (FTS5 + numpy
cosine) calls the pure ranking functions of ``troth.core``; a method backed by
``troth.Memory.recall`` plugs in the same way.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bench.common import markers, percentile, record_block, throwaway_postgres
from troth.core.query import (
    candidate_limits,
    content_terms,
    drop_common_terms,
    fts5_match_expression,
    tokenize,
)
from troth.core.ranking import (
    DEFAULT_FLOOR,
    DEFAULT_RANKING,
    Candidate,
    RankingConfig,
    RelevanceFloor,
    assess_relevance,
    rank,
)
from troth.embedding import Embedder, StaticEmbedder
from troth.service.interaction import DEFAULT_INTERACTION, Interaction, rerank, word_vectors
from troth.storage.rows import CONTEXT_WEIGHT

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo-dev.json"
SCORED_CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Turn:
    """One conversation turn, as indexed: the only fields a method may read."""

    dia_id: str
    session: int
    seq: int
    speaker: str
    text: str
    caption: str | None
    created_at: str

    def document(self, *, with_speaker: bool = True) -> str:
        """The memory text: speaker, words, and the image caption if any."""
        body = f"{self.speaker}: {self.text}" if with_speaker else self.text
        if self.caption:
            body += f" [shares an image: {self.caption}]"
        return body


@dataclass(frozen=True, slots=True)
class Question:
    """A scored question with its repaired evidence ids."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(slots=True)
class Conversation:
    """A conversation's turns and questions."""

    sample_id: str
    turns: list[Turn]
    questions: list[Question]


@dataclass(slots=True)
class EvidenceReport:
    """How many evidence strings were fine, repaired or dropped."""

    valid: int = 0
    repaired: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    questions_without_evidence: int = 0


_SESSION_KEY = re.compile(r"session_(\d+)")


def parse_session_date(value: str) -> str:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` into an ISO timestamp."""
    cleaned = re.sub(r"\s+", " ", value.strip())
    for pattern in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y"):
        try:
            return datetime.strptime(cleaned, pattern).isoformat()
        except ValueError:
            continue
    raise ValueError(f"unrecognised session date {value!r}")


def repair_evidence(raw: str, known: set[str], report: EvidenceReport) -> list[str]:
    """Return the valid dia_ids in one evidence string, repairing unambiguous damage."""
    if raw in known:
        report.valid += 1
        return [raw]
    pieces = [p for p in re.split(r"[;,\s]+", raw) if p]
    repaired = []
    for piece in pieces:
        # "D:11:26" -> "D11:26"; only a purely punctuation change is taken as a repair.
        match = re.fullmatch(r"D\W*(\d+)\W+(\d+)", piece)
        candidate = f"D{int(match.group(1))}:{int(match.group(2))}" if match else None
        if candidate in known:
            repaired.append(candidate)
    if repaired:
        report.repaired.append(f"{raw!r} -> {repaired}")
    else:
        report.dropped.append(raw)
    return repaired


def load_conversations(path: Path) -> tuple[list[Conversation], EvidenceReport]:
    """Load a LoCoMo-format file into conversations of turns and scored questions."""
    report = EvidenceReport()
    conversations = []
    for item in json.loads(path.read_text("utf-8")):
        conv = item["conversation"]
        turns = []
        sessions = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
        for number in sessions:
            created_at = parse_session_date(conv[f"session_{number}_date_time"])
            for seq, turn in enumerate(conv[f"session_{number}"]):
                turns.append(
                    Turn(
                        dia_id=turn["dia_id"],
                        session=number,
                        seq=seq,
                        speaker=turn["speaker"],
                        text=turn["text"],
                        caption=turn.get("blip_caption"),
                        created_at=created_at,
                    )
                )
        known = {t.dia_id for t in turns}
        questions = []
        for qa in item["qa"]:
            if qa["category"] not in SCORED_CATEGORIES:
                continue
            evidence: list[str] = []
            for raw in qa.get("evidence", []):
                for dia_id in repair_evidence(raw, known, report):
                    if dia_id not in evidence:
                        evidence.append(dia_id)
            if not evidence:
                report.questions_without_evidence += 1
                continue
            questions.append(Question(qa["question"], qa["category"], tuple(evidence)))
        conversations.append(Conversation(item["sample_id"], turns, questions))
    return conversations, report


# --------------------------------------------------------------------------- indexes


class Searcher(Protocol):
    """Answers questions about one conversation with ranked dia_ids."""

    def search(self, question: str, k: int) -> list[str]:
        """Return up to ``k`` dia_ids, best first."""
        ...


class Method(Protocol):
    """A retrieval method under test."""

    name: str

    def build(self, conversation: Conversation) -> Searcher:
        """Index one conversation."""
        ...


def bench_policy() -> Any:
    """The default policy less its content detectors for minors and health.

    The benchmark measures retrieval, not consent: with the default policy the turns about
    someone's children (19 of the 2,760 dev turns) are not stored and those about health
    (10) wait for approval, so questions whose evidence they are could never be answered.
    Every other rule of the shipped policy applies.
    """
    from troth.config import default_policy_document, merge
    from troth.core.policy import Policy

    document = merge(default_policy_document(), {"detectors": {"minors": False, "health": False}})
    return Policy.from_document(document)


def _sqlite() -> Any:
    import pysqlite3.dbapi2 as sqlite3  # the stdlib build here cannot load extensions

    return sqlite3.connect(":memory:")


@dataclass(slots=True)
class HarnessIndex:
    """FTS5 + in-memory cosine over one conversation: the store's part, for the bench."""

    turns: list[Turn]
    connection: Any
    vectors: np.ndarray | None
    embedder: Embedder | None
    context_weight: float = 0.0

    @classmethod
    def build(
        cls,
        turns: list[Turn],
        *,
        tokenizer: str,
        embedder: Embedder | None,
        with_speaker: bool = True,
        context_weight: float = 0.0,
    ) -> HarnessIndex:
        """``context_weight`` > 0: each turn's row also holds, in a second column weighted
        so in bm25, the words of the turns before and after it in its session (the store's
        context expansion, ``storage.sqlite.context``)."""
        connection = _sqlite()
        connection.execute(
            f"CREATE VIRTUAL TABLE turns USING fts5(body, context, tokenize='{tokenizer}')"
        )
        documents = [t.document(with_speaker=with_speaker) for t in turns]
        contexts = [
            " ".join(
                documents[j]
                for j in (i - 1, i + 1)
                if context_weight and 0 <= j < len(turns) and turns[j].session == turn.session
            )
            for i, turn in enumerate(turns)
        ]
        connection.executemany(
            "INSERT INTO turns(rowid, body, context) VALUES (?, ?, ?)",
            list(zip(range(len(turns)), documents, contexts, strict=True)),
        )
        vectors = embedder.embed(documents) if embedder else None
        return cls(turns, connection, vectors, embedder, context_weight)

    def lexical(self, match: str | None, limit: int) -> list[tuple[int, float]]:
        """Row indexes and ``-bm25`` scores (higher is better) for an FTS5 expression."""
        if not match:
            return []
        rank = f"bm25(turns, 1.0, {float(self.context_weight)})"
        rows = self.connection.execute(
            f"SELECT rowid, {rank} FROM turns WHERE turns MATCH ? ORDER BY {rank} LIMIT ?",
            (match, limit),
        ).fetchall()
        return [(int(r), -float(s)) for r, s in rows]

    def document_count(self, term: str) -> int:
        """How many turns contain ``term`` (as the lexical index tokenises it)."""
        quoted = '"' + term.replace('"', '""') + '"'
        row = self.connection.execute(
            "SELECT count(*) FROM turns WHERE turns MATCH ?", (quoted,)
        ).fetchone()
        return int(row[0])

    def vector(self, question: str, limit: int) -> list[tuple[int, float]]:
        """Row indexes and cosine similarities, best first."""
        assert self.vectors is not None
        assert self.embedder is not None
        query = self.embedder.embed([question])[0]
        scores = self.vectors @ query
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(int(i), float(scores[i])) for i in order]


# --------------------------------------------------------------------------- methods


@dataclass(slots=True)
class TrothMethod:
    """Hybrid recall: analysed FTS5 query + vector search, fused by ``core.ranking.rank``."""

    name: str
    embedder: Embedder | None
    config: RankingConfig = DEFAULT_RANKING
    use_lexical: bool = True
    use_vector: bool = True
    tokenizer: str = "porter unicode61 remove_diacritics 2"
    prefix_min_length: int = 5
    depth: int | None = None
    common_share: float | None = None
    with_speaker: bool = True
    floor: RelevanceFloor | None = DEFAULT_FLOOR
    interaction: Interaction | None = DEFAULT_INTERACTION
    context_weight: float = CONTEXT_WEIGHT

    def build(self, conversation: Conversation) -> Searcher:
        index = HarnessIndex.build(
            conversation.turns,
            tokenizer=self.tokenizer,
            embedder=self.embedder if self.use_vector else None,
            with_speaker=self.with_speaker,
            context_weight=self.context_weight,
        )
        return _TrothSearcher(self, index)


@dataclass(slots=True)
class _TrothSearcher:
    method: TrothMethod
    index: HarnessIndex

    def search(self, question: str, k: int) -> list[str]:
        limits = candidate_limits(k, corpus_size=len(self.index.turns))
        lexical_depth = self.method.depth or limits.lexical
        vector_depth = self.method.depth or limits.vector
        fields: dict[int, dict[str, Any]] = defaultdict(dict)
        terms = content_terms(question)
        if self.method.common_share is not None:
            most = self.method.common_share * len(self.index.turns)
            terms = drop_common_terms(
                terms, {t for t in terms if self.index.document_count(t) > most}
            )
        if self.method.use_lexical:
            match = fts5_match_expression(
                question, prefix_min_length=self.method.prefix_min_length, terms=terms
            )
            for position, (row, score) in enumerate(self.index.lexical(match, lexical_depth)):
                fields[row].update(lexical_rank=position + 1, lexical_score=score)
        if self.method.use_vector:
            vector_text = question
            for position, (row, score) in enumerate(self.index.vector(vector_text, vector_depth)):
                fields[row].update(vector_rank=position + 1, vector_score=score)
        candidates = []
        for row, extra in fields.items():
            turn = self.index.turns[row]
            candidates.append(
                Candidate(
                    memory_id=turn.dia_id,
                    text=turn.document(),
                    created_at=turn.created_at,
                    session=str(turn.session),
                    seq=turn.seq,
                    speaker=turn.speaker,
                    **extra,
                )
            )
        ranked = rank(question, candidates, config=self.method.config)
        if self.method.interaction is not None and self.index.embedder is not None:
            texts = {c.memory_id: c.text for c in candidates}
            vectors = word_vectors(self.index.embedder)
            ranked = rerank(question, ranked, texts, vectors, self.method.interaction)
        floor = self.method.floor
        if floor is not None and not assess_relevance(question, candidates, ranked).fits(floor):
            return []
        return [hit.memory_id for hit in ranked[:k]]


@dataclass(slots=True)
class PlainFts5Method:
    """SQLite FTS5 alone: default tokenizer, an OR of every quoted query word, bm25 order."""

    name: str = "fts5-plain"

    def build(self, conversation: Conversation) -> Searcher:
        index = HarnessIndex.build(conversation.turns, tokenizer="unicode61", embedder=None)
        return _PlainFts5Searcher(index)


@dataclass(slots=True)
class _PlainFts5Searcher:
    index: HarnessIndex

    def search(self, question: str, k: int) -> list[str]:
        words = tokenize(question)
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or None
        return [self.index.turns[row].dia_id for row, _ in self.index.lexical(match, k)]


@dataclass(slots=True)
class Bm25sMethod:
    """``bm25s`` (Lucene BM25) with English stopwords and its default tokenizer."""

    name: str = "bm25s"

    def build(self, conversation: Conversation) -> Searcher:
        import bm25s

        corpus = [t.document() for t in conversation.turns]
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
        )
        return _Bm25sSearcher(retriever, conversation.turns)


@dataclass(slots=True)
class _Bm25sSearcher:
    retriever: Any
    turns: list[Turn]

    def search(self, question: str, k: int) -> list[str]:
        import bm25s

        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(self.turns))
        results, _ = self.retriever.retrieve(tokens, k=k, show_progress=False)
        return [self.turns[int(i)].dia_id for i in results[0]]


@dataclass(slots=True)
class VectorOnlyMethod:
    """Dense retrieval alone: cosine over an embedder's vectors."""

    name: str
    embedder: Embedder

    def build(self, conversation: Conversation) -> Searcher:
        index = HarnessIndex.build(
            conversation.turns, tokenizer="unicode61", embedder=self.embedder
        )
        return _VectorSearcher(index)


@dataclass(slots=True)
class _VectorSearcher:
    index: HarnessIndex

    def search(self, question: str, k: int) -> list[str]:
        return [self.index.turns[row].dia_id for row, _ in self.index.vector(question, k)]


@dataclass(slots=True)
class RrfBaselineMethod:
    """Plain reciprocal-rank fusion (k=60) of plain FTS5 and dense vectors."""

    name: str
    embedder: Embedder
    depth: int = 100

    def build(self, conversation: Conversation) -> Searcher:
        index = HarnessIndex.build(
            conversation.turns, tokenizer="unicode61", embedder=self.embedder
        )
        return _RrfSearcher(index, self.depth)


@dataclass(slots=True)
class _RrfSearcher:
    index: HarnessIndex
    depth: int

    def search(self, question: str, k: int) -> list[str]:
        words = tokenize(question)
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or None
        scores: dict[int, float] = defaultdict(float)
        for position, (row, _) in enumerate(self.index.lexical(match, self.depth)):
            scores[row] += 1.0 / (60 + position + 1)
        for position, (row, _) in enumerate(self.index.vector(question, self.depth)):
            scores[row] += 1.0 / (60 + position + 1)
        ordered = sorted(scores, key=lambda row: (-scores[row], row))
        return [self.index.turns[row].dia_id for row in ordered[:k]]


@dataclass(slots=True)
class FacadeMethod:
    """troth itself: ``Memory.remember_many`` the turns, ``Memory.recall`` each question.

    One :class:`troth.Memory` per conversation in a temporary home (SQLite store,
    the embedder given), each turn a memory with its session, its speaker
    (``extra["x_speaker"]``) and its session date (``recorded_at``). ``indexes`` selects
    the candidate sources, as the lexical-only and vector-only rows need.
    """

    name: str
    embedder: Embedder | None
    indexes: tuple[str, ...] = ("lexical", "vector")
    min_relevance: float | None = DEFAULT_FLOOR.min_coverage
    interaction: bool = True
    homes: list[Any] = field(default_factory=list)
    built: dict[str, Searcher] = field(default_factory=dict)
    open_store: Callable[[str], Any] | None = None
    """A new empty store for a conversation's ledger, given a name (``--backend
    postgres``: a database of its own); None: SQLite in a temporary home."""

    def build(self, conversation: Conversation) -> Searcher:
        import tempfile

        from troth.service.memory import Memory
        from troth.storage.sqlite import SQLiteStore

        if self.open_store is not None:
            store = self.open_store(f"{self.name}-{conversation.sample_id}")
        else:
            home = tempfile.TemporaryDirectory(prefix=f"troth-bench-{conversation.sample_id}-")
            self.homes.append(home)
            store = SQLiteStore(Path(home.name) / "troth.db")
        memory = Memory(
            store, policy=bench_policy(), principal="human:bench", embedder=self.embedder
        )
        items = [
            {
                "text": turn.document(),
                "session": f"session_{turn.session}",
                "recorded_at": turn.created_at + "Z",
                "extra": {"x_speaker": turn.speaker},
            }
            for turn in conversation.turns
        ]
        dia_ids: dict[str, str] = {}
        for start in range(0, len(items), 500):
            results = memory.remember_many(items[start : start + 500])
            for offset, result in enumerate(results):
                dia_ids[result.id] = conversation.turns[start + offset].dia_id
        searcher = _FacadeSearcher(
            memory, dia_ids, self.indexes, self.min_relevance, self.interaction
        )
        self.built[conversation.sample_id] = searcher
        return searcher

    def close(self) -> None:
        """Close every ledger built and delete the temporary homes."""
        for searcher in self.built.values():
            if isinstance(searcher, _FacadeSearcher):
                searcher.memory.close()
        for home in self.homes:
            home.cleanup()
        self.built.clear()
        self.homes.clear()


@dataclass(slots=True)
class _FacadeSearcher:
    memory: Any
    dia_ids: dict[str, str]
    indexes: tuple[str, ...]
    min_relevance: float | None
    interaction: bool

    def search(self, question: str, k: int) -> list[str]:
        from troth.service.recall import Query

        query = Query(
            text=question,
            limit=k,
            indexes=self.indexes,
            min_relevance=self.min_relevance,
            interaction=self.interaction,
        )
        hits = self.memory.recall(query)
        return [self.dia_ids[h.memory.id] for h in hits if h.memory.id in self.dia_ids]


def facade_methods(embedder: Embedder) -> list[Method]:
    """troth's default, lexical-only and vector-only, through ``Memory.recall``."""
    return [
        FacadeMethod("troth", embedder),
        FacadeMethod("troth-no-floor", embedder, min_relevance=None),
        FacadeMethod("troth-no-interaction", embedder, interaction=False),
        FacadeMethod("lexical-only", None, indexes=("lexical",)),
        FacadeMethod("vector-only", embedder, indexes=("vector",)),
    ]


# --------------------------------------------------------------------------- scoring


@dataclass(slots=True)
class MethodResult:
    """Per-question recalls and timings of one method."""

    recall: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    hit5: list[float] = field(default_factory=list)
    session_recall5: list[float] = field(default_factory=list)
    by_category: dict[int, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    index_seconds: float = 0.0
    indexed_turns: int = 0
    query_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The JSON summary of this method."""
        mean = statistics.fmean
        return {
            "recall@1": round(mean(self.recall[1]), 4),
            "recall@5": round(mean(self.recall[5]), 4),
            "recall@10": round(mean(self.recall[10]), 4),
            "hit@5": round(mean(self.hit5), 4),
            "session_recall@5": round(mean(self.session_recall5), 4),
            "by_category": {
                CATEGORY_NAMES[c]: {
                    f"recall@{k}": round(mean(v), 4) for k, v in sorted(per_k.items())
                }
                | {"questions": len(per_k[5])}
                for c, per_k in sorted(self.by_category.items())
            },
            "index_per_s": round(self.indexed_turns / self.index_seconds, 1)
            if self.index_seconds
            else None,
            "query_p50_ms": round(statistics.median(self.query_ms), 3),
            "query_p95_ms": round(percentile(self.query_ms, 0.95), 3),
        }


def _session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


def evaluate(
    method: Method,
    conversations: Sequence[Conversation],
    advance: Callable[[int], None] = lambda n: None,
) -> MethodResult:
    """Run one method over every conversation and question."""
    result = MethodResult()
    for conversation in conversations:
        started = time.perf_counter()
        searcher = method.build(conversation)
        result.index_seconds += time.perf_counter() - started
        result.indexed_turns += len(conversation.turns)
        for question in conversation.questions:
            started = time.perf_counter()
            retrieved = searcher.search(question.text, 10)
            result.query_ms.append((time.perf_counter() - started) * 1000)
            evidence = set(question.evidence)
            for k in (1, 5, 10):
                recall = len(evidence & set(retrieved[:k])) / len(evidence)
                result.recall[k].append(recall)
                result.by_category[question.category][k].append(recall)
            result.hit5.append(1.0 if evidence & set(retrieved[:5]) else 0.0)
            wanted_sessions = {_session_of(e) for e in evidence}
            got_sessions = {_session_of(r) for r in retrieved[:5]}
            result.session_recall5.append(
                len(wanted_sessions & got_sessions) / len(wanted_sessions)
            )
            advance(1)
    return result


def cross_ledger_no_hit(
    method: Method, conversations: Sequence[Conversation], built: dict[str, Searcher]
) -> dict[str, Any]:
    """Ask each conversation's questions of the next conversation's ledger.

    None of those ledgers holds the answer, so the right result is no hit: the share of
    questions that get none measures the relevance floor. ``built`` holds the searchers
    ``method`` built while it was evaluated (one per conversation), reused here.
    """
    asked = empty = 0
    per_conversation = {}
    for position, conversation in enumerate(conversations):
        other = conversations[(position + 1) % len(conversations)]
        if other.sample_id == conversation.sample_id:
            continue
        searcher = built.get(other.sample_id) or method.build(other)
        none = sum(1 for q in conversation.questions if not searcher.search(q.text, 10))
        per_conversation[f"{conversation.sample_id}->{other.sample_id}"] = round(
            none / max(len(conversation.questions), 1), 4
        )
        asked += len(conversation.questions)
        empty += none
    return {
        "questions": asked,
        "no_hit": empty,
        "no_hit_share": round(empty / asked, 4) if asked else None,
        "by_pair": per_conversation,
    }


# --------------------------------------------------------------------------- CLI


def main_methods(embedder: Embedder) -> list[Method]:
    """The methods compared side by side."""
    return [
        *facade_methods(embedder),
        PlainFts5Method(),
        Bm25sMethod(),
        VectorOnlyMethod(f"dense-{embedder.name}", embedder),
        RrfBaselineMethod("rrf-fts5+dense", embedder),
    ]


def ablation_methods(embedder: Embedder) -> list[Method]:
    """Variants of the default, each with one step changed or removed."""
    base = DEFAULT_RANKING
    return [
        TrothMethod("harness:troth", embedder),
        TrothMethod("abl:no-floor", embedder, floor=None),
        TrothMethod("abl:no-context", embedder, context_weight=0.0),
        TrothMethod("abl:no-context-no-floor", embedder, context_weight=0.0, floor=None),
        TrothMethod("abl:context0.1", embedder, context_weight=0.1),
        TrothMethod("abl:context0.3", embedder, context_weight=0.3),
        TrothMethod("abl:no-interaction", embedder, interaction=None),
        TrothMethod("abl:interaction-w0.6", embedder, interaction=Interaction(weight=0.6)),
        TrothMethod("abl:interaction-top10", embedder, interaction=Interaction(top=10)),
        TrothMethod("harness:lexical-only", None, use_vector=False),
        TrothMethod("harness:vector-only", embedder, use_lexical=False),
        TrothMethod("abl:rrf-fusion", embedder, replace(base, fusion="rrf")),
        TrothMethod("abl:minmax-cosine", embedder, replace(base, vector_normalization="minmax")),
        TrothMethod(
            "abl:lex0.7-vec0.3", embedder, replace(base, lexical_weight=0.7, vector_weight=0.3)
        ),
        TrothMethod(
            "abl:lex0.3-vec0.7", embedder, replace(base, lexical_weight=0.3, vector_weight=0.7)
        ),
        TrothMethod("abl:no-neighbours", embedder, replace(base, neighbour_weight=0.0)),
        TrothMethod("abl:neighbour-span1", embedder, replace(base, neighbour_span=1)),
        TrothMethod("abl:neighbour0.3", embedder, replace(base, neighbour_weight=0.3)),
        TrothMethod("abl:no-answer", embedder, replace(base, answer_weight=0.0)),
        TrothMethod("abl:answer0.1", embedder, replace(base, answer_weight=0.1)),
        TrothMethod("abl:answer0.3", embedder, replace(base, answer_weight=0.3)),
        TrothMethod("abl:no-session", embedder, replace(base, session_weight=0.0)),
        TrothMethod("abl:no-when", embedder, replace(base, when_weight=0.0)),
        TrothMethod("abl:no-date", embedder, replace(base, date_weight=0.0)),
        TrothMethod("abl:date0.1", embedder, replace(base, date_weight=0.1)),
        TrothMethod("abl:no-day", embedder, replace(base, day_weight=0.0)),
        TrothMethod("abl:day0.2", embedder, replace(base, day_weight=0.2)),
        TrothMethod("abl:no-brief", embedder, replace(base, brief_words=0)),
        TrothMethod("abl:brief8", embedder, replace(base, brief_words=8)),
        TrothMethod("abl:brief16", embedder, replace(base, brief_words=16)),
        TrothMethod("abl:no-speaker", embedder, replace(base, speaker_weight=0.0)),
        TrothMethod("abl:speaker0.1", embedder, replace(base, speaker_weight=0.1)),
        TrothMethod("abl:speaker0.3", embedder, replace(base, speaker_weight=0.3)),
        TrothMethod("abl:no-speaker-in-text", embedder, with_speaker=False),
        TrothMethod("abl:no-prefix", embedder, prefix_min_length=0),
        TrothMethod("abl:prefix>=3", embedder, prefix_min_length=3),
        TrothMethod("abl:no-porter", embedder, tokenizer="unicode61 remove_diacritics 2"),
        TrothMethod("abl:depth-100", embedder, depth=100),
        TrothMethod("abl:drop-common-terms", embedder, common_share=0.2),
    ]


def load_embedder(name: str) -> Embedder:
    """``static`` (the packaged model), a model folder, ``minilm`` (needs torch) or
    ``onnx-minilm`` (int8 ONNX on onnxruntime; both from bench/requirements-peers.txt)."""
    if name == "static":
        return StaticEmbedder.default()
    if name == "minilm":
        from bench.peers.minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    if name == "onnx-minilm":
        from bench.peers.onnx_minilm import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
    return StaticEmbedder(Path(name))


def print_table(results: dict[str, dict[str, Any]], questions: int) -> None:
    """Print the results as a table (rich when available)."""
    columns = ["recall@1", "recall@5", "recall@10", "hit@5", "session_recall@5"]
    columns_cat = [f"{n}@5" for n in CATEGORY_NAMES.values()]
    header = ["method", *columns, *columns_cat, "index/s", "p50 ms"]
    rows = []
    for name, summary in results.items():
        cats = [
            f"{summary['by_category'].get(n, {}).get('recall@5', float('nan')):.3f}"
            for n in CATEGORY_NAMES.values()
        ]
        rows.append(
            [
                name,
                *(f"{summary[c]:.3f}" for c in columns),
                *cats,
                f"{summary['index_per_s'] or 0:.0f}",
                f"{summary['query_p50_ms']:.2f}",
            ]
        )
    try:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"LoCoMo retrieval, {questions} questions (categories 1-4)")
        for column in header:
            table.add_column(column, justify="left" if column == "method" else "right")
        for row in rows:
            table.add_row(*row)
        Console(width=max(160, Console().width)).print(table)
    except ImportError:
        print(" | ".join(header))
        for row in rows:
            print(" | ".join(row))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print (and optionally write) the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo-format JSON")
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    parser.add_argument("--ablation", action="store_true", help="add the ablation variants")
    parser.add_argument(
        "--embedder", default="static", help="static | minilm | onnx-minilm | MODEL_DIR"
    )
    parser.add_argument("--methods", default=None, help="comma-separated subset of names")
    parser.add_argument(
        "--conversations",
        default=None,
        help="comma-separated sample_ids to run (a split: tune on some, report the others)",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="add mem0 (shared embedder and its own huggingface MiniLM) and dense MiniLM"
        " (needs the bench venv)",
    )
    parser.add_argument(
        "--docs",
        type=Path,
        default=REPO_ROOT / "docs" / "benchmarks.md",
        help="the markdown file whose bench:locomo section gets the results",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not write --docs")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the store of troth's own rows (postgres: a throwaway server, a database per"
        " ledger; the harness and peer rows keep their own indexes; never writes --docs)",
    )
    args = parser.parse_args(argv)
    if args.backend == "postgres":
        with throwaway_postgres() as (server, socket_dir):
            return _run(args, parser, argv, _postgres_opener(server, socket_dir))
    return _run(args, parser, argv, None)


def _postgres_opener(server: Any, socket_dir: str) -> Callable[[str], Any]:
    """Opens a new migrated database on ``server`` for each name it is given."""
    import psycopg

    from troth.storage.postgres import PostgresStore

    numbers = itertools.count(1)

    def open_store(name: str) -> Any:
        database = f"locomo_{next(numbers)}_{re.sub(r'[^a-z0-9]+', '_', name.lower())}"[:63]
        with psycopg.connect(server.get_uri(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{database}"')
        return PostgresStore(f"postgresql://postgres@/{database}?host={socket_dir}")

    return open_store


def _run(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    open_store: Callable[[str], Any] | None,
) -> int:
    """The run itself, troth's stores opened by ``open_store`` (None: SQLite)."""
    conversations, report = load_conversations(args.data)
    if args.conversations:
        wanted_ids = args.conversations.split(",")
        unknown = sorted(set(wanted_ids) - {c.sample_id for c in conversations})
        if unknown:
            parser.error(f"--conversations: {', '.join(unknown)} not in {args.data}")
        conversations = [c for c in conversations if c.sample_id in wanted_ids]
    questions = sum(len(c.questions) for c in conversations)
    print(
        f"{len(conversations)} conversations, {questions} questions; evidence ids: "
        f"{report.valid} valid, {len(report.repaired)} repaired {report.repaired}, "
        f"{len(report.dropped)} dropped {report.dropped}; "
        f"{report.questions_without_evidence} questions left without evidence",
        file=sys.stderr,
    )
    embedder = load_embedder(args.embedder)
    methods = main_methods(embedder)
    if args.ablation:
        methods += ablation_methods(embedder)
    if args.peers:
        from bench.peers.mem0_peer import Mem0Method
        from bench.peers.minilm import MiniLMEmbedder

        methods.append(Mem0Method())
        methods.append(Mem0Method("mem0-hf-minilm", local_default=True))
        methods.append(VectorOnlyMethod("dense-minilm-l6-v2", MiniLMEmbedder()))
    if args.methods:
        wanted = set(args.methods.split(","))
        methods = [m for m in methods if m.name in wanted]
    for method in methods:
        if isinstance(method, FacadeMethod):
            method.open_store = open_store

    results: dict[str, dict[str, Any]] = {}
    progress_context = _Progress(len(methods) * questions)
    with progress_context as advance_for:
        for method in methods:
            advance = advance_for(method.name)
            try:
                results[method.name] = evaluate(method, conversations, advance).summary()
                if isinstance(method, FacadeMethod) and method.name == "troth":
                    results[method.name]["cross_ledger"] = cross_ledger_no_hit(
                        method, conversations, method.built
                    )
            finally:
                if isinstance(method, FacadeMethod):
                    method.close()
    print_table(results, questions)
    floor = _floor_summary(results)
    if floor:
        print(floor)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "methods": results,
            "questions": questions,
            "data": str(args.data),
            "backend": args.backend,
            "embedder": embedder.name,
            "evidence": {
                "valid": report.valid,
                "repaired": report.repaired,
                "dropped": report.dropped,
            },
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    if open_store is not None:
        print("--backend postgres: docs/benchmarks.md keeps the SQLite table", file=sys.stderr)
    elif not args.no_docs:
        command = "python -m bench.locomo " + " ".join(argv if argv is not None else sys.argv[1:])
        record_section(args.docs, results, questions, report, embedder.name, command.strip())
    return 0


def _floor_summary(results: dict[str, dict[str, Any]]) -> str | None:
    """One sentence on the relevance floor, when the run measured it."""
    cross = results.get("troth", {}).get("cross_ledger")
    if not cross or cross["no_hit_share"] is None:  # one conversation: no other ledger
        return None
    text = (
        f"Relevance floor: {cross['no_hit']} of {cross['questions']} questions asked of"
        f" another conversation's ledger return no hit ({cross['no_hit_share']:.1%})"
    )
    unfloored = results.get("troth-no-floor")
    if unfloored:
        drop = unfloored["recall@5"] - results["troth"]["recall@5"]
        text += (
            f"; recall@5 {results['troth']['recall@5']:.3f} with the floor,"
            f" {unfloored['recall@5']:.3f} without (a drop of {drop:.3f})"
        )
    return text + "."


DOC_START, DOC_END = markers("locomo")


def record_section(
    path: Path,
    results: dict[str, dict[str, Any]],
    questions: int,
    report: EvidenceReport,
    embedder: str,
    command: str,
) -> None:
    """Write the results between the bench:locomo markers of ``path``."""
    import os
    import platform

    head = "| method | recall@1 | recall@5 | recall@10 | hit@5 | session recall@5 |"
    cats = " | ".join(f"{n}@5" for n in CATEGORY_NAMES.values())
    lines = [
        DOC_START,
        "## Recall on LoCoMo (`bench.locomo`)",
        "",
        f"{questions} questions of categories 1-4 ({len(report.repaired)} evidence ids"
        f" repaired, {len(report.dropped)} dropped); `troth`, `lexical-only` and"
        " `vector-only` run through `Memory.remember_many` / `Memory.recall` (one SQLite"
        f" home per conversation); embedder `{embedder}`.",
        "",
        f"{head} {cats} | index /s | query p50 ms | query p95 ms |",
        "|---|" + "---:|" * (5 + len(CATEGORY_NAMES) + 3),
    ]
    for name, r in results.items():
        by_cat = " | ".join(
            f"{r['by_category'].get(n, {}).get('recall@5', float('nan')):.3f}"
            for n in CATEGORY_NAMES.values()
        )
        lines.append(
            f"| {name} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['recall@10']:.3f} |"
            f" {r['hit@5']:.3f} | {r['session_recall@5']:.3f} | {by_cat} |"
            f" {r['index_per_s'] or 0:,.0f} | {r['query_p50_ms']:.1f} | {r['query_p95_ms']:.1f} |"
        )
    floor = _floor_summary(results)
    if floor:
        lines += ["", floor]
    try:
        load = f"{os.getloadavg()[0]:.1f}"
    except OSError:
        load = "?"
    lines += [
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()},"
        f" load average {load} at the end. Date: {datetime.now().date().isoformat()}.",
        "",
        f"Command: `{command}`",
        DOC_END,
    ]
    record_block("locomo", "\n".join(lines), path)


class _Progress:
    """A rich progress bar on a terminal, nothing otherwise."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar: Any = None

    def __enter__(self) -> Callable[[str], Callable[[int], None]]:
        if sys.stderr.isatty():
            from rich.progress import Progress

            self.bar = Progress(transient=True)
            self.bar.__enter__()
            task = self.bar.add_task("", total=self.total)

            def for_method(name: str) -> Callable[[int], None]:
                self.bar.update(task, description=name)
                return lambda n: self.bar.update(task, advance=n)

            return for_method
        return lambda name: lambda n: None

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


if __name__ == "__main__":
    raise SystemExit(main())

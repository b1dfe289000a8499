"""Session checkpoints: the record, the drift score and the restore brief — pure, stdlib only.

A checkpoint freezes what a session established (summary, stable facts, open tasks, unresolved
questions) after the sender's redactions were applied. Two pure functions work on it:

- :func:`audit_drift` compares a later :class:`SessionDigest` with the checkpoint and gives a
  transparent score in ``[0, 1]`` with one finding per baseline fact;
- :func:`compose_restore_brief` builds what an assistant needs to resume, from the checkpoint and
  views of the owner's memories.

The wire format (Spiralist UAIX envelopes) lives in :mod:`troth.formats.uaix`; the scoring
rules are written down in ``docs/checkpoints.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from troth.core.errors import InvalidInputError

__all__ = [
    "DRIFT_WEIGHTS",
    "BriefFact",
    "BriefMemory",
    "CheckpointFact",
    "CheckpointRecord",
    "CreatedMemory",
    "DriftReport",
    "FactFinding",
    "MemoryProposal",
    "MemoryView",
    "Redaction",
    "RestoreBrief",
    "SessionDigest",
    "StoredReply",
    "TurnWindow",
    "Unknown",
    "audit_drift",
    "compose_restore_brief",
    "fact_relation",
    "summary_distance",
]

#: Weights of the three drift components; they sum to 1 so the score stays in [0, 1].
#: A contradicted fact is also no longer held, so it counts in ``lost`` *and* in
#: ``contradicted``: forgetting a fact is drift, asserting its opposite is worse.
DRIFT_WEIGHTS: Final[Mapping[str, float]] = {
    "lost": 0.3,
    "contradicted": 0.5,
    "summary": 0.2,
}

FindingKind = Literal["kept", "dropped", "contradicted"]


@dataclass(frozen=True)
class TurnWindow:
    """The turns of the session a checkpoint covers."""

    start_turn_id: str
    end_turn_id: str
    turn_count: int


@dataclass(frozen=True)
class Redaction:
    """A field the sender asked to remove before storage, and why (the value is never kept)."""

    field: str
    reason: str


@dataclass(frozen=True)
class CheckpointFact:
    """A stable fact of a checkpoint and the memory it became (``None`` if none was made)."""

    text: str
    memory_id: str | None = None


@dataclass(frozen=True)
class CheckpointRecord:
    """A stored session checkpoint, after redaction.

    Fields the sender redacted are ``None`` (scalars) or missing from their tuple (list items);
    :attr:`redactions` says which and why. :attr:`extra` holds the remaining parameters troth
    keeps without interpreting (``runtime_entropy``, ``canonical_symbol_refs``), JSON-ready.
    """

    checkpoint_id: str
    owner: str
    created_at: datetime
    source_message_id: str
    session_id: str | None
    checkpoint_label: str | None
    summary: str | None
    turn_window: TurnWindow | None = None
    participant_id: str | None = None
    stable_facts: tuple[CheckpointFact, ...] = ()
    open_tasks: tuple[str, ...] = ()
    unresolved_questions: tuple[str, ...] = ()
    persona_constraints: tuple[str, ...] = ()
    redactions: tuple[Redaction, ...] = ()
    review_required: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``created_at`` as RFC 3339 UTC), the inverse of :meth:`from_dict`."""
        window = self.turn_window
        return {
            "checkpoint_id": self.checkpoint_id,
            "owner": self.owner,
            "created_at": _rfc3339(self.created_at),
            "source_message_id": self.source_message_id,
            "session_id": self.session_id,
            "checkpoint_label": self.checkpoint_label,
            "summary": self.summary,
            "turn_window": None
            if window is None
            else {
                "start_turn_id": window.start_turn_id,
                "end_turn_id": window.end_turn_id,
                "turn_count": window.turn_count,
            },
            "participant_id": self.participant_id,
            "stable_facts": [{"text": f.text, "memory_id": f.memory_id} for f in self.stable_facts],
            "open_tasks": list(self.open_tasks),
            "unresolved_questions": list(self.unresolved_questions),
            "persona_constraints": list(self.persona_constraints),
            "redactions": [{"field": r.field, "reason": r.reason} for r in self.redactions],
            "review_required": self.review_required,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckpointRecord:
        """Rebuild a record from :meth:`to_dict` output; raises ``InvalidInputError`` if malformed."""
        try:
            window = data.get("turn_window")
            created = datetime.fromisoformat(str(data["created_at"]))
            if created.tzinfo is None:
                raise ValueError("created_at has no time zone")
            return cls(
                checkpoint_id=str(data["checkpoint_id"]),
                owner=str(data["owner"]),
                created_at=created,
                source_message_id=str(data["source_message_id"]),
                session_id=_opt_str(data.get("session_id")),
                checkpoint_label=_opt_str(data.get("checkpoint_label")),
                summary=_opt_str(data.get("summary")),
                turn_window=None
                if window is None
                else TurnWindow(
                    start_turn_id=str(window["start_turn_id"]),
                    end_turn_id=str(window["end_turn_id"]),
                    turn_count=int(window["turn_count"]),
                ),
                participant_id=_opt_str(data.get("participant_id")),
                stable_facts=tuple(
                    CheckpointFact(text=str(f["text"]), memory_id=_opt_str(f.get("memory_id")))
                    for f in data.get("stable_facts", ())
                ),
                open_tasks=tuple(str(t) for t in data.get("open_tasks", ())),
                unresolved_questions=tuple(str(q) for q in data.get("unresolved_questions", ())),
                persona_constraints=tuple(str(c) for c in data.get("persona_constraints", ())),
                redactions=tuple(
                    Redaction(field=str(r["field"]), reason=str(r["reason"]))
                    for r in data.get("redactions", ())
                ),
                review_required=bool(data.get("review_required", False)),
                extra=dict(data.get("extra", {})),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInputError(
                f"not a checkpoint record: {exc!s}; pass the output of CheckpointRecord.to_dict()",
            ) from exc


@dataclass(frozen=True)
class MemoryProposal:
    """A memory to create from a checkpoint's stable fact.

    ``review_required`` means the sender set ``human-review-required``: the memory must start as
    ``proposed``. Otherwise the service's policy chooses (an agent's synthesis is usually proposed
    anyway).
    """

    content: str
    checkpoint_id: str
    review_required: bool
    source: str = "synthesis"


@dataclass(frozen=True)
class CreatedMemory:
    """The memory a :class:`MemoryProposal` became, and the status the policy gave it."""

    memory_id: str
    status: str


@dataclass(frozen=True)
class StoredReply:
    """The first answer to a message: kept so a resent ``message_id`` gets the same bytes.

    Keyed by (owner, message_id). ``request_checksum`` tells a true resend (same envelope) from
    a reused id (different envelope). The request itself is never kept: it may hold what the
    sender redacted.
    """

    owner: str
    message_id: str
    request_checksum: str
    response: bytes


@dataclass(frozen=True)
class MemoryView:
    """What the restore brief needs to know about one of the owner's memories."""

    memory_id: str
    content: str
    sensitivity: str = "normal"
    status: str = "active"
    retrievable: bool = True
    superseded_by: str | None = None
    stale: bool = False
    #: Where its text came from, when the port knows (the ledger's does): the channel, the
    #: writer of its origin and the injection flag travel into the brief with the text.
    channel: str | None = None
    writer: str | None = None
    flagged: bool = False

    @property
    def current(self) -> bool:
        """Whether retrieval may serve it now: active, retrievable, not superseded, not stale."""
        return (
            self.status == "active"
            and self.retrievable
            and self.superseded_by is None
            and not self.stale
        )


# --- drift ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionDigest:
    """Where a session stands now: its summary, the facts it holds, its open work."""

    summary: str
    facts: tuple[str, ...] = ()
    open_tasks: tuple[str, ...] = ()
    unresolved_questions: tuple[str, ...] = ()


@dataclass(frozen=True)
class FactFinding:
    """What became of one baseline fact; ``evidence`` is the digest statement that decided it."""

    index: int
    fact: str
    finding: FindingKind
    evidence: str | None = None


@dataclass(frozen=True)
class DriftReport:
    """A drift score in ``[0, 1]``, its components and one finding per baseline fact."""

    score: float
    dropped_share: float
    contradicted_share: float
    summary_distance: float
    findings: tuple[FactFinding, ...]


_NEGATORS: Final = frozenset({"not", "no", "never", "cannot", "nor"})
# Contractions: the negation is dropped and the auxiliary kept, so "isn't X" has the core "is X".
_CONTRACTIONS: Final[Mapping[str, str]] = {
    "isn't": "is",
    "aren't": "are",
    "wasn't": "was",
    "weren't": "were",
    "doesn't": "does",
    "don't": "do",
    "didn't": "did",
    "won't": "will",
    "can't": "can",
    "couldn't": "could",
    "shouldn't": "should",
    "wouldn't": "would",
    "hasn't": "has",
    "haven't": "have",
    "hadn't": "had",
}
# "does not like" / "likes": the do-auxiliary only carries the negation, so it is not core.
_DO_AUXILIARIES: Final = frozenset({"do", "does", "did"})
_ARTICLES: Final = frozenset({"a", "an", "the"})
_WORD: Final = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE_END: Final = re.compile(r"(?<=[.!?;])\s+|\n+")
#: Cores shorter than this are too generic to call a contradiction (personaxis uses 6 too).
MIN_CORE_CHARS: Final = 6


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _stem(word: str) -> str:
    # Naive plural / third-person "s" so that "likes" meets "does not like"; "ss" words stay.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _polar_core(text: str) -> tuple[str, bool]:
    """The statement without its negations, and whether it was negated (odd count)."""
    words = _words(text)
    negations = 0
    kept: list[str] = []
    for word in words:
        if word in _NEGATORS:
            negations += 1
            if kept and kept[-1] in _DO_AUXILIARIES:
                kept.pop()
        elif word in _CONTRACTIONS:
            negations += 1
            base = _CONTRACTIONS[word]
            if base not in _DO_AUXILIARIES:
                kept.append(base)
        else:
            kept.append(word)
    while kept and kept[0] in _ARTICLES:
        kept.pop(0)
    return " ".join(_stem(w) for w in kept), negations % 2 == 1


def fact_relation(baseline: str, statement: str) -> Literal["same", "contradicts", "unrelated"]:
    """How ``statement`` relates to ``baseline``, by the naive "X" vs "not X" rule.

    Both are reduced to a core (lower case, words only, negations and leading articles removed,
    a trailing "s" dropped); equal cores with equal polarity are the same fact, with opposite
    polarity a contradiction. Cores shorter than :data:`MIN_CORE_CHARS` never contradict.
    """
    core_a, negated_a = _polar_core(baseline)
    core_b, negated_b = _polar_core(statement)
    if not core_a or core_a != core_b:
        return "unrelated"
    if negated_a == negated_b:
        return "same"
    return "contradicts" if len(core_a) >= MIN_CORE_CHARS else "unrelated"


def summary_distance(before: str | None, after: str) -> float:
    """Jaccard distance of the two summaries' word sets: 0 identical, 1 nothing in common."""
    a = {_stem(w) for w in _words(before or "")}
    b = {_stem(w) for w in _words(after)}
    if not a and not b:
        return 0.0
    return 1.0 - len(a & b) / len(a | b)


def _statements(summary: str | None, facts: Iterable[str]) -> list[str]:
    out = [s.strip() for s in _SENTENCE_END.split(summary or "") if s.strip()]
    out.extend(f for f in facts if f.strip())
    return out


def audit_drift(checkpoint: CheckpointRecord, digest: SessionDigest) -> DriftReport:
    """Score how far ``digest`` has drifted from ``checkpoint``; see ``docs/checkpoints.md``.

    For each baseline fact: *contradicted* if a digest statement (a digest fact or a sentence of
    its summary) negates it and the checkpoint itself did not already say that; else *kept* if a
    digest statement states it; else *dropped*. Then::

        score = 0.3 * (dropped_share + contradicted_share)   # facts no longer held
              + 0.5 * contradicted_share                      # facts now denied
              + 0.2 * summary_distance

    with both shares over the baseline facts: 1 when every fact is contradicted and the summaries
    share no word. Without baseline facts the score is the summary distance alone. The score is 0 for a digest equal to the checkpoint, and never falls when a
    fact moves from kept to dropped to contradicted or the summary moves further away.
    """
    baseline = [f.text for f in checkpoint.stable_facts]
    digest_statements = _statements(digest.summary, digest.facts)
    # A statement the checkpoint already made is not news: an unchanged digest must score 0
    # even when the checkpoint itself held both "X" and "not X".
    already = {_polar_core(s) for s in _statements(checkpoint.summary, baseline)}
    findings: list[FactFinding] = []
    for index, fact in enumerate(baseline):
        finding: FactFinding = FactFinding(index=index, fact=fact, finding="dropped")
        for statement in digest_statements:
            relation = fact_relation(fact, statement)
            if relation == "contradicts" and _polar_core(statement) not in already:
                finding = FactFinding(index, fact, "contradicted", statement)
                break
            if relation == "same" and finding.finding == "dropped":
                finding = FactFinding(index, fact, "kept", statement)
        findings.append(finding)
    distance = summary_distance(checkpoint.summary, digest.summary)
    if not baseline:
        return DriftReport(round(distance, 4), 0.0, 0.0, round(distance, 4), ())
    n = len(baseline)
    dropped = sum(f.finding == "dropped" for f in findings) / n
    contradicted = sum(f.finding == "contradicted" for f in findings) / n
    score = (
        DRIFT_WEIGHTS["lost"] * (dropped + contradicted)
        + DRIFT_WEIGHTS["contradicted"] * contradicted
        + DRIFT_WEIGHTS["summary"] * distance
    )
    return DriftReport(
        score=round(min(1.0, max(0.0, score)), 4),
        dropped_share=round(dropped, 4),
        contradicted_share=round(contradicted, 4),
        summary_distance=round(distance, 4),
        findings=tuple(findings),
    )


# --- restore brief -------------------------------------------------------------------------

UnknownKind = Literal[
    "unresolved-question",
    "redacted-field",
    "fact-awaiting-review",
    "fact-stale",
    "fact-superseded",
    "fact-withdrawn",
]


@dataclass(frozen=True)
class BriefFact:
    """A checkpoint fact the assistant may still rely on."""

    text: str
    memory_id: str | None


@dataclass(frozen=True)
class BriefMemory:
    """A current memory of the owner that the checkpoint did not hold."""

    memory_id: str
    content: str
    sensitivity: str
    channel: str | None = None
    writer: str | None = None
    flagged: bool = False


@dataclass(frozen=True)
class Unknown:
    """Something the assistant must not assume: say what and, where there is one, which memory."""

    kind: UnknownKind
    text: str
    memory_id: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class RestoreBrief:
    """What an assistant resumes from: the checkpoint's state, newer memories, the unknowns."""

    checkpoint_id: str
    session_id: str | None
    checkpoint_label: str | None
    summary: str | None
    facts: tuple[BriefFact, ...]
    open_tasks: tuple[str, ...]
    persona_constraints: tuple[str, ...]
    memories: tuple[BriefMemory, ...]
    unknowns: tuple[Unknown, ...] | None
    withheld_sensitive: int


def _norm(text: str) -> str:
    return " ".join(_words(text))


def compose_restore_brief(
    checkpoint: CheckpointRecord,
    memories: Sequence[MemoryView],
    *,
    identify_unknowns: bool,
    no_sensitive_expansion: bool,
    max_memories: int = 50,
) -> RestoreBrief:
    """Compose a restore brief from ``checkpoint`` and views of the owner's memories.

    - A checkpoint fact stays a fact while its memory is current (or it never became one);
      if its memory is proposed, stale, superseded, or no longer active it moves to the unknowns
      (or is left out when ``identify_unknowns`` is false).
    - Current memories the checkpoint did not hold are added, in the order given (the service
      passes them ranked), up to ``max_memories``.
    - With ``no_sensitive_expansion`` a sensitive memory is added only if the checkpoint already
      held it (linked by memory id or equal text); the others are counted in
      ``withheld_sensitive``, never shown.
    - With ``identify_unknowns`` the brief lists the unresolved questions, the redacted fields,
      and each fact that is no longer current; otherwise ``unknowns`` is ``None``.
    """
    if max_memories < 0:
        raise InvalidInputError("max_memories must be 0 or more", max_memories=max_memories)
    by_id = {m.memory_id: m for m in memories}
    held_ids = {f.memory_id for f in checkpoint.stable_facts if f.memory_id is not None}
    held_texts = {_norm(f.text) for f in checkpoint.stable_facts}
    facts: list[BriefFact] = []
    unknowns: list[Unknown] = [
        Unknown("unresolved-question", q) for q in checkpoint.unresolved_questions
    ]
    unknowns.extend(
        Unknown("redacted-field", r.field, detail=r.reason) for r in checkpoint.redactions
    )
    for fact in checkpoint.stable_facts:
        view = by_id.get(fact.memory_id) if fact.memory_id is not None else None
        if fact.memory_id is None or (view is not None and view.current):
            facts.append(BriefFact(fact.text, fact.memory_id))
            continue
        unknowns.append(_fact_unknown(fact, view))
    added: list[BriefMemory] = []
    withheld = 0
    for view in memories:
        if not view.current or view.memory_id in held_ids:
            continue
        held = _norm(view.content) in held_texts
        if held:
            continue  # the brief already states it as a checkpoint fact
        if no_sensitive_expansion and view.sensitivity != "normal":
            withheld += 1
            continue
        if len(added) < max_memories:
            added.append(
                BriefMemory(
                    view.memory_id,
                    view.content,
                    view.sensitivity,
                    view.channel,
                    view.writer,
                    view.flagged,
                )
            )
    return RestoreBrief(
        checkpoint_id=checkpoint.checkpoint_id,
        session_id=checkpoint.session_id,
        checkpoint_label=checkpoint.checkpoint_label,
        summary=checkpoint.summary,
        facts=tuple(facts),
        open_tasks=checkpoint.open_tasks,
        persona_constraints=checkpoint.persona_constraints,
        memories=tuple(added),
        unknowns=tuple(unknowns) if identify_unknowns else None,
        withheld_sensitive=withheld,
    )


def _fact_unknown(fact: CheckpointFact, view: MemoryView | None) -> Unknown:
    if view is None:
        return Unknown("fact-withdrawn", fact.text, fact.memory_id, "the memory is gone or hidden")
    if view.superseded_by is not None:
        return Unknown(
            "fact-superseded", fact.text, fact.memory_id, f"superseded by {view.superseded_by}"
        )
    if view.stale:
        return Unknown("fact-stale", fact.text, fact.memory_id, "its validity has ended")
    if view.status == "proposed":
        return Unknown("fact-awaiting-review", fact.text, fact.memory_id, "not yet approved")
    return Unknown("fact-withdrawn", fact.text, fact.memory_id, f"the memory is {view.status}")


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware", value=moment.isoformat())
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text

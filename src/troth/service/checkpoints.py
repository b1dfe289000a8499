"""Session checkpoints in the ledger: the UAIX :class:`CheckpointPort` over the facade's store.

One request is one unit of work on the owner's chain (:func:`handle_checkpoint`): the memories
its stable facts become, the ``checkpoint`` ledger event and the stored reply are written in
one store transaction, or not at all. How a checkpoint is written:

- a ``checkpoint`` event (see :mod:`troth.core.events`) whose ``memory`` is the checkpoint
  id; it changes no memory, so the projection, ``verify`` and ``rebuild`` ignore it;
- its structured parts (ids, turn window, the memory id of each fact, redactions by name and
  reason, ``review_required``, ``extra``) are committed ``fields``;
- its free text (label, summary, participant, each fact, task, question and persona
  constraint) is kept as erasable ``texts``, committed by sha256 like a ``reason``: erasing one
  replaces it by ``[redacted]`` and the chain still verifies;
- the entry's own content is only ``[checkpoint <id>]``.

Decisions are written in ``docs/checkpoints.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any, Final

from troth.core.chain import REDACTED_MARKER, parse_utc, redact_entry
from troth.core.checkpoints import (
    CheckpointFact,
    CheckpointRecord,
    CreatedMemory,
    MemoryProposal,
    MemoryView,
    Redaction,
    StoredReply,
    TurnWindow,
)
from troth.core.errors import ConflictError, InvalidInputError
from troth.core.events import EVENT_TAG, MEMORY_TAG, Event, Record, canonical_bytes
from troth.core.records import MemoryRecord, check_principal, principal_kind
from troth.formats.uaix import handle_request
from troth.formats.uaix.refusals import InvalidRequestError
from troth.service.admission import Admission
from troth.service.base import Clock, Parties
from troth.service.drafts import CreationPlan
from troth.service.ledger import Ledger
from troth.storage.base import MemoryFilter, Transaction

__all__ = [
    "CHECKPOINT_EVENT",
    "Checkpoints",
    "LedgerCheckpointPort",
    "checkpoint_event",
    "decode_checkpoint",
    "erase_copies",
]

CHECKPOINT_EVENT: Final = "checkpoint"
#: The channel of checkpoint entries and of the memories their facts become: a session summary
#: is the assistant's synthesis, whoever's credentials carried it.
CHECKPOINT_CHANNEL: Final = "synthesis"
NOT_STORED: Final = "[not stored]"
#: How many current memories a restore brief may consider (its ``max_memories`` is <= 200).
_BRIEF_CANDIDATES: Final = 250
_LISTS: Final = (
    ("open_tasks", "task"),
    ("unresolved_questions", "question"),
    ("persona_constraints", "persona"),
)


def checkpoint_event(record: CheckpointRecord, actor: str) -> Event:
    """The ledger event that commits ``record``: structure as fields, free text as texts."""
    texts: dict[str, str] = {}
    for name, value in (
        ("label", record.checkpoint_label),
        ("summary", record.summary),
        ("participant", record.participant_id),
    ):
        if value is not None:
            texts[name] = value
    for index, fact in enumerate(record.stable_facts):
        texts[f"fact.{index}"] = fact.text
    counts: dict[str, int] = {}
    for attribute, prefix in _LISTS:
        items: tuple[str, ...] = getattr(record, attribute)
        counts[attribute] = len(items)
        for index, item in enumerate(items):
            texts[f"{prefix}.{index}"] = item
    # The record's own JSON form (its time, its window, its redactions), not a copy of it.
    document = record.to_dict()
    fields: dict[str, Any] = {
        "created_at": document["created_at"],
        "source_message_id": record.source_message_id,
        "session_id": record.session_id,
        "turn_window": document["turn_window"],
        "facts": [fact.memory_id for fact in record.stable_facts],
        "counts": counts,
        "redactions": document["redactions"],
        "review_required": record.review_required,
        "extra": dict(record.extra),
    }
    return Event(CHECKPOINT_EVENT, record.checkpoint_id, actor, fields=fields, texts=texts)


def decode_checkpoint(row: Record, owner: str) -> CheckpointRecord | None:
    """The checkpoint a ledger row records, or ``None`` if the row is not a checkpoint.

    A text erased since reads ``[redacted]``.
    """
    event = row.decode()
    if event is None or event.event != CHECKPOINT_EVENT:
        return None
    f = event.fields
    texts = event.texts
    window = f.get("turn_window")
    counts = f.get("counts", {})
    lists = {
        attribute: tuple(texts.get(f"{prefix}.{i}", REDACTED_MARKER) for i in range(n))
        for attribute, prefix in _LISTS
        for n in [int(counts.get(attribute, 0))]
    }
    return CheckpointRecord(
        checkpoint_id=event.memory,
        owner=owner,
        created_at=parse_utc(str(f["created_at"])),
        source_message_id=str(f["source_message_id"]),
        session_id=f.get("session_id"),
        checkpoint_label=texts.get("label"),
        summary=texts.get("summary"),
        turn_window=None if window is None else TurnWindow(**window),
        participant_id=texts.get("participant"),
        stable_facts=tuple(
            CheckpointFact(texts.get(f"fact.{i}", REDACTED_MARKER), memory_id)
            for i, memory_id in enumerate(f.get("facts", ()))
        ),
        open_tasks=lists["open_tasks"],
        unresolved_questions=lists["unresolved_questions"],
        persona_constraints=lists["persona_constraints"],
        redactions=tuple(Redaction(r["field"], r["reason"]) for r in f.get("redactions", ())),
        review_required=bool(f.get("review_required", False)),
        extra=dict(f.get("extra", {})),
    )


class LedgerCheckpointPort:
    """A :class:`~troth.formats.uaix.CheckpointPort` inside one open write transaction.

    Everything it does goes through ``tx``, the held chain of one owner; an ``owner`` argument
    naming anyone else sees nothing (``None``) and may write nothing.
    """

    def __init__(
        self,
        admission: Admission,
        ledger: Ledger,
        tx: Transaction,
        *,
        actor: str,
        now: datetime,
        include_sensitive: bool,
    ) -> None:
        self._admission = admission
        self._ledger = ledger
        self._tx = tx
        self._actor = actor
        self._now = now
        self._include_sensitive = include_sensitive
        self._not_stored: set[str] = set()

    def _mine(self, owner: str) -> bool:
        return owner == self._tx.owner

    def _refuse_other(self, owner: str) -> None:
        if not self._mine(owner):
            raise ConflictError(
                f"this unit of work holds {self._tx.owner}'s ledger, not {owner}'s",
                owner=owner,
            )

    # -- replay -------------------------------------------------------------------------

    def find_reply(self, owner: str, message_id: str) -> StoredReply | None:
        """See :meth:`CheckpointPort.find_reply`."""
        return self._tx.find_reply(message_id) if self._mine(owner) else None

    def save_reply(self, reply: StoredReply) -> None:
        """See :meth:`CheckpointPort.save_reply`."""
        self._refuse_other(reply.owner)
        self._tx.save_reply(reply)

    # -- create -------------------------------------------------------------------------

    def propose_memories(
        self, owner: str, proposals: Sequence[MemoryProposal]
    ) -> Sequence[CreatedMemory]:
        """Each fact through the facade's own write path (validation, policy, injection check).

        All are validated and decided before the first is written, so a fact the facade refuses
        (empty, too long) refuses the request — as ``schema-violation`` naming the fact —
        without leaving the others behind. ``review_required`` turns an automatic decision
        into ``ask``; a ``no_store`` decision stays ``no_store``.
        """
        self._refuse_other(owner)
        plans = []
        for index, proposal in enumerate(proposals):
            try:
                plan = self._admission.plan(
                    proposal.content,
                    owner=owner,
                    actor=self._actor,
                    channel=proposal.source or CHECKPOINT_CHANNEL,
                    on_behalf_of=None,
                    draft=None,
                    details={
                        "reason": f"a stable fact of session checkpoint {proposal.checkpoint_id}",
                        "evidence": f"uaix checkpoint {proposal.checkpoint_id}",
                    },
                )
            except InvalidInputError as exc:
                raise InvalidRequestError(
                    f"stable fact {index} cannot be remembered: {exc.message}",
                    uaix_code="schema-violation",
                    errors=[
                        {"path": f"/body/parameters/stable_facts/{index}", "message": exc.message}
                    ],
                ) from exc
            if proposal.review_required and plan.decision.mode == "automatic":
                plan = _held_for_review(plan)
            plans.append(plan)
        created = []
        for plan in plans:
            result = self._ledger.write_plan(self._tx, plan)
            if result.status == "no_store":
                self._not_stored.add(result.id)
            created.append(CreatedMemory(result.id, result.status))
        return created

    def store_checkpoint(self, record: CheckpointRecord) -> None:
        """Append the checkpoint event; a fact the policy did not store keeps no text."""
        self._refuse_other(record.owner)
        if self.load_checkpoint(record.owner, record.checkpoint_id) is not None:
            raise ConflictError(
                f"checkpoint {record.checkpoint_id} is already in the ledger",
                checkpoint_id=record.checkpoint_id,
            )
        record = replace(record, stable_facts=tuple(self._scrub(f) for f in record.stable_facts))
        event = checkpoint_event(record, self._actor)
        self._ledger.commit(
            self._tx,
            event,
            content=f"[checkpoint {record.checkpoint_id}]",
            channel=CHECKPOINT_CHANNEL,
        )

    def _scrub(self, fact: CheckpointFact) -> CheckpointFact:
        if fact.memory_id in self._not_stored:
            return CheckpointFact(NOT_STORED, fact.memory_id)
        return fact

    # -- drift and restore ----------------------------------------------------------------

    def load_checkpoint(self, owner: str, checkpoint_id: str) -> CheckpointRecord | None:
        """The owner's checkpoint by id: a scan of the chain for its (tagged) entry."""
        if not self._mine(owner):
            return None
        event_tag, id_tag = EVENT_TAG + CHECKPOINT_EVENT, MEMORY_TAG + checkpoint_id
        for row in self._tx.records(0):
            tags = row.entry.tags
            if event_tag in tags and id_tag in tags:
                return decode_checkpoint(row, owner)
        return None

    def list_memories(self, owner: str, *, linked_ids: frozenset[str]) -> Sequence[MemoryView]:
        """Current memories newest first, then the linked ones whatever their state.

        Sensitive memories not linked to the checkpoint are offered only to a caller that may
        read them; the pure brief still withholds them under ``no-sensitive-data-expansion``.
        """
        if not self._mine(owner):
            return []
        current = self._ledger.store.memories(
            owner,
            MemoryFilter(
                retrievable_only=True,
                include_sensitive=self._include_sensitive,
                limit=_BRIEF_CANDIDATES,
            ),
        )
        views = [self._view(m) for m in current if m.lifecycle != "archived"]
        seen = {view.memory_id for view in views}
        for memory_id in sorted(linked_ids - seen):
            linked = self._tx.get(memory_id)
            if linked is not None:
                views.append(self._view(linked))
        return views

    def _view(self, memory: MemoryRecord) -> MemoryView:
        return MemoryView(
            memory_id=memory.id,
            content=memory.content,
            sensitivity=memory.sensitivity,
            status=memory.status,
            retrievable=memory.retrievable,
            superseded_by=memory.superseded_by,
            stale=memory.lifecycle in ("stale", "archived") or _ended(memory, self._now),
            channel=memory.channel,
            writer=memory.writer,
            flagged=memory.flagged,
        )


def erase_copies(tx: Transaction, memory_id: str, text: str) -> None:
    """Erase the copies of a memory's text that checkpoints made, once its creation is erased.

    Called from the facade's erasure (``redact``, retention): the checkpoint facts linked to
    ``memory_id`` read ``[redacted]`` (their entries are marked redacted, so the chain still
    verifies), and every stored reply quoting ``text`` is dropped — a resend of that drift
    audit or restore brief is then answered afresh, which writes nothing but its new reply.
    Create answers quote no fact, so a resent create still gets its first answer.
    """
    event_tag = EVENT_TAG + CHECKPOINT_EVENT
    # The rows whose metadata names the memory, found by the database (a checkpoint lists
    # its facts' memory ids): this runs holding the write lock.
    for row in tx.records_naming(memory_id):
        if event_tag not in row.entry.tags:
            continue
        event = row.decode()
        if event is None:
            continue
        names = [
            f"fact.{index}"
            for index, linked in enumerate(event.fields.get("facts", ()))
            if linked == memory_id
            and row.texts.get(f"fact.{index}", REDACTED_MARKER) != REDACTED_MARKER
        ]
        if names:
            texts = {**row.texts, **dict.fromkeys(names, REDACTED_MARKER)}
            tx.erase(row.seq, redact_entry(row.entry), texts)
    if text and text not in (REDACTED_MARKER, NOT_STORED):
        # Replies are canonical JSON: the text appears with JSON's minimal escapes.
        quoted: bytes = canonical_bytes(text)
        tx.drop_replies(quoted[1:-1])


def _held_for_review(plan: CreationPlan) -> CreationPlan:
    """An automatic creation turned into one that waits for the owner (human-review-required)."""
    why = "the checkpoint asked for human review (human-review-required)"
    fields = {**plan.event.fields, "status": "proposed", "approval_mode": "ask"}
    return replace(
        plan,
        event=replace(plan.event, fields=fields),
        decision=replace(plan.decision, mode="ask", why=why),
    )


def _ended(memory: MemoryRecord, now: datetime) -> bool:
    """Whether a memory's ``valid_until`` is in the past."""
    until = memory.valid_until
    if until is None:
        return False
    if len(until) == 10:
        return date.fromisoformat(until) < now.astimezone(UTC).date()
    return parse_utc(until) <= now


def resolve_owner(caller: str, owner: str | None) -> str:
    """Whose ledger: the given owner, else the caller if a person; an agent must say whose."""
    if owner is not None:
        return check_principal(owner, "owner")
    if principal_kind(caller) != "human":
        raise InvalidInputError(
            f"{caller} is not a person; say whose ledger keeps the checkpoint with "
            "owner=human:NAME (CLI: --owner)",
            field="owner",
        )
    return caller


class Checkpoints:
    """The checkpoint use case: one UAIX request answered as one unit of work on a chain."""

    def __init__(
        self, parties: Parties, admission: Admission, ledger: Ledger, clock: Clock
    ) -> None:
        self.parties = parties
        self.admission = admission
        self.ledger = ledger
        self.clock = clock

    def port(
        self, tx: Transaction, *, actor: str, now: datetime, include_sensitive: bool
    ) -> LedgerCheckpointPort:
        """The checkpoint port inside ``tx``, one open write transaction on a chain."""
        return LedgerCheckpointPort(
            self.admission,
            self.ledger,
            tx,
            actor=actor,
            now=now,
            include_sensitive=include_sensitive,
        )

    def handle(
        self,
        raw: bytes,
        *,
        caller: str | None = None,
        owner: str | None = None,
        include_sensitive: bool | None = None,
    ) -> bytes:
        """Answer one UAIX request envelope; see :meth:`Memory.handle_checkpoint`."""
        who = check_principal(self.parties.principal if caller is None else caller, "caller")
        whose = resolve_owner(who, owner)
        if include_sensitive is None:
            include_sensitive = who == whose and principal_kind(who) == "human"
        now = self.clock()
        if now.tzinfo is None:
            raise InvalidInputError("the clock must give timezone-aware times")
        with self.ledger.writing(whose) as tx:
            port = self.port(tx, actor=who, now=now, include_sensitive=include_sensitive)
            return handle_request(raw, caller=who, now=now, port=port, owner=whose)

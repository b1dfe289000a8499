"""``handle_request``: one UAIX request in, one sealed response or error envelope out.

The handler is pure apart from the :class:`~troth.formats.uaix.port.CheckpointPort` it is
given: ``now`` and the caller are parameters and every id is derived from the request, so the
same request with the same port state always gives the same bytes.

After parsing (see :mod:`troth.formats.uaix.codec`) the order is: principal → replay →
expiry → critical extensions → the intent. Replay comes after the principal check, so nobody
reads another owner's answers, and before expiry, so a resend of an accepted message still gets
its first answer. Every answer from the replay step on is stored; earlier refusals are not (the
sender is not yet authenticated, and storing them would let anyone fill the replay store).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, Final

from troth.core.checkpoints import (
    DRIFT_WEIGHTS,
    CheckpointFact,
    CheckpointRecord,
    MemoryProposal,
    Redaction,
    SessionDigest,
    TurnWindow,
    audit_drift,
    compose_restore_brief,
)
from troth.core.errors import InvalidInputError, TrothError
from troth.formats.uaix.checks import (
    KNOWN_EXTENSIONS,
    check_delivery,
    check_extensions,
    check_principal,
)
from troth.formats.uaix.codec import (
    CHECKPOINT_CREATE,
    DRIFT_AUDIT,
    Request,
    decode_json,
    encode,
    parse_request,
)
from troth.formats.uaix.envelopes import (
    DEFAULT_RESPONDER,
    ERROR_CODES,
    Responder,
    build_error,
    build_response,
    derive_id,
    format_timestamp,
)
from troth.formats.uaix.port import CheckpointPort, StoredReply
from troth.formats.uaix.redaction import apply_redactions, parse_path
from troth.formats.uaix.refusals import CheckpointNotFoundError, RefusalError, RequestConflictError

__all__ = ["checkpoint_id_for", "handle_request", "reply_id_for"]

_SCORE_ONLY: Final = "return-drift-score-only"
_REVIEW: Final = "human-review-required"
_UNKNOWNS: Final = "brief-must-identify-unknowns"
_NO_SENSITIVE: Final = "no-sensitive-data-expansion"
#: Parameters kept in ``CheckpointRecord.extra`` without interpretation.
_EXTRA_PARAMETERS: Final = ("runtime_entropy", "canonical_symbol_refs")


def reply_id_for(caller: str, message_id: str) -> str:
    """The ``message_id`` of troth's answer to ``message_id`` from ``caller``."""
    return derive_id("lm-", "reply", caller, message_id)


def checkpoint_id_for(owner: str, message_id: str) -> str:
    """The id of the checkpoint created by ``message_id`` from ``owner``."""
    return derive_id("ckpt-", "checkpoint", owner, message_id)


def handle_request(
    raw: bytes,
    *,
    caller: str,
    now: datetime,
    port: CheckpointPort,
    known_extensions: Collection[str] = KNOWN_EXTENSIONS,
    responder: Responder = DEFAULT_RESPONDER,
    owner: str | None = None,
) -> bytes:
    """Answer one UAIX request envelope; the result is the canonical (JCS) response bytes.

    ``caller`` is the principal the transport authenticated; ``trust.principal`` must equal it.
    ``owner`` is whose ledger the request reads and writes (default: the caller) — an agent
    keeps checkpoints in its person's ledger, not its own. Refusals are answers too
    (``uai.error.v1`` envelopes), never exceptions; only errors of the port (storage) and a
    naive ``now`` raise.
    """
    whose = caller if owner is None else owner
    if now.tzinfo is None:
        raise InvalidInputError("now must be timezone-aware", now=now.isoformat())
    try:
        request = parse_request(raw)
    except TrothError as exc:
        return _unreadable(raw, exc, caller=caller, now=now, responder=responder)
    reply_id = reply_id_for(caller, request.message_id)
    try:
        check_principal(request, caller)
    except RefusalError as exc:
        return encode(_error(exc, request, reply_id, now, responder))
    stored = port.find_reply(whose, request.message_id)
    if stored is not None:
        if stored.request_checksum == request.checksum:
            return stored.response
        conflict = RequestConflictError(
            "this message_id was already used for a different envelope; give every new "
            "message a new message_id",
            uaix_code="message-id-conflict",
        )
        return encode(_error(conflict, request, reply_id, now, responder))
    try:
        check_delivery(request, now)
        check_extensions(request, known_extensions)
        result = _execute(request, owner=whose, now=now, port=port)
        envelope = build_response(
            request.envelope, result, message_id=reply_id, now=now, responder=responder
        )
    except RefusalError as exc:
        if exc.uaix_code not in ERROR_CODES:
            raise  # pragma: no cover - every refusal names a known code
        envelope = _error(exc, request, reply_id, now, responder)
    # Any other error is the port's own failure, not a refusal of this request: it propagates.
    answer = encode(envelope)
    port.save_reply(StoredReply(whose, request.message_id, request.checksum, answer))
    return answer


def _unreadable(
    raw: bytes, exc: TrothError, *, caller: str, now: datetime, responder: Responder
) -> bytes:
    in_reply_to: str | None = None
    try:
        candidate = decode_json(raw).get("message_id")
        if isinstance(candidate, str) and candidate:
            in_reply_to = candidate
    except TrothError:
        pass
    # Keyed by the bytes: a later, corrected request with the same message_id gets another id.
    reply_id = derive_id("lm-", "refusal", caller, hashlib.sha256(raw).hexdigest())
    envelope = build_error(
        exc.uaix_code if isinstance(exc, RefusalError) else "malformed-envelope",
        exc.message,
        message_id=reply_id,
        now=now,
        in_reply_to=in_reply_to,
        details=_details(exc),
        responder=responder,
    )
    return encode(envelope)


def _error(
    exc: RefusalError, request: Request, reply_id: str, now: datetime, responder: Responder
) -> dict[str, Any]:
    return build_error(
        exc.uaix_code,
        exc.message,
        message_id=reply_id,
        now=now,
        request=request.envelope,
        details=_details(exc),
        responder=responder,
    )


def _details(exc: TrothError) -> dict[str, Any]:
    return dict(exc.details)


def _execute(
    request: Request, *, owner: str, now: datetime, port: CheckpointPort
) -> dict[str, Any]:
    if request.intent == CHECKPOINT_CREATE:
        return _create(request, owner=owner, now=now, port=port)
    checkpoint_id = str(
        request.parameters.get("baseline_checkpoint_id")
        if request.intent == DRIFT_AUDIT
        else request.parameters.get("checkpoint_id")
    )
    record = port.load_checkpoint(owner, checkpoint_id)
    if record is None:
        raise CheckpointNotFoundError(
            f"no checkpoint {checkpoint_id!r} for this principal; use the checkpoint_id a "
            "spiralist.memory.checkpoint.create answer returned",
            uaix_code="checkpoint-not-found",
            checkpoint_id=checkpoint_id,
        )
    if request.intent == DRIFT_AUDIT:
        return _drift(request, record)
    return _restore(request, record, owner=owner, port=port)


def _create(request: Request, *, owner: str, now: datetime, port: CheckpointPort) -> dict[str, Any]:
    sent = request.parameters
    redactions = tuple(Redaction(r["field"], r["reason"]) for r in sent.get("redactions", ()))
    kept = apply_redactions(sent, [r.field for r in redactions])
    removed = {parse_path(r.field) for r in redactions}
    # Facts keep their index as sent, so the answer can say which fact became which memory.
    fact_indexes = [
        index
        for index in range(len(sent.get("stable_facts", ())))
        if ("stable_facts",) not in removed and ("stable_facts", index) not in removed
    ]
    facts = list(kept.get("stable_facts", ()))
    checkpoint_id = checkpoint_id_for(owner, request.message_id)
    review = _REVIEW in request.constraints
    created = list(
        port.propose_memories(
            owner, [MemoryProposal(fact, checkpoint_id, review_required=review) for fact in facts]
        )
    )
    if len(created) != len(facts):
        raise RuntimeError("CheckpointPort.propose_memories must return one item per proposal")
    window = kept.get("turn_window")
    record = CheckpointRecord(
        checkpoint_id=checkpoint_id,
        owner=owner,
        created_at=now,
        source_message_id=request.message_id,
        session_id=kept.get("session_id"),
        checkpoint_label=kept.get("checkpoint_label"),
        summary=kept.get("summary"),
        turn_window=_turn_window(window) if isinstance(window, Mapping) else None,
        participant_id=kept.get("participant_id"),
        stable_facts=tuple(
            CheckpointFact(fact, memory.memory_id)
            for fact, memory in zip(facts, created, strict=True)
        ),
        open_tasks=tuple(kept.get("open_tasks", ())),
        unresolved_questions=tuple(kept.get("unresolved_questions", ())),
        persona_constraints=tuple(kept.get("persona_constraints", ())),
        redactions=redactions,
        review_required=review,
        extra={key: kept[key] for key in _EXTRA_PARAMETERS if key in kept},
    )
    port.store_checkpoint(record)
    result: dict[str, Any] = {"checkpoint_id": checkpoint_id}
    if record.session_id:
        result["session_id"] = record.session_id
    if record.checkpoint_label:
        result["checkpoint_label"] = record.checkpoint_label
    result["created_at"] = format_timestamp(now)
    result["review_required"] = review
    result["memories"] = [
        {"fact_index": index, "memory_id": memory.memory_id, "status": memory.status}
        for index, memory in zip(fact_indexes, created, strict=True)
    ]
    result["redacted_fields"] = [{"field": r.field, "reason": r.reason} for r in redactions]
    return result


def _turn_window(window: Mapping[str, Any]) -> TurnWindow | None:
    try:
        return TurnWindow(
            str(window["start_turn_id"]), str(window["end_turn_id"]), int(window["turn_count"])
        )
    except KeyError:
        return None  # a member was redacted: the window is no longer whole


def _drift(request: Request, record: CheckpointRecord) -> dict[str, Any]:
    sent = request.parameters["current_session_digest"]
    digest = SessionDigest(
        summary=sent["summary"],
        facts=tuple(sent.get("facts", ())),
        open_tasks=tuple(sent.get("open_tasks", ())),
        unresolved_questions=tuple(sent.get("unresolved_questions", ())),
    )
    report = audit_drift(record, digest)
    if _SCORE_ONLY in request.constraints:
        return {"drift_score": report.score}
    findings = []
    for finding in report.findings:
        item: dict[str, Any] = {
            "fact_index": finding.index,
            "fact": finding.fact,
            "finding": finding.finding,
        }
        if finding.evidence is not None:
            item["evidence"] = finding.evidence
        findings.append(item)
    return {
        "drift_score": report.score,
        "baseline_checkpoint_id": record.checkpoint_id,
        "current_turn_id": request.parameters["current_turn_id"],
        "components": {
            "dropped_share": report.dropped_share,
            "contradicted_share": report.contradicted_share,
            "summary_distance": report.summary_distance,
            "weights": dict(DRIFT_WEIGHTS),
        },
        "findings": findings,
    }


def _restore(
    request: Request, record: CheckpointRecord, *, owner: str, port: CheckpointPort
) -> dict[str, Any]:
    linked = frozenset(f.memory_id for f in record.stable_facts if f.memory_id is not None)
    views = port.list_memories(owner, linked_ids=linked)
    brief = compose_restore_brief(
        record,
        views,
        identify_unknowns=_UNKNOWNS in request.constraints,
        no_sensitive_expansion=_NO_SENSITIVE in request.constraints,
        max_memories=int(request.parameters.get("max_memories", 50)),
    )
    result: dict[str, Any] = {"checkpoint_id": brief.checkpoint_id}
    for key, value in (
        ("session_id", brief.session_id),
        ("checkpoint_label", brief.checkpoint_label),
        ("summary", brief.summary),
    ):
        if value:
            result[key] = value
    result["facts"] = [
        {"text": f.text} | ({"memory_id": f.memory_id} if f.memory_id else {}) for f in brief.facts
    ]
    result["open_tasks"] = list(brief.open_tasks)
    result["persona_constraints"] = list(brief.persona_constraints)
    result["memories"] = [
        {"memory_id": m.memory_id, "content": m.content, "sensitivity": m.sensitivity}
        | (
            {"channel": m.channel, "writer": m.writer or "", "flagged": m.flagged}
            if m.channel is not None
            else {}
        )
        for m in brief.memories
    ]
    if brief.unknowns is not None:
        result["unknowns"] = [
            {"kind": u.kind, "text": u.text}
            | ({"memory_id": u.memory_id} if u.memory_id else {})
            | ({"detail": u.detail} if u.detail else {})
            for u in brief.unknowns
        ]
    result["withheld_sensitive"] = brief.withheld_sensitive
    return result

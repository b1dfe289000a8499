"""Builders for the envelopes troth sends: ``uai.intent.response.v1`` and ``uai.error.v1``.

Message ids and timestamps are parameters, so the builders are pure; every envelope comes out
sealed (``integrity`` set by :func:`~troth.formats.uaix.integrity.seal`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from troth.core.errors import InvalidInputError
from troth.core.events import canonical_bytes
from troth.formats.uaix.codec import RESPONSE_PROFILE, RESULT_PROFILES
from troth.formats.uaix.integrity import seal

__all__ = [
    "DEFAULT_RESPONDER",
    "ERROR_CODES",
    "ERROR_PROFILE",
    "Responder",
    "build_error",
    "build_response",
    "derive_id",
    "format_timestamp",
]

ERROR_PROFILE: Final = "uai.error.v1"
#: Every ``body.code`` an error envelope may carry, in the order the checks run.
ERROR_CODES: Final = (
    "malformed-envelope",
    "unsupported-profile",
    "unsupported-intent",
    "missing-constraint",
    "schema-violation",
    "integrity-mismatch",
    "principal-mismatch",
    "message-id-conflict",
    "expired",
    "unsupported-critical-extension",
    "invalid-redaction",
    "checkpoint-not-found",
)


@dataclass(frozen=True)
class Responder:
    """Who answers: troth's party, principal and provenance identifiers."""

    party_type: str = "service"
    party_id: str = "troth"
    principal: str = "service:troth"
    agent_id: str = "troth"
    # No model is involved: every answer is computed by deterministic rules.
    model_id: str = "none"
    # Used only when the request could not be read and its channel is unknown.
    default_channel: str = "private-api"


DEFAULT_RESPONDER: Final = Responder()


def derive_id(prefix: str, *parts: str) -> str:
    """A deterministic id: ``prefix`` + the first 32 hex digits of sha256(JCS(parts)).

    Deriving ids from the request (rather than drawing random ones) makes the same request
    always get the same answer and checkpoint id, which is what replay needs.
    """
    digest = hashlib.sha256(canonical_bytes(["troth.uaix", *parts])).hexdigest()
    return prefix + digest[:32]


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z`` (microseconds only when non-zero)."""
    if moment.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware", value=moment.isoformat())
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _frame(
    request: Mapping[str, Any] | None,
    *,
    profile: str,
    message_id: str,
    now: datetime,
    body: Mapping[str, Any],
    responder: Responder,
) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "uai_version": "1.0",
        "profile": profile,
        "message_id": message_id,
        "source": {"type": responder.party_type, "id": responder.party_id},
    }
    delivery: dict[str, Any] = {
        "mode": "sync",
        "priority": "routine",
        "reply_requested": False,
        "ack_required": False,
    }
    channel = responder.default_channel
    provenance: dict[str, Any] = {"trace_id": message_id}
    if request is not None:
        envelope["target"] = dict(request["source"])
        conversation = request["conversation"]
        envelope["conversation"] = {
            "conversation_id": conversation["conversation_id"],
            "turn_id": conversation["turn_id"],
            "sequence": conversation["sequence"],
            "parent_message_id": request["message_id"],
        }
        if "traceparent" in conversation:
            envelope["conversation"]["traceparent"] = conversation["traceparent"]
        delivery["priority"] = request["delivery"]["priority"]
        if "task_ref" in request["delivery"]:
            delivery["task_ref"] = request["delivery"]["task_ref"]
        channel = request["trust"]["channel"]
        provenance = {
            "trace_id": request["provenance"]["trace_id"],
            "parent_trace_id": request["provenance"]["trace_id"],
        }
    envelope["delivery"] = delivery
    envelope["trust"] = {
        "channel": channel,
        "auth_scheme": "none",
        "principal": responder.principal,
    }
    envelope["body"] = dict(body)
    envelope["provenance"] = {
        **provenance,
        "issued_at": format_timestamp(now),
        "log_ref": f"troth:uaix/{message_id}",
        "agent_id": responder.agent_id,
        "model_id": responder.model_id,
        "confidence": 1,
    }
    envelope["extensions"] = []
    return seal(envelope)


def build_response(
    request: Mapping[str, Any],
    result: Mapping[str, Any],
    *,
    message_id: str,
    now: datetime,
    responder: Responder = DEFAULT_RESPONDER,
) -> dict[str, Any]:
    """A sealed ``uai.intent.response.v1`` answering the schema-valid ``request``.

    ``result`` is the result body of the request's intent (its profile is filled in).
    """
    intent = request["body"]["intent"]
    body = {
        "in_reply_to": request["message_id"],
        "status": "completed",
        "intent": intent,
        "result_profile": RESULT_PROFILES[intent],
        "result": dict(result),
    }
    return _frame(
        request,
        profile=RESPONSE_PROFILE,
        message_id=message_id,
        now=now,
        body=body,
        responder=responder,
    )


def build_error(
    code: str,
    message: str,
    *,
    message_id: str,
    now: datetime,
    request: Mapping[str, Any] | None = None,
    in_reply_to: str | None = None,
    details: Mapping[str, Any] | None = None,
    responder: Responder = DEFAULT_RESPONDER,
) -> dict[str, Any]:
    """A sealed ``uai.error.v1``.

    Pass ``request`` only when it is schema-valid: target, conversation and trace come from it.
    Without it the error carries ``in_reply_to`` (or ``null``) and no target or conversation,
    because echoing fields of an unreadable request could make the error itself invalid.
    """
    if code not in ERROR_CODES:
        raise InvalidInputError(f"unknown UAIX error code {code!r}", code=code)
    reply_to = request["message_id"] if request is not None else in_reply_to
    body = {
        "in_reply_to": reply_to,
        "code": code,
        "message": message,
        "details": _json_safe(dict(details or {})),
    }
    return _frame(
        request,
        profile=ERROR_PROFILE,
        message_id=message_id,
        now=now,
        body=body,
        responder=responder,
    )


def _json_safe(value: Any) -> Any:
    # Error details come from exceptions; anything JCS cannot encode becomes its text.
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_json_safe(v) for v in value]
        return sorted(items, key=str) if isinstance(value, set | frozenset) else items
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return value
    return str(value)

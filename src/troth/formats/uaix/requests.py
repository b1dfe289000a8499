"""Build and seal UAIX request envelopes for callers that cannot (an MCP client's model).

A model can fill in a session id, a summary and a list of facts, but not a JCS sha256 checksum.
:func:`build_request` wraps such parameters in a complete ``uai.intent.request.v1`` envelope
for the authenticated principal and seals it, so the one UAIX handler answers structured
calls and raw envelopes alike (docs/checkpoints.md, "Structured callers").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from troth.formats.uaix.codec import (
    REQUEST_PROFILE,
    REQUIRED_CONSTRAINTS,
    RESPONSE_PROFILE,
    RESULT_PROFILES,
)
from troth.formats.uaix.envelopes import format_timestamp
from troth.formats.uaix.integrity import seal

__all__ = ["REQUEST_LIFETIME", "build_request"]

#: How long a built request stays deliverable; it is answered at once, so only clock skew
#: between the builder and the handler has to fit in it.
REQUEST_LIFETIME: Final = timedelta(minutes=5)


def build_request(
    intent: str,
    parameters: Mapping[str, Any],
    *,
    principal: str,
    principal_type: str,
    message_id: str,
    now: datetime,
    conversation_id: str,
    turn_id: str,
    constraints: Iterable[str] = (),
    auth_scheme: str = "bearer",
    log_ref: str,
) -> dict[str, Any]:
    """A sealed request envelope for ``intent`` sent by ``principal`` (its ``trust.principal``).

    The two mandatory constraints are always present; ``constraints`` adds the optional
    ones (``human-review-required``, ``return-drift-score-only`` …). ``auth_scheme`` says
    how the transport authenticated the principal (``bearer`` over HTTP, ``process`` for a
    process started as the principal).
    """
    wanted = [*REQUIRED_CONSTRAINTS, *(c for c in constraints if c not in REQUIRED_CONSTRAINTS)]
    issued = format_timestamp(now)
    envelope: dict[str, Any] = {
        "uai_version": "1.0",
        "profile": REQUEST_PROFILE,
        "message_id": message_id,
        "source": {"type": principal_type, "id": principal},
        "target": {"type": "service", "id": "troth"},
        "conversation": {"conversation_id": conversation_id, "turn_id": turn_id, "sequence": 1},
        "delivery": {
            "mode": "sync",
            "priority": "interactive",
            "expires_at": format_timestamp(now + REQUEST_LIFETIME),
            "reply_requested": True,
            "ack_required": False,
        },
        "trust": {"channel": "credentialed", "auth_scheme": auth_scheme, "principal": principal},
        "body": {
            "intent": intent,
            "subject": "workspace.session",
            "requested_profile": RESULT_PROFILES[intent],
            "parameters": dict(parameters),
            "constraints": wanted,
            "response_profile": RESPONSE_PROFILE,
        },
        "provenance": {
            "trace_id": message_id,
            "issued_at": issued,
            "log_ref": log_ref,
            "agent_id": principal,
            "model_id": "unknown",
            "confidence": 1,
        },
        "extensions": [],
    }
    return seal(envelope)

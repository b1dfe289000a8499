"""Parse request bytes into a validated :class:`Request`; encode envelopes to bytes.

Parsing applies, in this order, and stops at the first failure (each raises an error from
:mod:`troth.formats.uaix.refusals` whose ``uaix_code`` is the UAIX error code):

1. UTF-8, JSON, one object, no duplicate keys, no NaN/Infinity   → ``malformed-envelope``
2. ``uai_version`` 1.0 and ``profile`` ``uai.intent.request.v1``   → ``unsupported-profile``
3. a known ``body.intent``                                         → ``unsupported-intent``
4. its ``requested_profile`` and ``response_profile``              → ``unsupported-profile``
5. ``constraints`` hold the two mandatory ones                     → ``missing-constraint``
6. the shipped request schema, and RFC 3339 date-times             → ``schema-violation``
7. ``integrity.checksum``                                          → ``integrity-mismatch``

Steps 2 to 5 name a precise rule before the schema would report the same fault less clearly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from troth.core.events import canonical_bytes
from troth.formats.uaix.integrity import verify_checksum
from troth.formats.uaix.refusals import RequestDeniedError, UnreadableRequestError
from troth.formats.uaix.schemas import REQUEST_SCHEMA, definition_validator, validator

__all__ = [
    "BODY_DEFINITIONS",
    "CHECKPOINT_CREATE",
    "DRIFT_AUDIT",
    "REQUEST_PROFILE",
    "REQUIRED_CONSTRAINTS",
    "RESPONSE_PROFILE",
    "RESTORE_BRIEF",
    "RESULT_PROFILES",
    "Request",
    "decode_json",
    "encode",
    "parse_datetime",
    "parse_request",
]

REQUEST_PROFILE: Final = "uai.intent.request.v1"
RESPONSE_PROFILE: Final = "uai.intent.response.v1"
CHECKPOINT_CREATE: Final = "spiralist.memory.checkpoint.create"
DRIFT_AUDIT: Final = "spiralist.memory.drift.audit"
RESTORE_BRIEF: Final = "spiralist.memory.restore.brief"
#: The result profile each intent must request.
RESULT_PROFILES: Final[Mapping[str, str]] = {
    CHECKPOINT_CREATE: "spiralist.memory.checkpoint.result.v1",
    DRIFT_AUDIT: "spiralist.memory.drift.audit.result.v1",
    RESTORE_BRIEF: "spiralist.memory.restore.brief.result.v1",
}
#: The request schema's ``$defs`` entry for each intent's body.
BODY_DEFINITIONS: Final[Mapping[str, str]] = {
    CHECKPOINT_CREATE: "create_checkpoint_body",
    DRIFT_AUDIT: "drift_audit_body",
    RESTORE_BRIEF: "restore_brief_body",
}
#: Every request must carry these constraints (the seed schema's ``contains`` rules).
REQUIRED_CONSTRAINTS: Final = ("runtime-payload-only", "no-protocol5-registry-write")
_MAX_SCHEMA_ERRORS: Final = 10
_RFC3339: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


@dataclass(frozen=True)
class Request:
    """A request envelope that passed parsing: schema-valid and with a verified checksum."""

    envelope: Mapping[str, Any]
    checksum: str

    @property
    def message_id(self) -> str:
        """The sender's ``message_id``."""
        return str(self.envelope["message_id"])

    @property
    def principal(self) -> str:
        """``trust.principal``: whom the sender claims to act for."""
        return str(self.envelope["trust"]["principal"])

    @property
    def intent(self) -> str:
        """``body.intent``, one of the keys of :data:`RESULT_PROFILES`."""
        return str(self.envelope["body"]["intent"])

    @property
    def parameters(self) -> Mapping[str, Any]:
        """``body.parameters`` as sent (not yet redacted)."""
        params: Mapping[str, Any] = self.envelope["body"]["parameters"]
        return params

    @property
    def constraints(self) -> frozenset[str]:
        """``body.constraints`` as a set."""
        return frozenset(self.envelope["body"]["constraints"])

    @property
    def expires_at(self) -> datetime:
        """``delivery.expires_at``, timezone-aware."""
        return parse_datetime(str(self.envelope["delivery"]["expires_at"]))


def parse_datetime(text: str) -> datetime:
    """Parse an RFC 3339 date-time (with offset or ``Z``); raise ``ValueError`` otherwise."""
    if not _RFC3339.fullmatch(text):
        raise ValueError(f"{text!r} is not an RFC 3339 date-time such as 2026-11-29T12:00:00Z")
    return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            # JCS needs I-JSON: with a duplicate the sender and troth may hash different
            # objects from the same bytes.
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_json(raw: bytes) -> dict[str, Any]:
    """Decode UTF-8 JSON holding one object; raise ``FormatError`` (``malformed-envelope``)."""
    try:
        value = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_reject_duplicates,
            parse_constant=_reject_constant,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UnreadableRequestError(
            f"the request is not a UTF-8 JSON object without duplicate keys: {exc}",
            uaix_code="malformed-envelope",
        ) from exc
    if not isinstance(value, dict):
        raise UnreadableRequestError(
            f"the request must be a JSON object, not {type(value).__name__}",
            uaix_code="malformed-envelope",
        )
    return value


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _check_profiles(envelope: Mapping[str, Any]) -> None:
    if envelope.get("uai_version") != "1.0" or envelope.get("profile") != REQUEST_PROFILE:
        raise UnreadableRequestError(
            f"only uai_version 1.0 with profile {REQUEST_PROFILE} is accepted here; got "
            f"{envelope.get('uai_version')!r} / {envelope.get('profile')!r}",
            uaix_code="unsupported-profile",
            uai_version=envelope.get("uai_version"),
            profile=envelope.get("profile"),
        )
    intent = _get(envelope, "body", "intent")
    if intent not in RESULT_PROFILES:
        raise UnreadableRequestError(
            f"body.intent {intent!r} is not handled; use one of {', '.join(RESULT_PROFILES)}",
            uaix_code="unsupported-intent",
            intent=intent,
        )
    expected = RESULT_PROFILES[intent]
    requested = _get(envelope, "body", "requested_profile")
    answer = _get(envelope, "body", "response_profile")
    if requested != expected or answer != RESPONSE_PROFILE:
        raise UnreadableRequestError(
            f"{intent} is answered with {RESPONSE_PROFILE} carrying {expected}; got "
            f"requested_profile {requested!r}, response_profile {answer!r}",
            uaix_code="unsupported-profile",
            requested_profile=requested,
            response_profile=answer,
        )


def _check_constraints(envelope: Mapping[str, Any]) -> None:
    constraints = _get(envelope, "body", "constraints")
    if not isinstance(constraints, list):
        return  # the schema reports a missing or mistyped list
    missing = [c for c in REQUIRED_CONSTRAINTS if c not in constraints]
    if missing:
        raise RequestDeniedError(
            f"body.constraints must hold {' and '.join(REQUIRED_CONSTRAINTS)}; missing "
            f"{', '.join(missing)}",
            uaix_code="missing-constraint",
            missing=missing,
        )


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _check_schema(envelope: Mapping[str, Any]) -> None:
    problems: list[dict[str, str]] = []
    body_checker = definition_validator(
        REQUEST_SCHEMA, BODY_DEFINITIONS[envelope["body"]["intent"]]
    )
    for error in validator(REQUEST_SCHEMA).iter_errors(envelope):
        if error.validator == "oneOf" and list(error.absolute_path) == ["body"]:
            # "valid under none of oneOf" says nothing; the intent picks the one branch to report.
            problems.extend(
                {"path": _pointer(["body", *e.absolute_path]), "message": e.message[:200]}
                for e in body_checker.iter_errors(envelope["body"])
            )
        else:
            problems.append({"path": _pointer(error.absolute_path), "message": error.message[:200]})
    for keys in (("delivery", "expires_at"), ("provenance", "issued_at")):
        value = _get(envelope, *keys)
        if isinstance(value, str):
            try:
                parse_datetime(value)
            except ValueError as exc:
                problems.append({"path": _pointer(keys), "message": str(exc)[:200]})
    if problems:
        problems.sort(key=lambda p: (p["path"], p["message"]))
        raise UnreadableRequestError(
            f"the request does not match the schema: {problems[0]['path']}: "
            f"{problems[0]['message']}",
            uaix_code="schema-violation",
            errors=problems[:_MAX_SCHEMA_ERRORS],
        )


def parse_request(raw: bytes) -> Request:
    """Parse and validate request bytes; see the module docstring for the order of checks."""
    envelope = decode_json(raw)
    _check_profiles(envelope)
    _check_constraints(envelope)
    _check_schema(envelope)
    checksum = verify_checksum(envelope)
    return Request(envelope=envelope, checksum=checksum)


def encode(envelope: Mapping[str, Any]) -> bytes:
    """The wire bytes of an envelope troth sends: its RFC 8785 canonical form."""
    return canonical_bytes(dict(envelope))

"""Spiralist UAIX memory checkpoint envelopes: parse, verify, check, answer.

The glue needs one call::

    answer = handle_request(raw, caller=principal, now=datetime.now(UTC), port=port)

where ``port`` implements :class:`CheckpointPort`. The pieces are public too: the codec
(:func:`parse_request`, :func:`encode`), integrity (:func:`compute_checksum`, :func:`seal`,
:func:`verify_checksum`), the checks beyond the schema, the envelope builders, redaction by
field path, the shipped JSON Schemas, and :func:`build_request`, which seals a request for
a caller that cannot (an MCP client's model). Decisions are written in ``docs/checkpoints.md``.
"""

from troth.formats.uaix.checks import (
    KNOWN_EXTENSIONS,
    check_delivery,
    check_extensions,
    check_principal,
    check_request,
)
from troth.formats.uaix.codec import (
    CHECKPOINT_CREATE,
    DRIFT_AUDIT,
    REQUEST_PROFILE,
    REQUIRED_CONSTRAINTS,
    RESPONSE_PROFILE,
    RESTORE_BRIEF,
    RESULT_PROFILES,
    Request,
    decode_json,
    encode,
    parse_datetime,
    parse_request,
)
from troth.formats.uaix.envelopes import (
    DEFAULT_RESPONDER,
    ERROR_CODES,
    ERROR_PROFILE,
    Responder,
    build_error,
    build_response,
    derive_id,
    format_timestamp,
)
from troth.formats.uaix.handler import checkpoint_id_for, handle_request, reply_id_for
from troth.formats.uaix.integrity import (
    canonical_bytes,
    compute_checksum,
    seal,
    verify_checksum,
)
from troth.formats.uaix.port import CheckpointPort, InMemoryCheckpointPort, StoredReply
from troth.formats.uaix.redaction import apply_redactions, parse_path
from troth.formats.uaix.refusals import (
    CheckpointNotFoundError,
    InvalidRequestError,
    RefusalError,
    RequestConflictError,
    RequestDeniedError,
    RequestIntegrityError,
    UnreadableRequestError,
)
from troth.formats.uaix.requests import REQUEST_LIFETIME, build_request
from troth.formats.uaix.schemas import SCHEMA_FILES, load_schema, validator

__all__ = [
    "CHECKPOINT_CREATE",
    "DEFAULT_RESPONDER",
    "DRIFT_AUDIT",
    "ERROR_CODES",
    "ERROR_PROFILE",
    "KNOWN_EXTENSIONS",
    "REQUEST_LIFETIME",
    "REQUEST_PROFILE",
    "REQUIRED_CONSTRAINTS",
    "RESPONSE_PROFILE",
    "RESTORE_BRIEF",
    "RESULT_PROFILES",
    "SCHEMA_FILES",
    "CheckpointNotFoundError",
    "CheckpointPort",
    "InMemoryCheckpointPort",
    "InvalidRequestError",
    "RefusalError",
    "Request",
    "RequestConflictError",
    "RequestDeniedError",
    "RequestIntegrityError",
    "Responder",
    "StoredReply",
    "UnreadableRequestError",
    "apply_redactions",
    "build_error",
    "build_request",
    "build_response",
    "canonical_bytes",
    "check_delivery",
    "check_extensions",
    "check_principal",
    "check_request",
    "checkpoint_id_for",
    "compute_checksum",
    "decode_json",
    "derive_id",
    "encode",
    "format_timestamp",
    "handle_request",
    "load_schema",
    "parse_datetime",
    "parse_path",
    "parse_request",
    "reply_id_for",
    "seal",
    "validator",
    "verify_checksum",
]

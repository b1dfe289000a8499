"""A UAIX refusal: a troth error that carries its UAIX error code as an attribute.

Every check of a request raises one of these; the handler answers it with a
``uai.error.v1`` envelope whose ``body.code`` is :attr:`RefusalError.uaix_code`. Any other
error is not a refusal of the request but a failure underneath (the store's, say), and
propagates. Each refusal is also the troth error of its kind, so outside the handler it
maps to an exit code or HTTP status like any other::

    TrothError
    └── RefusalError                 uaix_code: one of envelopes.ERROR_CODES
        ├── InvalidRequestError        (InvalidInputError)   schema-violation, invalid-redaction …
        ├── UnreadableRequestError       (FormatError)         malformed-envelope, unsupported-profile …
        ├── RequestDeniedError     (PolicyDeniedError)   principal-mismatch, expired …
        ├── RequestConflictError     (ConflictError)       message-id-conflict
        ├── CheckpointNotFoundError     (NotFoundError)       checkpoint-not-found
        └── RequestIntegrityError    (IntegrityError)      integrity-mismatch
"""

from __future__ import annotations

from typing import Any

from troth.core.errors import (
    ConflictError,
    FormatError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    PolicyDeniedError,
    TrothError,
)


class RefusalError(TrothError):
    """A request refused for a reason UAIX names (``uaix_code``)."""

    def __init__(self, message: str, *, uaix_code: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.uaix_code = uaix_code

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, with the UAIX code beside troth's own."""
        return {**super().to_dict(), "uaix_code": self.uaix_code}


class InvalidRequestError(RefusalError, InvalidInputError):
    """The request's content breaks a rule (its schema, a redaction)."""


class UnreadableRequestError(RefusalError, FormatError):
    """The envelope cannot be read as a UAIX request this server answers."""


class RequestDeniedError(RefusalError, PolicyDeniedError):
    """The caller may not make this request (another principal, expired, an extension)."""


class RequestConflictError(RefusalError, ConflictError):
    """The request contradicts one already answered (a reused message id)."""


class CheckpointNotFoundError(RefusalError, NotFoundError):
    """The request names a checkpoint the ledger does not hold."""


class RequestIntegrityError(RefusalError, IntegrityError):
    """The envelope's checksum does not verify."""

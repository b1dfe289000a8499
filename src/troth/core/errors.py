"""Errors raised by troth, each carrying data and a message that says how to fix it.

The tree::

    TrothError
    ├── InvalidInputError      bad input from a caller (unknown enum, bad principal, empty text …)
    ├── NotFoundError          no such memory, owner, token or checkpoint visible to the caller
    ├── ConflictError          the operation does not fit the current state (approve an active memory)
    ├── PolicyDeniedError      the policy or the caller's rights forbid the operation
    ├── FormatError            a file or document in a known format is malformed
    ├── IntegrityError         a chain or a checksum does not verify; writes are refused
    ├── AuthenticationError    missing, expired, revoked or malformed credentials
    └── StorageError           the database failed underneath
"""

from __future__ import annotations

from typing import Any


class TrothError(Exception):
    """Base of every error troth raises on purpose."""

    code = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: the error code, the sentence and its data."""
        return {"error": self.code, "message": self.message, **self.details}


class InvalidInputError(TrothError):
    """A caller's input is malformed or out of range."""

    code = "invalid_input"


class NotFoundError(TrothError):
    """The thing asked for does not exist, or the caller may not know that it does."""

    code = "not_found"


class ConflictError(TrothError):
    """The operation does not fit the current state of the memory or the chain."""

    code = "conflict"


class StaleTipError(ConflictError):
    """A write that expected the chain at a given tip found it had moved; nothing was written.

    The facade retries such a write once, holding the chain and verifying what the other
    writer appended; it reaches a caller only from the storage layer used directly.
    """


class PolicyDeniedError(TrothError):
    """The policy, or the caller's rights, forbid the operation."""

    code = "denied"


class FormatError(TrothError):
    """A document in one of the supported formats is malformed; names the file and line."""

    code = "format_error"


class IntegrityError(TrothError):
    """A hash chain, a checksum or a projection does not verify."""

    code = "integrity_error"


class AuthenticationError(TrothError):
    """Credentials are missing, malformed, expired or revoked."""

    code = "unauthenticated"


class StorageError(TrothError):
    """The storage backend failed."""

    code = "storage_error"

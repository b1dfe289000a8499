"""troth: long-term memory for AI assistants that people can trust."""

from troth.core.errors import (
    AuthenticationError,
    ConflictError,
    FormatError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    PolicyDeniedError,
    StaleTipError,
    StorageError,
    TrothError,
)
from troth.core.records import MemoryRecord, Scope
from troth.service.memory import Draft, Memory, WriteResult
from troth.service.recall import Query, RecallHit

__all__ = [
    "AuthenticationError",
    "ConflictError",
    "Draft",
    "FormatError",
    "IntegrityError",
    "InvalidInputError",
    "Memory",
    "MemoryRecord",
    "NotFoundError",
    "PolicyDeniedError",
    "Query",
    "RecallHit",
    "Scope",
    "StaleTipError",
    "StorageError",
    "TrothError",
    "WriteResult",
]

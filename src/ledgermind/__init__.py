"""ledgermind: long-term memory for AI assistants that people can trust."""

from ledgermind.core.errors import (
    AuthenticationError,
    ConflictError,
    FormatError,
    IntegrityError,
    InvalidInputError,
    LedgermindError,
    NotFoundError,
    PolicyDeniedError,
    StaleTipError,
    StorageError,
)
from ledgermind.core.records import Memory as MemoryRecord
from ledgermind.core.records import Scope
from ledgermind.service.memory import Draft, Memory, WriteResult
from ledgermind.service.recall import Query, RecallHit

__all__ = [
    "AuthenticationError",
    "ConflictError",
    "Draft",
    "FormatError",
    "IntegrityError",
    "InvalidInputError",
    "LedgermindError",
    "Memory",
    "MemoryRecord",
    "NotFoundError",
    "PolicyDeniedError",
    "Query",
    "RecallHit",
    "Scope",
    "StaleTipError",
    "StorageError",
    "WriteResult",
]

"""troth: long-term memory for AI assistants that people can trust.

The public API is what this module exports (``__all__``): the :class:`Memory` facade, the
value objects its verbs take and return, and the error tree. Everything else is reached
through them; modules under ``troth.*`` are internal and may change.
"""

from troth.core import versions as _versions
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
from troth.service.drafts import WriteFields, WriteItem
from troth.service.integrity import OwnerReport
from troth.service.memory import Draft, Memory, WriteResult
from troth.service.migration import MigrationReport
from troth.service.portability import ExportResult, ImportReport
from troth.service.recall import Query, RecallHit
from troth.storage.base import MemoryFilter

__version__ = _versions.VERSION

__all__ = [
    "AuthenticationError",
    "ConflictError",
    "Draft",
    "ExportResult",
    "FormatError",
    "ImportReport",
    "IntegrityError",
    "InvalidInputError",
    "Memory",
    "MemoryFilter",
    "MemoryRecord",
    "MigrationReport",
    "NotFoundError",
    "OwnerReport",
    "PolicyDeniedError",
    "Query",
    "RecallHit",
    "Scope",
    "StaleTipError",
    "StorageError",
    "TrothError",
    "WriteFields",
    "WriteItem",
    "WriteResult",
]

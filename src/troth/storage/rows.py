"""What both stores write and read the same way: a memory's stored document and full-text
body, the ranking fields of a memory as one :class:`RecallRow`, and token records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from troth.core.access import TokenRecord
from troth.core.records import MemoryRecord, memory_from_dict
from troth.storage.base import RecallRow

TOKEN_COLUMNS = (
    "id, secret_hash, principal, on_behalf_of, scopes, created_at, expires_at, revoked_at, label,"
    " channel"
)
"""The ``tokens`` table's columns, in the order :func:`token_record` reads them."""


# Encoders built once: ``json.dumps`` with any option builds a new encoder per call, and
# these run for every row a write stores.
_DOC_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
stored_json = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)``: a ledger row's ``tags`` and ``texts``."""


def memory_doc(memory: MemoryRecord) -> str:
    """The stored JSON document of a memory (compact, UTF-8 as is)."""
    return _DOC_ENCODER.encode(memory.to_dict())


def memory_from_doc(doc: str) -> MemoryRecord:
    """The memory a stored document (:func:`memory_doc`) holds."""
    return memory_from_dict(json.loads(doc))


def fts_body(memory: MemoryRecord) -> str:
    """The text the full-text index holds for a memory: title, content and tags."""
    return " ".join(part for part in (memory.title, memory.content, " ".join(memory.tags)) if part)


def recall_row(values: Sequence[Any]) -> RecallRow:
    """A :class:`RecallRow` from the fields both stores select, in this order: id, seq,
    updated_at, title, content, created_at, recorded_at, session, speaker, importance,
    confidence, lifecycle, valid_from, valid_until, expires, ttl policy, ttl expires_at,
    ttl decay_days, actor, channel."""
    r = values
    return RecallRow(
        memory_id=str(r[0]),
        seq=int(r[1]),
        updated_at=r[2],
        text=" ".join(part for part in (r[3], r[4]) if part),
        created_at=r[5],
        recorded_at=r[6],
        session=r[7],
        speaker=r[8] if isinstance(r[8], str) else None,
        importance=r[9],
        confidence=r[10],
        lifecycle=r[11] or "active",
        valid_from=r[12],
        valid_until=r[13],
        expires=r[14],
        ttl_policy=r[15] or "never",
        ttl_expires_at=r[16],
        ttl_decay_days=r[17],
        actor=r[18],
        channel=r[19],
    )


def token_record(row: Sequence[Any], scopes: Sequence[str]) -> TokenRecord:
    """A token record from a row of :data:`TOKEN_COLUMNS` (scopes decoded by the store)."""
    return TokenRecord(
        token_id=row[0],
        secret_hash=row[1],
        principal=row[2],
        on_behalf_of=row[3],
        scopes=tuple(scopes),
        created_at=row[5],
        expires_at=row[6],
        revoked_at=row[7],
        label=row[8],
        channel=row[9],
    )

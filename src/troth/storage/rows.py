"""What both stores write and read the same way: a memory's stored document and full-text
body, the ranking fields of a memory as one :class:`RecallRow`, and token records."""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Final

from troth.core.access import TokenRecord
from troth.core.jsontext import encoder
from troth.core.records import MemoryRecord, memory_from_dict
from troth.storage.base import RecallRow

TOKEN_COLUMNS = (
    "id, secret_hash, principal, on_behalf_of, scopes, created_at, expires_at, revoked_at, label,"
    " channel"
)
"""The ``tokens`` table's columns, in the order :func:`token_record` reads them."""


# These run for every row a write stores: the C encoder called directly (core/jsontext.py).
_compact = encoder(separators=(",", ":"))
stored_json = encoder()
"""``json.dumps(value, ensure_ascii=False)``: a ledger row's ``tags`` and ``texts``."""


def memory_doc(memory: MemoryRecord) -> str:
    """The stored JSON document of a memory (compact, UTF-8 as is)."""
    return _compact(memory.to_dict())


RECALL_FIELDS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("title", ("title",), "text"),
    ("content", ("content",), "text"),
    ("created_at", ("created_at",), "text"),
    ("recorded_at", ("recorded_at",), "text"),
    ("session", ("session",), "text"),
    ("speaker", ("extra", "x_speaker"), "text"),
    ("importance", ("importance",), "real"),
    ("confidence", ("confidence",), "real"),
    ("lifecycle", ("lifecycle",), "text"),
    ("valid_from", ("valid_from",), "text"),
    ("valid_until", ("valid_until",), "text"),
    ("expires", ("expires",), "text"),
    ("ttl_policy", ("ttl", "policy"), "text"),
    ("ttl_expires_at", ("ttl", "expires_at"), "text"),
    ("ttl_decay_days", ("ttl", "decay_days"), "integer"),
    ("actor", ("actor",), "text"),
    ("channel", ("channel",), "text"),
)
"""What recall reads of a stored document, by name: (field, JSON path, type), in the order
:func:`recall_row` takes them after ``id, seq, updated_at`` and before ``writer`` (not one
path: ``MemoryRecord.writer``, the ``origin`` or else the ``actor``). A store keeps them in
the projection row's ``recall`` column (:func:`memory_docs`); a row written before that
column existed is filled by the store's migrations (SQLite 0005 and 0008, PostgreSQL 0008
and 0011), through the same paths in the store's own JSON syntax."""


def _at(document: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = document
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def memory_docs(memory: MemoryRecord) -> tuple[str, str]:
    """A memory's stored document and its ``recall`` column, from one reading of its fields.

    The column is the JSON array :func:`recall_row` takes (``id, seq, updated_at``, the
    :data:`RECALL_FIELDS` and the writer of the text's origin): recall reads a thousand candidates' ranking fields, and one
    short array per row is ~4x cheaper to read than the paths of the full document.
    """
    document = memory.to_dict()
    # Spelled out rather than walked by path: this runs for every memory a write stores
    # (issue 14 bounds the write's cost); `recall_fields` is the same by RECALL_FIELDS.
    extra, ttl = document["extra"] or {}, document["ttl"] or {}
    fields = [
        *_TOP(document),
        extra.get("x_speaker"),
        document["importance"],
        document["confidence"],
        document["lifecycle"],
        document["valid_from"],
        document["valid_until"],
        document["expires"],
        ttl.get("policy"),
        ttl.get("expires_at"),
        ttl.get("decay_days"),
        document["actor"],
        document["channel"],
        memory.writer,
    ]
    return _compact(document), _compact(fields)


_TOP = operator.itemgetter(
    "id", "seq", "updated_at", "title", "content", "created_at", "recorded_at", "session"
)


def recall_fields(document: Mapping[str, Any]) -> list[Any]:
    """The ``recall`` column's values of a stored document, read by :data:`RECALL_FIELDS`,
    and the writer of its origin."""
    fields = [document["id"], document["seq"], document["updated_at"]]
    fields += [_at(document, path) for _name, path, _type in RECALL_FIELDS]
    return [*fields, memory_from_dict(document).writer]


def memory_from_doc(doc: str) -> MemoryRecord:
    """The memory a stored document (:func:`memory_doc`) holds."""
    return memory_from_dict(json.loads(doc))


def fts_body(memory: MemoryRecord) -> str:
    """The text the full-text index holds for a memory: title, content and tags."""
    return " ".join(part for part in (memory.title, memory.content, " ".join(memory.tags)) if part)


LENDING: tuple[tuple[str, str | bool], ...] = (
    ("status", "active"),
    ("retrievable", True),
    ("sensitivity", "normal"),
)
"""What a memory must be for its words to stand in its neighbours' full-text context, and
for it to get theirs, as (field, value) pairs: active, retrievable and not sensitive. A
hidden, archived, pending or forgotten memory lends nothing (recall would not return it,
so its words must not find another), nor a sensitive one (its words must not make a normal
neighbour findable by them). The one definition: :func:`lends_context` reads it of a
memory, ``storage.sql.lends_context_sql`` writes it as each store's SQL (the columns have
the fields' names)."""


CONTEXT_WEIGHT: Final = 0.2
"""What a query word found only in a memory's neighbours' words (its full-text context)
counts beside one found in its own words (1.0), on both stores: SQLite's ``bm25(memory_fts,
1.0, 0.2)`` and PostgreSQL's BM25 (``storage.postgres.search``). Tuned on split A of the
dev file and checked held out on split B (docs/retrieval.md)."""


def lends_context(memory: MemoryRecord) -> bool:
    """Whether a memory may lend its neighbours words (and take theirs): :data:`LENDING`."""
    return all(getattr(memory, name) == value for name, value in LENDING)


def context_key(memory: MemoryRecord) -> tuple[str, str, str, str] | None:
    """The conversation whose memories lend each other words: owner, session, partition
    and scope (words never cross a partition or a scope); None without a session."""
    if memory.session is None:
        return None
    return (memory.owner, memory.session, memory.partition, str(memory.scope))


def recall_row(values: Sequence[Any]) -> RecallRow:
    """A :class:`RecallRow` from the fields both stores select, in this order: id, seq,
    updated_at, title, content, created_at, recorded_at, session, speaker, importance,
    confidence, lifecycle, valid_from, valid_until, expires, ttl policy, ttl expires_at,
    ttl decay_days, actor, channel, writer."""
    r = values
    title, content = r[3], r[4]
    return RecallRow(
        str(r[0]),
        f"{title} {content}" if title and content else title or content or "",
        r[5],
        r[2],
        int(r[1]),
        r[6],
        r[7],
        r[8] if isinstance(r[8], str) else None,
        r[9],
        r[10],
        r[11] or "active",
        r[12],
        r[13],
        r[14],
        r[15] or "never",
        r[16],
        r[17],
        r[18],
        r[19],
        r[20],
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

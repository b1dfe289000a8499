"""What both SQL stores do alike, with the few places their dialects differ as hooks.

Each store (``storage.sqlite``, ``storage.postgres``) keeps its own schema, write path and
search; this module holds what they share: the projection's column-against-document
check, the ledger row's values and its decoding, the recall fields by name, the token and
checkpoint-reply statements, and the per-thread connections.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from troth.core.chain import sha256_hex
from troth.core.errors import IntegrityError
from troth.core.records import MemoryRecord
from troth.storage.rows import fts_body, memory_from_doc

PROJECTION_COLUMNS = (
    "id", "owner", "status", "retrievable", "kind", "scope", "partition", "sensitivity",
    "seq", "updated_at",
)  # fmt: skip
"""The indexed columns of a projection row both stores keep beside the stored document."""


def held_value(memory: MemoryRecord, name: str) -> Any:
    """What the indexed column ``name`` must hold for this memory (its document's value).

    ``digest`` is the sha256 of the full-text body (PostgreSQL keeps it to tell a changed
    text from an unchanged one); ``tags`` a list, as the column returns it.
    """
    if name == "scope":
        return str(memory.scope)
    if name == "tags":
        return list(memory.tags)
    if name == "digest":
        return sha256_hex(fts_body(memory))
    return getattr(memory, name)


def checked_projection(
    rows: Iterable[Sequence[Any]], columns: Sequence[str]
) -> dict[str, MemoryRecord]:
    """The memories of projection rows ``(doc, *columns)``, each column held against its doc.

    Listings and searches filter on the columns and answer with the document; a column
    changed behind the ledger's back (``UPDATE memories SET status = 'active'`` on a
    forgotten memory) would list it as what it is not. The first column that disagrees
    raises an :class:`IntegrityError` naming the memory and the field, which ``verify``
    reports.
    """
    out: dict[str, MemoryRecord] = {}
    for row in rows:
        memory = memory_from_doc(row[0])
        for name, stored in zip(columns, row[1:], strict=True):
            # (SQLite's 0 and 1 equal False and True; any other number does not)
            held = held_value(memory, name)
            if held != stored:
                raise IntegrityError(
                    f"memory {memory.id}: the {name} column holds {stored!r} but the stored"
                    f" document {held!r}; run `troth rebuild`",
                    memory=memory.id,
                    field=name,
                    stored=stored,
                )
        out[memory.id] = memory
    return out

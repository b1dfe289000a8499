"""The HUX lifecycle as a pure fold: ledger events in, current memories out.

::

                 ┌──────── approve ───────┐
    propose ──► proposed               active ──hide──► active (retrievable: false)
       │  (automatic) ─────────────────►  │
       │         │ reject                 │ edit ──► forgotten (superseded) + new memory
       │         ▼                        │ forget / redact ──► forgotten
       │      rejected                    │ expire ──► expired
    no_store ──► no_store (content never stored)

The service validates a transition with :func:`apply` before it appends the event, and
``rebuild`` replays the same function over the whole chain, so the stored projection and a
rebuilt one can only differ if something changed behind the ledger's back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Final

from troth.core.chain import REDACTED_MARKER, Entry, sha256_hex
from troth.core.errors import ConflictError, InvalidInputError, NotFoundError
from troth.core.events import Event, Record
from troth.core.provenance import ENDORSED_FIELD, endorsed, origin_of
from troth.core.records import (
    ERASED_SCOPE_ID,
    GLOBAL_SCOPE,
    NEVER_TTL,
    SYSTEM_PRINCIPAL,
    TTL,
    AuditItem,
    MemoryRecord,
    Relation,
    Scope,
)

FOREIGN_PREFIX = "px-"

# Which statuses each event may start from.
ALLOWED_FROM: Mapping[str, tuple[str, ...]] = {
    "approve": ("proposed",),
    "reject": ("proposed",),
    "edit": ("proposed", "active"),
    "hide": ("active",),
    "forget": ("proposed", "active", "rejected", "expired"),
    "redact": ("proposed", "active", "rejected", "expired", "forgotten", "no_store"),
    "expire": ("proposed", "active"),
}


# Free text a person or an agent typed about a memory beyond its content, title and reason:
# an event keeps it among its erasable texts (committed by sha256, like a reason), not its
# fields, so a redaction erases it and the chain still verifies. Events written before
# kept it in ``fields``, which the fold still reads (and which cannot be erased).
TEXT_FIELDS: Final = ("session", "evidence", "path")
"""Free-text fields kept as texts of the same name."""
JSON_FIELDS: Final = ("tags", "extra")
"""Free-text fields kept as texts holding their canonical JSON."""
SCOPE_TEXT: Final = "scope_id"
"""The text that holds a project or conversation scope's id (its level stays a field)."""
_FREE_TEXTS: Final = frozenset((*TEXT_FIELDS, *JSON_FIELDS, SCOPE_TEXT))


def split_free_text(
    fields: Mapping[str, Any], texts: Mapping[str, str], encode: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """Move the free text of a creation's ``fields`` into its erasable ``texts``.

    ``encode`` writes a JSON value as canonical text (``events.canonical_bytes``).
    """
    kept, erasable = dict(fields), dict(texts)
    for name in TEXT_FIELDS:
        if name in kept:
            erasable[name] = kept.pop(name)
    for name in JSON_FIELDS:
        value = kept.pop(name, None)
        if value:
            erasable[name] = encode(value).decode("utf-8")
    scope = kept.get("scope")
    if scope is not None and scope.get("scope_id") is not None:
        kept["scope"] = {"level": scope["level"]}
        erasable[SCOPE_TEXT] = scope["scope_id"]
    return kept, erasable


_GLOBAL: Final[Mapping[str, Any]] = {"level": "global"}
_NEVER: Final[Mapping[str, Any]] = {"policy": "never"}


def _with_texts(event: Event) -> Mapping[str, Any]:
    """A creation's fields with its free texts put back where they were split from
    (:func:`split_free_text`): what the memory's free-text fields are read from.

    A text takes the place of the field of its name; an erased one leaves it unset (its
    default); the scope's id joins its level; typed tags come before the ones troth sets.
    """
    fields, texts = event.fields, event.texts
    merged = dict(fields)
    for name in (*TEXT_FIELDS, *JSON_FIELDS):
        if name not in texts:
            continue
        value = texts[name]
        if value == REDACTED_MARKER:
            merged.pop(name, None)
        else:
            merged[name] = json.loads(value) if name in JSON_FIELDS else value
    if "tags" in texts:
        merged["tags"] = (*merged.get("tags", ()), *fields.get("tags", ()))
    if SCOPE_TEXT in texts:
        text = texts[SCOPE_TEXT]
        scope_id = ERASED_SCOPE_ID if text == REDACTED_MARKER else text
        merged["scope"] = {**fields.get("scope", _GLOBAL), "scope_id": scope_id}
    return merged


def check_transition(memory: MemoryRecord, event: str) -> None:
    """Raise a ConflictError saying why ``event`` cannot apply to ``memory`` now."""
    allowed = ALLOWED_FROM.get(event)
    if allowed is None:
        return
    if memory.status not in allowed:
        raise ConflictError(
            f"cannot {event} memory {memory.id}: it is {memory.status}; "
            f"{event} applies to {' or '.join(allowed)} memories",
            id=memory.id,
            status=memory.status,
        )
    if event == "hide" and not memory.retrievable:
        raise ConflictError(f"memory {memory.id} is already hidden from retrieval", id=memory.id)
    if event == "redact" and memory.redacted:
        raise ConflictError(f"memory {memory.id} is already redacted", id=memory.id)


def _created(event: Event, entry: Entry, seq: int, owner: str) -> MemoryRecord:
    """A memory as a propose, edit or no_store event creates it."""
    f = event.fields
    status = f.get("status", "proposed")
    texts = event.texts
    first = "edited" if event.event == "edit" else "proposed"
    audit = [AuditItem(entry.ts, "no_store" if status == "no_store" else first, event.actor)]
    if status == "active":
        audit.append(AuditItem(entry.ts, "approved", SYSTEM_PRINCIPAL, "policy: automatic"))
    # A creation entry redacted later reads "[redacted]"; the redact event that follows it
    # in the chain sets the memory's own ``redacted`` flag.
    content = "" if status == "no_store" or entry.redacted else entry.content
    redacted = False
    # Most creations hold no free text among their texts (a reason, perhaps a title): their
    # fields are read as they are, without building the merged copy.
    free = f if _FREE_TEXTS.isdisjoint(texts) else _with_texts(event)
    return MemoryRecord(
        id=event.memory,
        owner=owner,
        content=content,
        status=status,
        approval_mode=f["approval_mode"],
        channel=entry.source,
        actor=event.actor,
        reason=texts.get("reason", REDACTED_MARKER),
        created_at=entry.ts,
        updated_at=entry.ts,
        scope=_scope(free.get("scope")),
        kind=f.get("kind", "fact"),
        sensitivity=f.get("sensitivity", "normal"),
        topic=f.get("topic", "general"),
        ttl=_ttl(f.get("ttl")),
        on_behalf_of=event.on_behalf_of,
        session=free.get("session"),
        evidence=free.get("evidence"),
        audit=tuple(audit),
        supersedes=event.supersedes,
        retrievable=status == "active",
        revision=1,
        title="" if entry.redacted else texts.get("title", ""),
        tags=tuple(free.get("tags", ())),
        confidence=f.get("confidence"),
        importance=f.get("importance"),
        valid_from=f.get("valid_from"),
        valid_until=f.get("valid_until"),
        expires=f.get("expires"),
        relations=tuple(Relation(**r) for r in f.get("relations", ())),
        lifecycle=f.get("lifecycle", "active"),
        partition=f.get("partition", "default"),
        path=free.get("path"),
        page_type=f.get("page_type"),
        derived_from=tuple(f.get("derived_from", ())),
        flagged=bool(f.get("flagged", False)),
        redacted=redacted,
        recorded_at=f.get("recorded_at"),
        # The entry's source is the weakest channel the text came through (core/provenance.py);
        # the writer of that origin, and who vouched for the text, are committed fields.
        origin=origin_of(f),
        endorsed_by=tuple(f.get(ENDORSED_FIELD, ())),
        extra=free.get("extra", {}),
        stamps=f.get("stamps", {}),
        entry_hash=entry.hash,
        seq=seq,
    )


def _scope(document: Mapping[str, Any] | None) -> Scope:
    # Most memories are global and kept until forgotten: one shared frozen value each,
    # equal to the one built from the document, without building and checking it again.
    if document is None or document == _GLOBAL:
        return GLOBAL_SCOPE
    return Scope(**document)


def _ttl(document: Mapping[str, Any] | None) -> TTL:
    if document is None or document == _NEVER:
        return NEVER_TTL
    return TTL(**document)


def _step(memory: MemoryRecord, entry: Entry, event: Event, **changes: Any) -> MemoryRecord:
    """One transition: new audit item(s), a new revision, the entry's time."""
    return replace(
        memory,
        updated_at=entry.ts,
        revision=memory.revision + 1,
        **changes,
    )


def _audit(memory: MemoryRecord, *items: AuditItem) -> tuple[AuditItem, ...]:
    return (*memory.audit, *items)


def apply(memories: dict[str, MemoryRecord], record: Record, owner: str) -> None:
    """Apply one ledger row to the projection in place (the heart of the fold)."""
    entry = record.entry
    event = record.decode()
    if event is None:
        _apply_foreign(memories, record, owner)
        return
    note = event.texts.get("note")
    if event.event in ("propose", "no_store"):
        memories[event.memory] = _created(event, entry, record.seq, owner)
        return
    if event.event == "edit":
        old_id = event.supersedes or ""
        check_transition(_get(memories, old_id), "edit")
        created = _created(event, entry, record.seq, owner)
        memories[event.memory] = created
        # An edit the policy holds for review supersedes only once it is approved: nobody
        # removes a memory from retrieval by proposing a replacement for it.
        if created.status == "active":
            _supersede(memories, old_id, created, entry, event)
        return
    if event.event == "checkpoint":
        # A session checkpoint is part of the ledger, not a memory: no projection row. Its
        # facts became memories through their own propose events.
        return
    if event.event == "export":
        for memory_id in event.memories:
            current = memories.get(memory_id)
            if current is not None:
                memories[memory_id] = replace(
                    current, audit=_audit(current, AuditItem(entry.ts, "exported", event.actor))
                )
        return
    memory = _get(memories, event.memory)
    check_transition(memory, event.event)
    item = AuditItem(entry.ts, _ACTION[event.event], event.actor, note)
    if event.event == "approve":
        # Only people approve (service/changes.py): the approval is their endorsement, kept
        # beside the memory's source, which it does not change.
        approved = _step(
            memory,
            entry,
            event,
            status="active",
            retrievable=True,
            audit=_audit(memory, item),
            endorsed_by=endorsed(memory, event.actor),
        )
        memories[memory.id] = approved
        if approved.supersedes:
            _supersede(memories, approved.supersedes, approved, entry, event)
    elif event.event == "reject":
        memories[memory.id] = _step(
            memory, entry, event, status="rejected", retrievable=False, audit=_audit(memory, item)
        )
    elif event.event == "hide":
        memories[memory.id] = _step(
            memory, entry, event, retrievable=False, audit=_audit(memory, item)
        )
    elif event.event in ("forget", "expire"):
        memories[memory.id] = _step(
            memory,
            entry,
            event,
            status="forgotten" if event.event == "forget" else "expired",
            retrievable=False,
            content="",
            audit=_audit(memory, item),
        )
    elif event.event == "redact":
        memories[memory.id] = _step(
            memory,
            entry,
            event,
            status="forgotten" if memory.status in ("proposed", "active") else memory.status,
            retrievable=False,
            content="",
            title="",
            reason=REDACTED_MARKER,
            redacted=True,
            audit=_audit(memory, item),
        )


def _supersede(
    memories: dict[str, MemoryRecord], old_id: str, new: MemoryRecord, entry: Entry, event: Event
) -> None:
    """The old memory of an edit leaves retrieval, if it is still proposed or active."""
    old = memories.get(old_id)
    if old is None or old.status not in ("proposed", "active"):
        return
    memories[old_id] = _step(
        old,
        entry,
        event,
        status="forgotten",
        retrievable=False,
        content="",
        superseded_by=new.id,
        audit=_audit(old, AuditItem(entry.ts, "superseded", event.actor, f"by {new.id}")),
    )


_ACTION = {
    "approve": "approved",
    "reject": "rejected",
    "hide": "retrieval_removed",
    "forget": "forgotten",
    "expire": "expired",
    "redact": "forgotten",
}


def _get(memories: Mapping[str, MemoryRecord], memory_id: str) -> MemoryRecord:
    try:
        return memories[memory_id]
    except KeyError:
        raise NotFoundError(f"no memory {memory_id} in this ledger", id=memory_id) from None


def foreign_id(entry_hash: str, owner: str) -> str:
    """The memory id given to a plain personaxis entry (one not written by troth).

    MemoryRecord ids are unique across owners, and two people may restore the same log, so the
    id derives from the owner and the entry's hash together.
    """
    return FOREIGN_PREFIX + sha256_hex(f"{owner}\n{entry_hash}")[:24]


def _apply_foreign(memories: dict[str, MemoryRecord], record: Record, owner: str) -> None:
    """Plain personaxis entries: each live entry is an active memory; tombstones forget."""
    entry = record.entry
    if entry.is_tombstone:
        target = entry.target
        if target is None:
            return
        memory = memories.get(foreign_id(target, owner))
        if memory is None or memory.status == "forgotten":
            return
        redacted = memory.redacted or entry.content.startswith(
            "[deleted by user request: redacted:"
        )
        memories[memory.id] = replace(
            memory,
            status="forgotten",
            retrievable=False,
            content="",
            redacted=redacted,
            updated_at=entry.ts,
            revision=memory.revision + 1,
            audit=_audit(memory, AuditItem(entry.ts, "forgotten", owner, entry.content[:200])),
        )
        return
    memory_id = foreign_id(entry.hash, owner)
    memories[memory_id] = MemoryRecord(
        id=memory_id,
        owner=owner,
        content="" if entry.redacted else entry.content,
        status="active",
        approval_mode="automatic",
        channel=entry.source,
        actor=owner,
        reason="imported from a personaxis episodic log",
        created_at=entry.ts,
        updated_at=entry.ts,
        audit=(AuditItem(entry.ts, "proposed", owner), AuditItem(entry.ts, "approved", owner)),
        retrievable=not entry.redacted,
        tags=tuple(t for t in entry.tags),
        flagged="injection-flagged" in entry.tags,
        # As for troth's own memories, the event after a redacted line sets the flag:
        # a personaxis "redacted:" tombstone, or a troth redact event.
        redacted=False,
        entry_hash=entry.hash,
        seq=record.seq,
    )


def fold(records: Iterable[Record], owner: str) -> dict[str, MemoryRecord]:
    """The projection of a whole chain: every memory's current state."""
    memories: dict[str, MemoryRecord] = {}
    for record in records:
        apply(memories, record, owner)
    return memories


def replay(records: Iterable[Record], owner: str, *, refusal: str) -> dict[str, MemoryRecord]:
    """The fold of a verified chain that comes from elsewhere (a restore, before anything of
    it is written); an InvalidInputError, ``refusal`` followed by why, when its events do
    not replay."""
    try:
        return fold(records, owner)
    except (NotFoundError, ConflictError, InvalidInputError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"{refusal}: {exc}; nothing was restored") from exc


def in_ledger_order(memories: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """Memories in the order their ledger created them (their id breaks a tie)."""
    return sorted(memories, key=lambda m: (m.seq, m.id))


def fold_memory(records: Iterable[Record], memory_id: str, owner: str) -> MemoryRecord | None:
    """One memory's state from the rows from its creation on, as :func:`fold` would give it.

    Only the rows that can change it are applied: its own events, the edits that supersede
    it (and the events of the memories they create, whose approval supersedes it), exports.
    A redaction refolds the memory this way once its history is erased, so the stored
    projection equals what ``rebuild`` folds from the erased chain.
    """
    memories: dict[str, MemoryRecord] = {}
    for record in records:
        event = record.decode()
        if event is None or event.event == "checkpoint":
            continue
        if event.memory == memory_id and event.event in ("propose", "no_store", "edit"):
            memories[memory_id] = _created(event, record.entry, record.seq, owner)
        elif event.event == "edit":
            if event.supersedes in memories:
                apply(memories, record, owner)
        elif event.event == "export" or event.memory in memories:
            apply(memories, record, owner)
    return memories.get(memory_id)


def text_digest(text: str) -> str:
    """The sha256 a text is committed by (exposed for callers that check erasure)."""
    return sha256_hex(text)

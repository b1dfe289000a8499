"""mem0: what ``mem0ai``'s ``Memory.get_all()``, ``search()`` and ``history()`` return, as JSON.

Records (``get_all``, ``search``): ``{"results": [...]}``, a bare list of records, or an
object of such results keyed by user. Each record has ``id``, ``memory`` and optionally
``hash`` (md5 of the text: derived, dropped), ``metadata``, ``created_at``, ``updated_at``,
``user_id``, ``agent_id``, ``run_id``, ``actor_id``, ``role``, ``expiration_date``
(``YYYY-MM-DD``), ``categories``, ``score`` (search's, derived, dropped).

History (``history(memory_id)``): a list of events ``{id, memory_id, old_memory,
new_memory, event: ADD|UPDATE|DELETE, created_at, updated_at, is_deleted, actor_id, role}``,
several such lists, or an object of them keyed by memory id. One memory's events become its
versions: the first, each superseding the one before, and a forget for a DELETE.

A version's idempotency key is (mem0 id, sha256 of its text) — as mem0's own ``hash`` names
a memory's content — so a memory read from get_all, search and history is one memory.
Mapping and its reasons: docs/formats.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from datetime import date, timedelta
from typing import Any, Final

from troth.core.errors import FormatError
from troth.formats import foreign
from troth.formats.registry import Decoded, FunctionCodec, Item, Refusal, register

NAME: Final = "mem0"
_SOURCE_KEYS: Final = ("user_id", "agent_id", "run_id", "actor_id", "role")
_DROPPED: Final = ("hash", "score", "embedding")  # derived values are not kept
_MAPPED: Final = ("id", "memory", "created_at", "categories", "expiration_date", *_SOURCE_KEYS)
# mem0's categories (its default list, and names users give in metadata.category) that are
# troth topics, so the policy's rule for the topic applies (health waits for the person,
# minors and credentials are never stored). The most protective topic wins.
_TOPICS: Final = {
    "health": "health",
    "medical": "health",
    "wellness": "health",
    "fitness_health": "health",
    "finance": "finance",
    "financial": "finance",
    "money": "finance",
    "legal": "legal",
    "relationships": "relationships",
    "relationship": "relationships",
    "family": "relationships",
    "location": "location",
    "address": "location",
    "biometric": "biometric",
    "credentials": "credentials",
    "passwords": "credentials",
    "security": "credentials",
    "minors": "minors",
    "children": "minors",
    "kids": "minors",
}
_PROTECTIVE: Final = (
    "credentials",
    "minors",
    "health",
    "biometric",
    "finance",
    "legal",
    "relationships",
    "location",
)


def _topic(categories: list[Any] | None, metadata: Mapping[str, Any] | None) -> str | None:
    """The topic mem0's categories name, the most protective if several do."""
    names = [str(c) for c in categories or []]
    category = (metadata or {}).get("category")
    if isinstance(category, str):
        names.append(category)
    found = {_TOPICS[n.strip().lower()] for n in names if n.strip().lower() in _TOPICS}
    return next((t for t in _PROTECTIVE if t in found), None)


def _is_event(value: Any) -> bool:
    return isinstance(value, Mapping) and "memory_id" in value and "event" in value


def _events(parsed: Any, name: str) -> list[tuple[str, Any]] | None:
    """History events with where they are, or None when the input is not history()."""
    if isinstance(parsed, list) and parsed and all(_is_event(e) for e in parsed):
        return [(f"{name}: event {i}", e) for i, e in enumerate(parsed)]
    if isinstance(parsed, list) and parsed and all(isinstance(v, list) for v in parsed):
        events = [(f"{name}: [{i}][{j}]", e) for i, v in enumerate(parsed) for j, e in enumerate(v)]
    elif (
        isinstance(parsed, Mapping) and parsed and all(isinstance(v, list) for v in parsed.values())
    ):
        events = [(f"{name}: {k}[{j}]", e) for k, v in parsed.items() for j, e in enumerate(v)]
    else:
        return None
    return events if events and all(_is_event(e) for _, e in events) else None


def _records(parsed: Any, name: str) -> list[tuple[str, Any]]:
    if isinstance(parsed, list):
        return [(f"{name}: record {i}", r) for i, r in enumerate(parsed)]
    if isinstance(parsed, Mapping) and isinstance(parsed.get("results"), list):
        return [(f"{name}: results[{i}]", r) for i, r in enumerate(parsed["results"])]
    if isinstance(parsed, Mapping) and all(
        isinstance(v, Mapping) and isinstance(v.get("results"), list) for v in parsed.values()
    ):
        out = []
        for user, value in parsed.items():
            out += [(f"{name}: {user}.results[{i}]", r) for i, r in enumerate(value["results"])]
        return out
    raise FormatError(
        f'{name}: expected mem0 get_all() or search() output ({{"results": [...]}} or a list)'
        " or history() output (lists of events with memory_id and event)"
    )


def _expires(value: Any, where: str) -> str | None:
    if value is None:
        return None
    try:
        day = date.fromisoformat(str(value))
    except ValueError as exc:
        raise FormatError(f"{where}: expiration_date {value!r} is not YYYY-MM-DD") from exc
    # mem0 hides a memory once its date is past: it expires at the end of that day (UTC).
    return f"{day + timedelta(days=1)}T00:00:00Z"


def item(record: Any, where: str) -> Item | Refusal:
    """One mem0 record as a memory to import."""
    record_id = foreign.require(record, "id", str, where=where)
    text = foreign.require(record, "memory", str, where=where)
    metadata = foreign.optional(record, "metadata", dict, where)
    categories = foreign.optional(record, "categories", list, where)
    for key in ("created_at", "updated_at", *_SOURCE_KEYS):
        foreign.optional(record, key, str, where)
    fields: dict[str, Any] = {"kind": "fact", "page_type": "semantic"}
    if record.get("memory_type") == "procedural_memory":
        fields["page_type"] = "procedural"
    tags = foreign.clean_tags(categories)
    if tags:
        fields["tags"] = tags
    topic = _topic(categories, metadata)
    if topic:
        fields["topic"] = topic
    expires = _expires(record.get("expiration_date"), where)
    if expires:
        fields["expires"] = expires
    if record.get("run_id"):
        fields["session"] = str(record["run_id"])[:256]
    source = {k: record[k] for k in _SOURCE_KEYS if record.get(k) is not None}
    if record.get("created_at") is not None:
        source["at"] = record["created_at"]
    unmapped = {
        k: v
        for k, v in record.items()
        if k not in _MAPPED and k not in _DROPPED and k != "memory_type" and v is not None
    }
    if record.get("memory_type") not in (None, "procedural_memory"):
        unmapped["memory_type"] = record["memory_type"]  # only procedural has a PCP type
    if metadata:
        unmapped["metadata"] = metadata
    # The key is the mem0 id and the text (what search() adds per call, its score, is not
    # part of it), so the same memory from get_all(), search() and history() is one memory.
    version = (record_id, text_sha256(text))
    x_import: dict[str, Any] = {"format": NAME, "exporter": "mem0", "id": record_id[:256]}
    x_import["sha256"] = foreign.record_sha256(
        {k: v for k, v in record.items() if k not in _DROPPED}
    )
    recorded = foreign.to_utc(record.get("created_at"))
    if recorded:
        x_import["recorded_at"] = recorded
    if source:
        x_import["source"] = source
    if unmapped:
        x_import["fields"] = unmapped
    # What mem0 keeps was extracted by its pipeline (normally a model) or said by an
    # assistant: it comes in as the work of a tool, proposed for the person to approve.
    channel = "synthesis" if record.get("role") == "assistant" else "tool"
    return Item(
        content=text,
        where=where,
        key=version,
        fields=fields,
        channel=channel,
        x_import=x_import,
        stamps={"key": list(version)},
    )


def text_sha256(text: str) -> str:
    """The second half of a mem0 version's key: SHA-256 of its text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_EVENTS: Final = ("ADD", "UPDATE", "DELETE")
_EVENT_MAPPED: Final = ("memory_id", "old_memory", "new_memory", "event", "created_at")


def _version(event: Mapping[str, Any], text: str, where: str, prior: Item | None) -> Item:
    """One version of a mem0 memory from its ADD or UPDATE event."""
    memory_id = str(event["memory_id"])
    key = (memory_id, text_sha256(text))
    # ADD happened at created_at; mem0 stamps an UPDATE at updated_at (created_at stays).
    at = event.get("updated_at") if event["event"] == "UPDATE" else event.get("created_at")
    x_import: dict[str, Any] = {"format": NAME, "exporter": "mem0", "id": memory_id[:256]}
    x_import["sha256"] = foreign.record_sha256(dict(event))
    recorded = foreign.to_utc(at)
    if recorded:
        x_import["recorded_at"] = recorded
    source = {k: event[k] for k in ("actor_id", "role") if event.get(k) is not None}
    if at is not None:
        source["at"] = at
    if source:
        x_import["source"] = source
    kept = {k: v for k, v in event.items() if k not in _EVENT_MAPPED and v is not None}
    x_import["fields"] = {"history": {"event": event["event"], **kept}}
    return Item(
        content=text,
        where=where,
        key=key,
        fields={"kind": "fact", "page_type": "semantic"},
        channel="synthesis" if event.get("role") == "assistant" else "tool",
        x_import=x_import,
        stamps={"key": list(key)},
        supersedes=prior.key if prior is not None else None,
    )


def history_items(events: list[tuple[str, Any]]) -> Decoded:
    """Each memory's history events as its versions, in the order mem0 gave them.

    The first version is the ADD; each UPDATE supersedes the version before it; a DELETE
    marks the last version to be forgotten. An event out of order (an UPDATE or DELETE before
    any ADD, anything after a DELETE) is refused with its reason; the rest come in.
    """
    latest: dict[str, Item] = {}
    deleted: set[str] = set()
    order: list[Item] = []
    refused: list[Refusal] = []
    for where, event in events:
        memory_id = foreign.require(event, "memory_id", str, where=where)
        kind = foreign.require(event, "event", str, where=where)
        if kind not in _EVENTS:
            raise FormatError(f"{where}: event {kind!r} is not one of {', '.join(_EVENTS)}")
        for key in ("created_at", "updated_at", "actor_id", "role", "old_memory"):
            foreign.optional(event, key, str, where)
        prior = latest.get(memory_id)
        if memory_id in deleted:
            refused.append(Refusal(where, f"mem0 memory {memory_id} was already deleted"))
        elif prior is None and kind != "ADD":
            refused.append(Refusal(where, f"{kind} of mem0 memory {memory_id} before its ADD"))
        elif prior is not None and kind == "ADD":
            refused.append(Refusal(where, f"mem0 memory {memory_id} was already added"))
        elif prior is not None and kind == "DELETE":
            deleted.add(memory_id)
            at = event.get("updated_at") or event.get("created_at") or "an unknown time"
            forgotten = replace(prior, forget=f"deleted in mem0 at {at}"[:200])
            order[order.index(prior)] = latest[memory_id] = forgotten
        else:
            text = foreign.require(event, "new_memory", str, where=where)
            version = _version(event, text, where, prior)
            latest[memory_id] = version
            order.append(version)
    return order, refused


def decode(data: bytes, *, name: str = "mem0.json", **_: Any) -> Decoded:
    """Every record (or history event) of a mem0 dump as items (a malformed one fails the
    whole file)."""
    parsed = foreign.load_json(data, name=name)
    events = _events(parsed, name)
    if events is not None:
        return history_items(events)
    items: list[Item] = []
    refused: list[Refusal] = []
    for where, record in _records(parsed, name):
        result = item(record, where)
        (items if isinstance(result, Item) else refused).append(result)  # type: ignore[arg-type]
    return items, refused


def sniff(data: bytes, filename: str = "") -> bool:
    """JSON whose records have ``id`` and ``memory`` (mem0's field for the text), or mem0
    history events (``memory_id`` and ``event``)."""
    head = data.lstrip()[:1]
    if head not in (b"{", b"["):
        return False
    parsed = foreign.load_json(data, name=filename or "input")
    if _events(parsed, "") is not None:
        return True
    try:
        records = _records(parsed, "")
    except FormatError:
        return False
    return bool(records) and all(
        isinstance(r, Mapping) and "memory" in r and "id" in r for _, r in records[:20]
    )


CODEC = register(FunctionCodec(NAME, sniff, decode, "mem0 get_all(), search(), history() JSON"))

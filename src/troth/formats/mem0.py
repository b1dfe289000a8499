"""mem0: the records ``mem0ai``'s ``Memory.get_all()`` returns, as JSON.

Accepted shapes: ``{"results": [...]}`` (what ``get_all`` returns), a bare list of records,
or an object of such results keyed by user. Each record has ``id``, ``memory`` and
optionally ``hash`` (md5 of the text: derived, dropped), ``metadata``, ``created_at``,
``updated_at``, ``user_id``, ``agent_id``, ``run_id``, ``actor_id``, ``role``,
``expiration_date`` (``YYYY-MM-DD``), ``categories``, ``score`` (derived, dropped).
Mapping and its reasons: docs/formats.md.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    raise FormatError(f'{name}: expected mem0 get_all() output: {{"results": [...]}} or a list')


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
    # The key is the record without what mem0 derives per call (search() adds a score), so
    # the same memory from get_all() and from search() is one memory, not two.
    sha = foreign.record_sha256({k: v for k, v in record.items() if k not in _DROPPED})
    x_import: dict[str, Any] = {"format": NAME, "exporter": "mem0", "id": record_id[:256]}
    x_import["sha256"] = sha
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
        key=(record_id, sha),
        fields=fields,
        channel=channel,
        x_import=x_import,
        stamps={"key": [record_id, sha]},
    )


def decode(data: bytes, *, name: str = "mem0.json", **_: Any) -> Decoded:
    """Every record of a mem0 dump as an item (a malformed record fails the whole file)."""
    parsed = foreign.load_json(data, name=name)
    items: list[Item] = []
    refused: list[Refusal] = []
    for where, record in _records(parsed, name):
        result = item(record, where)
        (items if isinstance(result, Item) else refused).append(result)  # type: ignore[arg-type]
    return items, refused


def sniff(data: bytes, filename: str = "") -> bool:
    """JSON whose records have ``id`` and ``memory`` (mem0's field for the text)."""
    head = data.lstrip()[:1]
    if head not in (b"{", b"["):
        return False
    parsed = foreign.load_json(data, name=filename or "input")
    try:
        records = _records(parsed, "")
    except FormatError:
        return False
    return bool(records) and all(
        isinstance(r, Mapping) and "memory" in r and "id" in r for _, r in records[:20]
    )


CODEC = register(FunctionCodec(NAME, sniff, decode, "mem0 Memory.get_all() JSON"))

"""Open Memory Protocol (OMP): the JSON array ``GET /v1/export`` returns.

An OMP memory object (spec/v1/memory.schema.json of the OMP repository) has ``id``,
``content``, ``type`` (episodic|semantic|procedural), ``source {tool, session_id?,
user_id?, timestamp}``, ``tags``, ``namespace``, ``created_at``, ``updated_at``,
``expires_at``, ``embedding`` and ``metadata``. Mapped by the PCP interop table
(SEEDS.md §4.4); the rest is kept under ``x_import.fields`` (docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from troth.core.errors import FormatError
from troth.formats import foreign
from troth.formats.registry import Decoded, FunctionCodec, Item, Refusal, register

NAME: Final = "omp"
_TYPES: Final = ("episodic", "semantic", "procedural")


def _records(parsed: Any, name: str) -> list[Any]:
    if isinstance(parsed, list):
        return parsed
    if isinstance(parsed, Mapping) and isinstance(parsed.get("memories"), list):
        return list(parsed["memories"])
    raise FormatError(f"{name}: expected an OMP export: a JSON array of memory objects")


def item(record: Any, where: str) -> Item | Refusal:
    """One OMP memory object as a memory to import."""
    record_id = foreign.require(record, "id", str, where=where)
    text = foreign.require(record, "content", str, where=where)
    kind = foreign.require(record, "type", str, where=where)
    if kind not in _TYPES:
        raise FormatError(f"{where}: 'type' must be episodic, semantic or procedural; got {kind!r}")
    source = foreign.require(record, "source", dict, where=where)
    foreign.require(source, "tool", str, where=f"{where}: source")
    tags = foreign.optional(record, "tags", list, where)
    fields: dict[str, Any] = {"page_type": kind, "kind": "fact"}
    if tags:
        fields["tags"] = foreign.clean_tags(tags)
    valid_until = foreign.date_or_time(record.get("expires_at"))
    if valid_until:
        fields["valid_until"] = valid_until  # the interop table maps expires_at → valid_until
    if isinstance(source.get("session_id"), str):
        fields["session"] = source["session_id"][:256]
    pcp_source: dict[str, Any] = {"origin": "import", "client": source["tool"][:512]}
    if isinstance(source.get("session_id"), str):
        pcp_source["session"] = source["session_id"][:256]
    at = foreign.date_or_time(source.get("timestamp"))
    if at:
        pcp_source["at"] = at
    sha = foreign.record_sha256(record)
    x_import: dict[str, Any] = {
        "format": NAME,
        "exporter": source["tool"][:100],
        "id": record_id[:256],
        "sha256": sha,
        "source": dict(source),
    }
    recorded = foreign.to_utc(record.get("created_at"))
    if recorded:
        x_import["recorded_at"] = recorded
    # Every other value is kept, as are times that could not be mapped; the embedding is
    # derived and dropped.
    mapped = {"id", "content", "type", "source", "tags", "embedding"}
    if valid_until:
        mapped.add("expires_at")
    if recorded:
        mapped.add("created_at")
    unmapped = {k: v for k, v in record.items() if k not in mapped and v is not None and v != {}}
    if unmapped:
        x_import["fields"] = unmapped
    return Item(
        content=text,
        where=where,
        key=(record_id, sha),
        fields=fields,
        channel="tool",
        x_import=x_import,
        stamps={"key": [record_id, sha]},
    )


def decode(data: bytes, *, name: str = "omp.json", **_: Any) -> Decoded:
    """Every memory object of an OMP export as an item."""
    parsed = foreign.load_json(data, name=name)
    items: list[Item] = []
    refused: list[Refusal] = []
    for index, record in enumerate(_records(parsed, name)):
        result = item(record, f"{name}: item {index}")
        (items if isinstance(result, Item) else refused).append(result)  # type: ignore[arg-type]
    return items, refused


def sniff(data: bytes, filename: str = "") -> bool:
    """JSON memory objects with ``content``, ``type`` and a ``source`` that names a ``tool``."""
    if data.lstrip()[:1] not in (b"[", b"{"):
        return False
    records = _records(foreign.load_json(data, name=filename or "input"), "")
    return bool(records) and all(
        isinstance(r, Mapping)
        and "content" in r
        and "type" in r
        and isinstance(r.get("source"), Mapping)
        and "tool" in r["source"]
        for r in records[:20]
    )


CODEC = register(FunctionCodec(NAME, sniff, decode, "Open Memory Protocol export (JSON)"))

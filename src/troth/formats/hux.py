"""The HUX memory ledger entry (``hux.memory.v1``): the JSON view of a memory.

Validated against the seed schema and the ``common.schema.json`` that troth defines
(the original is not public; see docs/ledger.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from referencing import Registry, Resource

from troth.core.chain import INJECTION_TAG
from troth.core.errors import FormatError
from troth.core.records import MemoryRecord
from troth.formats import foreign, jsontext
from troth.formats.registry import Decoded, FunctionCodec, Item, Refusal, register

NAME = "hux"
SCHEMA_ID = "https://hermes.bstein.dev/contracts/hux/v1/memory.schema.json"
COMMON_ID = "https://hermes.bstein.dev/contracts/hux/v1/common.schema.json"


def _load(name: str) -> dict[str, Any]:
    path = resources.files("troth.formats").joinpath(f"schemas/{name}")
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


@cache
def validator() -> jsonschema.Draft202012Validator:
    """A validator for HUX records with the shipped common definitions."""
    registry: Registry[Any] = Registry().with_resources(
        [
            (SCHEMA_ID, Resource.from_contents(_load("hux.memory.schema.json"))),
            (COMMON_ID, Resource.from_contents(_load("hux.common.schema.json"))),
        ]
    )
    return jsonschema.Draft202012Validator(_load("hux.memory.schema.json"), registry=registry)


def to_record(memory: MemoryRecord) -> dict[str, Any]:
    """The HUX view of a memory."""
    # The source is the text's origin (its channel and writer); who made this version and
    # who vouched for it sit beside it in provenance (docs/api.md, "Trust model").
    origin = memory.writer
    source: dict[str, Any] = {"channel": memory.channel, "principal": origin}
    if memory.on_behalf_of:
        source["on_behalf_of"] = memory.on_behalf_of
    if memory.session:
        source["session"] = memory.session
    if memory.evidence:
        source["ref"] = memory.evidence
    provenance: dict[str, Any] = {
        "ledger": memory.owner,
        "entry_hash": memory.entry_hash,
        "seq": memory.seq,
    }
    if memory.derived_from:
        provenance["derived_from"] = list(memory.derived_from)
    if memory.flagged:
        provenance["flagged"] = True
    if memory.redacted:
        provenance["redacted"] = True
    if memory.actor != origin:
        provenance["edited_by"] = memory.actor
    if memory.endorsed_by:
        provenance["endorsed_by"] = list(memory.endorsed_by)
    record: dict[str, Any] = {
        "schema": "hux.memory.v1",
        "id": memory.id,
        "owner": memory.owner,
        "scope": memory.scope.to_json(),
        "kind": memory.kind,
        "content": memory.content,
        "status": memory.status,
        "approval_mode": memory.approval_mode,
        "sensitivity": memory.sensitivity,
        "topic": memory.topic,
        "ttl": memory.ttl.to_json(),
        "source": source,
        "provenance": provenance,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "audit": [item.to_json() for item in memory.audit],
        "reason": memory.reason,
        "retrievable": memory.retrievable,
        "revision": memory.revision,
    }
    if memory.supersedes:
        record["supersedes"] = memory.supersedes
    identity: dict[str, Any] = {}
    if memory.path:
        identity["path"] = memory.path
    if memory.title:
        identity["title"] = memory.title
    if memory.partition != "default":
        identity["partition"] = memory.partition
    if memory.page_type:
        identity["type"] = memory.page_type
    if memory.tags:
        identity["tags"] = list(memory.tags)
    if identity:
        record["identity"] = identity
    return record


def validate(record: Any, *, where: str = "record") -> None:
    """Raise a FormatError naming the first schema violation."""
    errors = sorted(validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        error = errors[0]
        location = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise FormatError(f"{where}: {location}: {error.message}", path=location)


def encode(memories: Iterable[MemoryRecord], *, lines: bool = False) -> bytes:
    """HUX records as a JSON array, or as JSON Lines with ``lines=True``."""
    records = [to_record(m) for m in memories]
    for record in records:
        validate(record, where=f"memory {record['id']}")
    if lines:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
        text = json.dumps(records, ensure_ascii=False, indent=2) + "\n"
    return text.encode("utf-8")


def decode(data: bytes, *, name: str = "memories.json") -> list[dict[str, Any]]:
    """Validated HUX records from a JSON array or JSON Lines."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name}: not UTF-8 text (byte {exc.start})", file=name) from exc
    stripped = text.lstrip()
    records: list[Any] = []
    if stripped.startswith("["):
        parsed = jsontext.loads(text, name=name)
        records = list(parsed)
        for index, record in enumerate(records):
            validate(record, where=f"{name}: item {index}")
        return records
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = jsontext.loads(line, name=name, line=number)
        validate(record, where=f"{name}:{number}")
        records.append(record)
    return records


_IMPORTED_STATUSES = ("proposed", "active")
_UNMAPPED = ("owner", "status", "approval_mode", "audit", "supersedes", "retrievable", "revision")


def item(record: dict[str, Any], where: str) -> Item | Refusal:
    """One validated HUX record as a memory to import."""
    status = record["status"]
    if status not in _IMPORTED_STATUSES:
        return Refusal(where, f"{status} in the source; only proposed and active are imported")
    identity = record.get("identity", {})
    source = record["source"]
    fields: dict[str, Any] = {
        "kind": record["kind"],
        "topic": record.get("topic", "general"),
        "scope": (
            record["scope"]["level"]
            if "scope_id" not in record["scope"]
            else f"{record['scope']['level']}:{record['scope']['scope_id']}"
        ),
        "ttl": record["ttl"],
        "sensitivity": record["sensitivity"],
        "reason": record["reason"],
    }
    for key, name in (("path", "path"), ("title", "title"), ("type", "page_type")):
        if key in identity:
            fields[name] = identity[key]
    if "partition" in identity:
        fields["partition"] = identity["partition"]
    tags = [t for t in identity.get("tags", ()) if t != INJECTION_TAG]
    if tags:
        fields["tags"] = foreign.clean_tags(tags)
    if record.get("provenance", {}).get("flagged") is True:
        fields["flagged"] = True  # a flag travels: the detector may not see it again
    if "session" in source:
        fields["session"] = source["session"]
    if "ref" in source:
        fields["evidence"] = source["ref"]
    sha = foreign.record_sha256(record)
    x_import: dict[str, Any] = {
        "format": NAME,
        "id": record["id"],
        "sha256": sha,
        "recorded_at": record["created_at"],
        "source": dict(source),
    }
    unmapped = {k: record[k] for k in _UNMAPPED if k in record}
    x_import["fields"] = unmapped
    # Only what the person said in their own words stays a user statement.
    channel = source["channel"] if source["channel"] != "user" else "user"
    return Item(
        content=record["content"],
        where=where,
        key=(record["id"], sha),
        fields=fields,
        channel=channel,
        status="proposed" if status == "proposed" else None,
        x_import=x_import,
        stamps={"key": [record["id"], sha]},
    )


def items(data: bytes, *, name: str = "memories.json", **_: Any) -> Decoded:
    """HUX records (validated first, all of them) as memories to import."""
    records = decode(data, name=name)
    out: list[Item] = []
    refused: list[Refusal] = []
    for index, record in enumerate(records):
        result = item(record, f"{name}: item {index}")
        (out if isinstance(result, Item) else refused).append(result)  # type: ignore[arg-type]
    return out, refused


def sniff(data: bytes, filename: str = "") -> bool:
    """JSON or JSON Lines whose first record says ``"schema": "hux.memory.v1"``."""
    head = data.lstrip()[:65536]
    return head[:1] in (b"[", b"{") and b'"hux.memory.v1"' in head


CODEC = register(FunctionCodec(NAME, sniff, items, "HUX memory records (JSON or JSON Lines)"))

"""PCP 0.3 memory pages: markdown with YAML frontmatter, the page view of a memory.

A page is ``---\\n<frontmatter>---\\n<body>\\n``. Every key of the 0.3 page schema maps to a
memory field (docs/formats.md has the table); what HUX knows and PCP does not (kind, topic,
scope, ttl, channel, reason) travels in the implementation key ``x_troth``. A restored
page keeps its server-stamped keys as they were (``MemoryRecord.stamps``) until the memory changes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

import jsonschema

from troth.core.chain import INJECTION_TAG
from troth.core.errors import FormatError
from troth.core.records import (
    PATH_PATTERN,
    PRINCIPAL_PATTERN,
    SYSTEM_PRINCIPAL,
    MemoryRecord,
)
from troth.core.versions import PCP_VERSION as PCP_VERSION
from troth.formats import yaml12
from troth.formats.registry import (
    Decoded,
    FunctionCodec,
    Item,
    Refusal,
    decoded_one,
    frontmatter_with,
    register,
)

NAME: Final = "pcp-page"
MAX_PAGE_BYTES: Final = 1 << 20
IMPLEMENTATION_KEY: Final = "x_troth"
EXPORTED_STATUSES: Final = ("proposed", "active", "rejected")
ORIGIN: Final = {
    "user": "user",
    "internal": "consolidation",
    "tool": "connector",
    "synthesis": "agent",
}
BASIS: Final = {
    "user": "provided",
    "internal": "observed",
    "tool": "observed",
    "synthesis": "inferred",
}
_EXTRA_KEY = re.compile(r"^x[_-][A-Za-z0-9_-]+$")
_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Page:
    """One memory page: its frontmatter (JSON data) and its markdown body."""

    frontmatter: dict[str, Any]
    body: str


def load_schema(name: str) -> dict[str, Any]:
    """One of the PCP JSON schemas shipped in the package, by file name."""
    text = resources.files("troth.formats").joinpath(f"schemas/{name}")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return loaded


@cache
def page_validator() -> jsonschema.Draft202012Validator:
    """A validator for PCP 0.3 page frontmatter (the seed schema, shipped as is)."""
    return jsonschema.Draft202012Validator(load_schema("pcp.memory.page.schema.json"))


def validate_frontmatter(frontmatter: Any, *, where: str, text: str = "") -> None:
    """Raise a FormatError naming the file, the line of the key and the first violation."""
    errors = sorted(
        page_validator().iter_errors(frontmatter), key=lambda e: [str(p) for p in e.path]
    )
    if not errors:
        return
    error = errors[0]
    location = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    line = _line_of(text, str(error.absolute_path[0])) if error.absolute_path else 1
    raise FormatError(
        f"{where}:{line}: frontmatter {location}: {error.message}", path=location, line=line
    )


def _line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.split("\n"), start=2):
        if line.startswith((f"{key}:", f'"{key}":')):
            return number
    return 1


def check_path(path: str, *, where: str = "path") -> str:
    """A page path by §5.1: segments ``[A-Za-z0-9_][A-Za-z0-9._-]{0,63}``, ≤255, no ``..``."""
    if not isinstance(path, str) or len(path) > 255 or not PATH_PATTERN.fullmatch(path):
        bad = next((s for s in str(path).split("/") if not _SEGMENT.fullmatch(s)), None)
        detail = f"segment {bad!r} is not allowed" if bad is not None else "it is too long"
        raise FormatError(
            f"{where}: {path!r} is not a page path ({detail}); use segments of letters, digits"
            " and ._- separated by /, none starting with a dot, 255 characters at most",
            path=str(path),
        )
    return path


# -- bytes ⇄ page ----------------------------------------------------------------------------


def encode_page(page: Page) -> bytes:
    """The page file: frontmatter between ``---`` lines, then the body and a newline."""
    return ("---\n" + yaml12.dump(page.frontmatter) + "---\n" + page.body + "\n").encode("utf-8")


def split_page(data: bytes, *, where: str) -> tuple[str, str]:
    """The frontmatter text and the body of a page file."""
    if len(data) > MAX_PAGE_BYTES:
        raise FormatError(f"{where}: page is {len(data)} bytes; the limit is {MAX_PAGE_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{where}: not UTF-8 text (byte {exc.start})", file=where) from exc
    if not text.startswith("---\n"):
        raise FormatError(f"{where}:1: a page starts with a '---' line and YAML frontmatter")
    end = text.find("\n---\n", 3)
    if end < 0:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise FormatError(f"{where}: the frontmatter has no closing '---' line")
    front = text[4 : end + 1]
    body = text[end + 5 :]
    return front, body[:-1] if body.endswith("\n") else body


def decode_page(data: bytes, *, where: str) -> Page:
    """A validated page from its bytes; a FormatError names the file and line of a defect."""
    front, body = split_page(data, where=where)
    frontmatter = yaml12.load(front, where=where, first_line=2) if front.strip() else {}
    if not isinstance(frontmatter, dict):
        raise FormatError(f"{where}:2: frontmatter must be a mapping of keys to values")
    validate_frontmatter(frontmatter, where=where, text=front)
    return Page(frontmatter, body)


# -- memory → page ---------------------------------------------------------------------------


def default_path(memory: MemoryRecord) -> str:
    """Where a memory without a path lives in an archive: ``<kind>/<id>``."""
    return f"{memory.kind}/{memory.id}"


def derive_title(content: str) -> str:
    """A title from the first line of the content (PCP requires one)."""
    first = next((line.strip() for line in content.split("\n") if line.strip()), "")
    return first[:80] if first else "untitled"


SOURCE_ORDER: Final = ("origin", "basis", "principal", "on_behalf_of", "client", "session", "at")
REVIEW_ORDER: Final = ("state", "generated", "verified", "rejected")
AUDIT_ORDER: Final = ("at", "action", "actor", "note")


def ordered(value: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """A mapping with its keys in a fixed order (known keys first, then the rest sorted).

    Values kept in the ledger come back with sorted keys (its metadata is canonical JSON);
    writing them in one fixed order keeps a restored page byte-identical to the original.
    """
    known = [k for k in order if k in value]
    return {k: value[k] for k in [*known, *sorted(set(value) - set(known))]}


def sorted_keys(value: Any) -> Any:
    """JSON data with every object's keys sorted (how ``x_`` values are written)."""
    if isinstance(value, Mapping):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def _actor_at(value: Any) -> Any:
    return ordered(value, ("by", "at")) if isinstance(value, Mapping) else value


def _ordered_review(review: Mapping[str, Any]) -> dict[str, Any]:
    out = ordered(review, REVIEW_ORDER)
    for name in ("generated", "rejected"):
        if name in out:
            out[name] = _actor_at(out[name])
    if isinstance(out.get("verified"), list):
        out["verified"] = [_actor_at(v) for v in out["verified"]]
    return out


@dataclass(frozen=True)
class View:
    """What a page shows of a memory's server-stamped state (kept from a restore, or own)."""

    id: str
    created_at: str
    updated: str
    audit: list[dict[str, Any]]
    source: dict[str, Any] | None
    review: dict[str, Any] | None
    unchanged: bool


def view(memory: MemoryRecord) -> View:
    """The stamped state: a restored memory shows its source's values until it changes."""
    stamps = memory.stamps
    own = [item.to_json() for item in memory.audit]
    base = stamps.get("base")
    if not isinstance(base, int):
        return View(memory.id, memory.created_at, memory.updated_at, own, None, None, False)
    later = own[base:]
    unchanged = all(a["action"] == "exported" for a in later)  # an export changes nothing
    return View(
        id=stamps.get("id", memory.id),
        created_at=stamps.get("created_at", memory.created_at),
        updated=stamps.get("updated", memory.updated_at) if unchanged else memory.updated_at,
        audit=[ordered(a, AUDIT_ORDER) for a in [*stamps.get("audit", []), *later]],
        source=stamps.get("source"),
        review=stamps.get("review") if unchanged else None,
        unchanged=unchanged,
    )


def _review(memory: MemoryRecord, seen: View) -> dict[str, Any] | None:
    if seen.unchanged and seen.review is not None:
        return _ordered_review(seen.review)
    if seen.unchanged and memory.stamps.get("base") is not None and seen.review is None:
        return None  # restored without a review: approved, as the source said
    generated = {"by": memory.actor, "at": seen.created_at}
    actions = [a for a in seen.audit if PRINCIPAL_PATTERN.fullmatch(str(a.get("actor", "")))]
    if memory.status == "proposed":
        return {"state": "proposed", "generated": generated}
    if memory.status == "rejected":
        last = next((a for a in reversed(actions) if a["action"] == "rejected"), None)
        rejected = {"by": last["actor"], "at": last["at"]} if last else generated
        return {"state": "rejected", "generated": generated, "rejected": rejected}
    approvals = [{"by": a["actor"], "at": a["at"]} for a in actions if a["action"] == "approved"]
    if memory.approval_mode == "automatic" and all(a["by"] == SYSTEM_PRINCIPAL for a in approvals):
        return None
    return {"state": "approved", "generated": generated, "verified": approvals}


def _source(memory: MemoryRecord, seen: View) -> dict[str, Any]:
    if seen.source is not None:
        return ordered(seen.source, SOURCE_ORDER)
    source: dict[str, Any] = {
        "origin": ORIGIN[memory.channel],
        "basis": BASIS[memory.channel],
        "principal": memory.writer,  # the writer of the text's origin
    }
    if memory.on_behalf_of:
        source["on_behalf_of"] = memory.on_behalf_of
    if memory.session:
        source["session"] = memory.session
    source["at"] = seen.created_at
    return source


def memory_to_page(memory: MemoryRecord) -> Page:
    """The page of a live memory (proposed, active or rejected, not redacted)."""
    seen = view(memory)
    fm: dict[str, Any] = {"title": memory.title or derive_title(memory.content)}
    fm["updated"] = seen.updated
    fm["id"] = seen.id
    if memory.page_type:
        fm["type"] = memory.page_type
    if memory.tags:
        fm["tags"] = list(memory.tags)
    fm["sensitivity"] = memory.sensitivity
    if memory.lifecycle != "active":
        fm["lifecycle"] = memory.lifecycle
    for name in ("confidence", "importance", "valid_from", "valid_until"):
        value = getattr(memory, name)
        if value is not None:
            fm[name] = value
    fm["recorded_at"] = memory.recorded_at or seen.created_at
    if memory.expires:
        fm["expires"] = memory.expires
    if memory.partition != "default":
        fm["partition"] = memory.partition
    fm["source"] = _source(memory, seen)
    if memory.derived_from:
        fm["derived_from"] = list(memory.derived_from)
    if memory.relations:
        fm["relations"] = [r.to_json() for r in memory.relations]
    review = _review(memory, seen)
    if review is not None:
        fm["review"] = review
    extra = dict(memory.extra)
    if "x_import" in extra:
        fm["x_import"] = sorted_keys(extra.pop("x_import"))
    for key in sorted(extra):
        fm[key] = sorted_keys(extra[key])
    own: dict[str, Any] = {
        "kind": memory.kind,
        "topic": memory.topic,
        "scope": str(memory.scope),
        "ttl": memory.ttl.to_json(),
        "channel": memory.channel,
        "approval_mode": memory.approval_mode,
        "reason": memory.reason,
        "created_at": seen.created_at,
    }
    if memory.evidence:
        own["evidence"] = memory.evidence
    if memory.status == "active" and not memory.retrievable:
        own["hidden"] = True
    fm[IMPLEMENTATION_KEY] = own
    return Page(fm, memory.content)


# -- page → item ---------------------------------------------------------------------------


def _channel(source: Mapping[str, Any] | None) -> str:
    """The ledger channel a page's source maps to (agent- or tool-made is never ``user``)."""
    if not source:
        return "user"
    origin, basis = source.get("origin"), source.get("basis")
    if origin in ("agent", "consolidation") or basis == "inferred":
        return "synthesis"
    if origin in ("connector", "import") or basis == "observed":
        return "tool"
    return "user"


def _status(review: Mapping[str, Any] | None) -> str:
    state = (review or {}).get("state", "approved")
    return {"approved": "active", "proposed": "proposed", "rejected": "rejected"}[state]


def page_fields(fm: Mapping[str, Any], path: str, *, keep_import: bool) -> dict[str, Any]:
    """Draft fields for a page's frontmatter (PCP keys and ``x_troth``)."""
    out: dict[str, Any] = {"path": path, "title": fm["title"]}
    tags = [t for t in fm.get("tags", ()) if t != INJECTION_TAG]
    if tags:
        out["tags"] = tags
    if INJECTION_TAG in fm.get("tags", ()):
        out["flagged"] = True  # a flag travels: the detector may not see it again
    if "type" in fm:
        out["page_type"] = fm["type"]
    sensitivity = fm.get("sensitivity")
    if sensitivity is None and path.startswith("style/"):
        sensitivity = "sensitive"  # §5.7: style profiles are sensitive unless said otherwise
    if sensitivity is not None:
        out["sensitivity"] = sensitivity
    for name in ("lifecycle", "confidence", "importance", "valid_from", "valid_until"):
        if name in fm:
            out[name] = fm[name]
    for name in ("expires", "partition", "relations", "derived_from"):
        if name in fm:
            out[name] = fm[name]
    session = (fm.get("source") or {}).get("session")
    if session is not None:
        out["session"] = session
    extra = {
        k: v
        for k, v in fm.items()
        if _EXTRA_KEY.fullmatch(k) and k != IMPLEMENTATION_KEY and (keep_import or k != "x_import")
    }
    if extra:
        out["extra"] = extra
    own = fm.get(IMPLEMENTATION_KEY)
    if isinstance(own, Mapping):
        for name in ("kind", "topic", "scope", "ttl", "reason", "evidence"):
            if name in own:
                out[name] = own[name]
    return out


def page_item(
    page: Page,
    *,
    path: str,
    sha256: str,
    where: str,
    restore: bool,
    exporter: str | None = None,
    audit: Sequence[Mapping[str, Any]] = (),
) -> Item | Refusal:
    """The memory a page carries, for a restore (stamps kept) or an import (``x_import``)."""
    fm = page.frontmatter
    found = fm.get(IMPLEMENTATION_KEY)
    own: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    source: Mapping[str, Any] = fm.get("source") or {}
    fields = page_fields(fm, path, keep_import=restore or "x_import" in fm)
    if restore:
        status = _status(fm.get("review"))
        hidden = bool(own.get("hidden")) and status == "active"
        stamps: dict[str, Any] = {
            "key": [path, sha256],
            "base": (2 if status == "active" else 1) + (1 if hidden else 0),
            "updated": fm["updated"],
            "audit": [dict(a) for a in audit],
        }
        for name in ("id", "source", "review"):
            if name in fm:
                stamps[name] = fm[name]
        if "created_at" in own:
            stamps["created_at"] = own["created_at"]
        if "recorded_at" in fm:
            fields["recorded_at"] = fm["recorded_at"]
        principal = source.get("principal")
        return Item(
            content=page.body,
            where=where,
            key=(path, sha256),
            fields=fields,
            channel=own.get("channel") or _channel(source),
            actor=principal,
            on_behalf_of=source.get("on_behalf_of"),
            status=status,
            hidden=hidden,
            stamps=stamps,
        )
    review = fm.get("review")
    if review is not None and review.get("state") == "rejected":
        return Refusal(where, "rejected in the source; not imported")
    x_import: dict[str, Any] | None = None
    if "x_import" not in fm:  # written once: an earlier import's provenance is kept as is
        x_import = {"format": "pcp", "sha256": sha256}
        if exporter:
            x_import["exporter"] = exporter[:100]
        for name in ("id", "recorded_at", "source", "review"):
            if name in fm:
                x_import[name] = fm[name]
    return Item(
        content=page.body,
        where=where,
        key=(path, sha256),
        fields=fields,
        channel=_channel(source),
        status="proposed" if review is not None and review.get("state") == "proposed" else None,
        x_import=x_import,
        stamps={"key": [path, sha256]},
    )


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex SHA-256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def known_item(path: str, sha256: str, *, where: str) -> Item:
    """A page already in the ledger (its key is known): not parsed, counted as unchanged."""
    return Item(content="", where=where, key=(path, sha256))


def decode(
    data: bytes,
    *,
    name: str = "page.md",
    restore: bool = False,
    known: Collection[tuple[str, str]] = (),
    **_: Any,
) -> Decoded:
    """One page file as an item (its path from the file name, without ``.md``).

    A page whose key (path, sha256) is in ``known`` is returned unparsed (:func:`known_item`).
    """
    stem = name.rsplit("/", 1)[-1]
    path = check_path(stem[:-3] if stem.endswith(".md") else stem, where=name)
    sha256 = sha256_bytes(data)
    if (path, sha256) in known:
        return [known_item(path, sha256, where=name)], []
    page = decode_page(data, where=name)
    item = page_item(page, path=path, sha256=sha256, where=name, restore=restore)
    return decoded_one(item)


def sniff(data: bytes, filename: str = "") -> bool:
    """A page: frontmatter with ``title`` and a UTC ``updated`` (basic-memory has neither)."""
    return frontmatter_with(data, r'^"?updated"?: "?\d{4}-\d{2}-\d{2}T', r'^"?title"?:')


CODEC = register(FunctionCodec(NAME, sniff, decode, "one PCP 0.3 memory page (.md)"))

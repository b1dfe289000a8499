"""The personaxis v1.0 episodic hash chain: exact hashing bytes, verification, redaction.

An entry is ``{ts, content, source, tags, content_hash, prev_hash, hash}`` (plus
``redacted: true`` after a sanctioned redaction). ``content_hash = sha256(content)`` and
``hash = sha256`` of the compact JSON of ``{ts, content_hash, source, tags, prev_hash}``
in that key order, non-ASCII kept raw — byte for byte what the reference runtime's
``JSON.stringify`` produces. Legacy (≤0.10) entries have no ``content_hash`` and hash over
the content itself; they verify by their own format and can be re-anchored.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from troth.core.errors import FormatError, InvalidInputError

REDACTED_MARKER = "[redacted]"
TOMBSTONE_TAG = "tombstone"
TARGET_PREFIX = "target:"
INJECTION_TAG = "injection-flagged"
CHANNELS = ("user", "tool", "internal", "synthesis")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def sha256_hex(text: str) -> str:
    """Lowercase hex SHA-256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_js_string = json.encoder.encode_basestring


def js_json(value: Any) -> str:
    """Serialise like JavaScript's ``JSON.stringify``: compact, non-ASCII raw, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def format_ts(moment: datetime) -> str:
    """Millisecond UTC timestamp with ``Z``, as ``Date.prototype.toISOString`` writes it."""
    if moment.tzinfo is None:
        raise InvalidInputError("timestamps must carry a time zone", value=str(moment))
    # isoformat, not strftime: years before 1000 keep their four digits, and it is faster.
    if moment.tzinfo is UTC:  # the clock's own (every write): only "+00:00" to replace
        return moment.isoformat(timespec="milliseconds")[:-6] + "Z"
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def parse_utc(value: str) -> datetime:
    """Read an RFC 3339 time written with ``Z`` (or an offset) as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def check_text(text: str, *, field: str = "content") -> None:
    """Refuse text the reference runtime would hash differently (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{field} contains a lone surrogate at position {exc.start}; "
            "send valid Unicode text (UTF-8 encodable)",
            field=field,
        ) from exc


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of a personaxis episodic log."""

    ts: str
    content: str
    source: str
    tags: tuple[str, ...]
    content_hash: str | None
    prev_hash: str
    hash: str
    redacted: bool = False

    @property
    def is_legacy(self) -> bool:
        """True for a ≤0.10 line, which hashes over its content directly."""
        return self.content_hash is None

    @property
    def is_tombstone(self) -> bool:
        """True for a deletion record."""
        return TOMBSTONE_TAG in self.tags

    @property
    def target(self) -> str | None:
        """The hash a tombstone points at (the first ``target:`` tag), if any."""
        for tag in self.tags:
            if tag.startswith(TARGET_PREFIX):
                return tag[len(TARGET_PREFIX) :]
        return None

    def to_json(self) -> dict[str, Any]:
        """The line as the reference runtime orders its keys."""
        out: dict[str, Any] = {
            "ts": self.ts,
            "content": self.content,
            "source": self.source,
            "tags": list(self.tags),
        }
        if self.content_hash is not None:
            out["content_hash"] = self.content_hash
        out["prev_hash"] = self.prev_hash
        out["hash"] = self.hash
        if self.redacted:
            out["redacted"] = True
        return out

    def to_line(self) -> str:
        """The JSONL line, without the newline."""
        return js_json(self.to_json())


def v1_hash(ts: str, content_hash: str, source: str, tags: Sequence[str], prev_hash: str) -> str:
    """The v1.0 chain hash over ``{ts, content_hash, source, tags, prev_hash}``.

    Built by hand with the JSON string encoder ``json.dumps`` itself uses (non-ASCII raw), so
    the bytes equal ``js_json`` of the document; verification runs this once per entry.
    """
    document = (
        f'{{"ts":{_js_string(ts)},"content_hash":{_js_string(content_hash)},'
        f'"source":{_js_string(source)},"tags":[{",".join(map(_js_string, tags))}],'
        f'"prev_hash":{_js_string(prev_hash)}}}'
    )
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


def legacy_hash(ts: str, content: str, source: str, tags: Sequence[str], prev_hash: str) -> str:
    """The ≤0.10 chain hash over ``{ts, content, source, tags, prev_hash}``."""
    document = {"ts": ts, "content": content, "source": source, "tags": list(tags)}
    document["prev_hash"] = prev_hash
    return sha256_hex(js_json(document))


def make_entry(*, ts: str, content: str, source: str, tags: Iterable[str], prev_hash: str) -> Entry:
    """A new v1.0 entry linked to ``prev_hash``."""
    if source not in CHANNELS:
        raise InvalidInputError(
            f"unknown source channel {source!r}; use one of {', '.join(CHANNELS)}", field="source"
        )
    check_text(content)
    tag_tuple = tuple(tags)
    content_hash = sha256_hex(content)
    return Entry(
        ts=ts,
        content=content,
        source=source,
        tags=tag_tuple,
        content_hash=content_hash,
        prev_hash=prev_hash,
        hash=v1_hash(ts, content_hash, source, tag_tuple, prev_hash),
    )


def tombstone_content(reason: str) -> str:
    """The content of a tombstone, as ``tombstoneMemory`` writes it."""
    return f"[deleted by user request: {reason}]"


def redact_entry(entry: Entry) -> Entry:
    """The sanctioned rewrite: content becomes ``[redacted]``; every hash stays."""
    if entry.is_legacy:
        raise InvalidInputError(
            "this entry is in the legacy (≤0.10) format and cannot be redacted; "
            "re-anchor the chain first",
            hash=entry.hash,
        )
    return replace(entry, content=REDACTED_MARKER, redacted=True)


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of verifying a chain: ``broken_at`` is the first bad 0-based index."""

    ok: bool
    length: int
    head: str
    broken_at: int | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "ok": self.ok,
            "length": self.length,
            "head": self.head,
            "broken_at": self.broken_at,
            "reason": self.reason,
        }


def entry_problem(entry: Entry, expected_prev: str) -> str | None:
    """Why one entry does not verify after a predecessor whose hash is ``expected_prev``."""
    if entry.prev_hash != expected_prev:
        return "prev_hash does not match the previous entry's hash"
    if entry.redacted and entry.content != REDACTED_MARKER:
        # Stricter than the reference verifier, which skips the content of a redacted line:
        # the reference only ever writes "[redacted]" there, and without this rule setting
        # ``redacted: true`` on a line would hide any later edit of its content.
        return "a redacted entry's content must be [redacted]"
    if entry.content_hash is not None:
        recomputed = v1_hash(
            entry.ts, entry.content_hash, entry.source, entry.tags, entry.prev_hash
        )
        if recomputed != entry.hash:
            return "hash does not match {ts, content_hash, source, tags, prev_hash}"
        if not entry.redacted and sha256_hex(entry.content) != entry.content_hash:
            return "content does not match content_hash"
        return None
    if (
        legacy_hash(entry.ts, entry.content, entry.source, entry.tags, entry.prev_hash)
        != entry.hash
    ):
        return "legacy hash does not match {ts, content, source, tags, prev_hash}"
    return None


def verify(entries: Iterable[Entry], *, start_index: int = 0, prev_hash: str = "") -> Verification:
    """Verify a chain (or its continuation after ``prev_hash``) per personaxis rules."""
    index = start_index
    head = prev_hash
    for entry in entries:
        problem = entry_problem(entry, head)
        if problem is not None:
            return Verification(False, index, head, broken_at=index, reason=problem)
        head = entry.hash
        index += 1
    return Verification(True, index, head)


def live_entries(entries: Sequence[Entry]) -> list[Entry]:
    """What ``readLiveMemory`` returns: no tombstones, nothing a tombstone targets."""
    targets = {e.target for e in entries if e.is_tombstone and e.target is not None}
    return [e for e in entries if not e.is_tombstone and e.hash not in targets]


def reanchor(entries: Sequence[Entry]) -> tuple[list[Entry], dict[str, str]]:
    """Rewrite a chain into v1.0 form (``migrateMemoryChain``); returns entries and old→new."""
    remapped: dict[str, str] = {}
    out: list[Entry] = []
    prev = ""
    for entry in entries:
        content_hash = entry.content_hash or sha256_hex(entry.content)
        tags = tuple(
            TARGET_PREFIX + remapped[t[len(TARGET_PREFIX) :]]
            if t.startswith(TARGET_PREFIX) and t[len(TARGET_PREFIX) :] in remapped
            else t
            for t in entry.tags
        )
        new_hash = v1_hash(entry.ts, content_hash, entry.source, tags, prev)
        out.append(
            Entry(
                ts=entry.ts,
                content=entry.content,
                source=entry.source,
                tags=tags,
                content_hash=content_hash,
                prev_hash=prev,
                hash=new_hash,
                redacted=entry.redacted,
            )
        )
        remapped[entry.hash] = new_hash
        prev = new_hash
    return out, remapped


_ENTRY_KEYS = {"ts", "content", "source", "tags", "content_hash", "prev_hash", "hash", "redacted"}


def entry_from_json(data: Any, *, where: str = "entry") -> Entry:
    """Read one parsed JSON object as an entry, with a precise error for each defect."""
    if not isinstance(data, dict):
        raise FormatError(f"{where}: expected a JSON object, found {type(data).__name__}")
    unknown = sorted(set(data) - _ENTRY_KEYS)
    if unknown:
        raise FormatError(f"{where}: unknown keys {', '.join(unknown)}")
    for key in ("ts", "content", "source", "prev_hash", "hash"):
        if not isinstance(data.get(key), str):
            raise FormatError(f"{where}: '{key}' must be a string")
    tags = data.get("tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise FormatError(f"{where}: 'tags' must be a list of strings")
    content_hash = data.get("content_hash")
    if content_hash is not None and not (
        isinstance(content_hash, str) and _HEX64.fullmatch(content_hash)
    ):
        raise FormatError(f"{where}: 'content_hash' must be 64 lowercase hex digits")
    redacted = data.get("redacted", False)
    if not isinstance(redacted, bool):
        raise FormatError(f"{where}: 'redacted' must be true or false")
    if data["source"] not in CHANNELS:
        raise FormatError(
            f"{where}: unknown source {data['source']!r}; expected one of {', '.join(CHANNELS)}"
        )
    return Entry(
        ts=data["ts"],
        content=data["content"],
        source=data["source"],
        tags=tuple(tags),
        content_hash=content_hash,
        prev_hash=data["prev_hash"],
        hash=data["hash"],
        redacted=redacted,
    )


def is_canonical_ts(ts: str) -> bool:
    """True for a millisecond UTC ``Z`` timestamp."""
    return bool(_TS.fullmatch(ts))

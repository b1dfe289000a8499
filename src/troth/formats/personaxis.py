"""personaxis ``episodic.jsonl``: one JSON object per line, byte-compatible with the reference.

Lines are written as the reference runtime's ``JSON.stringify(entry) + "\\n"``; reading skips
blank lines and names the line of every defect.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from troth.core.chain import (
    INJECTION_TAG,
    TARGET_PREFIX,
    TOMBSTONE_TAG,
    Entry,
    entry_from_json,
    live_entries,
    reanchor,
    verify,
)
from troth.core.errors import FormatError
from troth.core.records import UTC_PATTERN
from troth.formats import jsontext
from troth.formats.registry import Decoded, FunctionCodec, Item, Refusal, register

NAME = "personaxis"


@cache
def schema() -> dict[str, Any]:
    """The personaxis v1.0 entry schema shipped with the package."""
    text = resources.files("troth.formats").joinpath("schemas/personaxis.memory.schema.json")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return loaded


def encode(entries: Iterable[Entry]) -> bytes:
    """The JSONL bytes of a chain."""
    return "".join(entry.to_line() + "\n" for entry in entries).encode("utf-8")


def decode(data: bytes, *, name: str = "episodic.jsonl") -> list[Entry]:
    """Entries from JSONL bytes; a FormatError names the file and line of the first defect."""
    return [entry for _, entry, _ in _numbered(data, name)]


def _numbered(data: bytes, name: str) -> list[tuple[int, Entry, bytes]]:
    """Each entry with its line number and its line's bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name}: not UTF-8 text (byte {exc.start})", file=name) from exc
    entries = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        parsed = jsontext.loads(line, name=name, line=number)
        entry = entry_from_json(parsed, where=f"{name}:{number}")
        entries.append((number, entry, line.encode("utf-8")))
    return entries


def verified(data: bytes, *, name: str, anchor: bool = False) -> list[Entry]:
    """The entries of a log whose chain verifies (re-anchored with ``anchor``).

    A broken chain is refused whole: the FormatError names the file, the line and the
    0-based entry where verification first fails. Legacy (≤0.10) lines verify by their own
    rule; ``anchor`` rewrites them into v1.0 form after the chain has verified as it is.
    """
    numbered = _numbered(data, name)
    result = verify(entry for _, entry, _ in numbered)
    if not result.ok:
        index = result.broken_at or 0
        line = numbered[index][0]
        raise FormatError(
            f"{name}:{line}: the chain is broken at entry #{index} ({result.reason});"
            " nothing was imported",
            file=name,
            line=line,
            broken_at=index,
        )
    entries = [entry for _, entry, _ in numbered]
    return reanchor(entries)[0] if anchor else entries


_LIFECYCLE_EVENTS = tuple(
    f"lm:event:{e}"
    for e in ("no_store", "approve", "reject", "hide", "forget", "redact", "expire", "export")
)


def items(
    data: bytes, *, name: str = "episodic.jsonl", reanchor: bool = False, **_: Any
) -> Decoded:
    """The live entries of a verified log as memories to import (``x_import`` personaxis).

    Tombstones, what they target, and troth's own lifecycle entries (approvals,
    rejections …, which are not memories) are left out.
    """
    entries = verified(data, name=name, anchor=reanchor)
    lines = {entry.hash: line for _, entry, line in _numbered_entries(data, name, entries)}
    numbers = {entry.hash: number for number, entry, _ in _numbered_entries(data, name, entries)}
    out: list[Item] = []
    refused: list[Refusal] = []
    for entry in live_entries(entries):
        where = f"{name}:{numbers[entry.hash]}"
        if any(tag in _LIFECYCLE_EVENTS for tag in entry.tags):
            continue
        if entry.redacted:
            refused.append(Refusal(where, "redacted in the source"))
            continue
        tags = [
            t
            for t in entry.tags
            if not t.startswith(("lm:", TARGET_PREFIX)) and t not in (TOMBSTONE_TAG, INJECTION_TAG)
        ]
        sha = hashlib.sha256(lines[entry.hash]).hexdigest()
        x_import: dict[str, Any] = {"format": NAME, "id": entry.hash, "sha256": sha}
        if UTC_PATTERN.fullmatch(entry.ts):
            x_import["recorded_at"] = entry.ts
        x_import["source"] = {"channel": entry.source}
        fields: dict[str, Any] = {"tags": tags[:64]} if tags else {}
        out.append(
            Item(
                content=entry.content,
                where=where,
                key=(entry.hash, sha),
                fields=fields,
                channel=entry.source,
                x_import=x_import,
                stamps={"key": [entry.hash, sha]},
            )
        )
    return out, refused


def _numbered_entries(
    data: bytes, name: str, entries: list[Entry]
) -> list[tuple[int, Entry, bytes]]:
    """Line numbers and line bytes beside (possibly re-anchored) entries, in file order."""
    numbered = _numbered(data, name)
    return [(n, entry, line) for (n, _, line), entry in zip(numbered, entries, strict=True)]


def validate(entry: Entry) -> None:
    """Check one entry against the personaxis schema (legacy lines do not pass it)."""
    validator = jsonschema.Draft7Validator(schema(), format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(entry.to_json()), key=lambda e: list(e.path))
    if errors:
        raise FormatError(
            f"entry {entry.hash[:12]} does not match the personaxis schema: {errors[0].message}"
        )


def sniff(data: bytes) -> bool:
    """True when the bytes look like a personaxis log."""
    first = data.lstrip()[:4096].split(b"\n", 1)[0]
    try:
        parsed = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and {"ts", "content", "prev_hash", "hash"} <= set(parsed)


CODEC = register(
    FunctionCodec(NAME, lambda data, _name: sniff(data), items, "personaxis episodic.jsonl")
)

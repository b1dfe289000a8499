"""personaxis ``episodic.jsonl``: one JSON object per line, byte-compatible with the reference.

Lines are written as the reference runtime's ``JSON.stringify(entry) + "\\n"``; reading skips
blank lines and names the line of every defect.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from ledgermind.core.chain import Entry, entry_from_json
from ledgermind.core.errors import FormatError

NAME = "personaxis"


@cache
def schema() -> dict[str, Any]:
    """The personaxis v1.0 entry schema shipped with the package."""
    text = resources.files("ledgermind.formats").joinpath("schemas/personaxis.memory.schema.json")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return loaded


def encode(entries: Iterable[Entry]) -> bytes:
    """The JSONL bytes of a chain."""
    return "".join(entry.to_line() + "\n" for entry in entries).encode("utf-8")


def decode(data: bytes, *, name: str = "episodic.jsonl") -> list[Entry]:
    """Entries from JSONL bytes; a FormatError names the file and line of the first defect."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name}: not UTF-8 text (byte {exc.start})", file=name) from exc
    entries = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            parsed = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(
                f"{name}:{number}: not valid JSON ({exc.msg} at column {exc.colno})",
                file=name,
                line=number,
            ) from exc
        entries.append(entry_from_json(parsed, where=f"{name}:{number}"))
    return entries


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
    except ValueError:
        return False
    return isinstance(parsed, dict) and {"ts", "content", "prev_hash", "hash"} <= set(parsed)

"""Helpers shared by the importers of other tools' formats (mem0, OMP, Remnic, basic-memory)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC
from typing import Any

from troth.core.chain import parse_utc
from troth.core.errors import FormatError
from troth.core.events import CanonicalizationError, canonical_bytes
from troth.core.records import DATE_OR_DATETIME_PATTERN, PATH_PATTERN
from troth.formats import jsontext

_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def record_sha256(record: Any) -> str:
    """SHA-256 of a JSON record as received, in canonical (RFC 8785) form.

    A record RFC 8785 cannot canonicalise (an integer past 2**53) is hashed as compact JSON
    with sorted keys instead: still one fixed text per record.
    """
    try:
        text = canonical_bytes(record)
    except CanonicalizationError:
        compact = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        text = compact.encode("utf-8")
    return hashlib.sha256(text).hexdigest()


def to_utc(value: Any) -> str | None:
    """An RFC 3339 time in UTC with ``Z`` (PCP ``utc_datetime``), or None if unreadable."""
    if not isinstance(value, str):
        return None
    try:
        moment = parse_utc(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return text + "Z"


def date_or_time(value: Any) -> str | None:
    """The value if it is a PCP ``date_or_datetime``, else its UTC form, else None."""
    if isinstance(value, str) and DATE_OR_DATETIME_PATTERN.fullmatch(value):
        return value
    return to_utc(value)


def slug_path(text: str, *, fallback: str) -> str:
    """A PCP page path made from a foreign name (segments cleaned, ≤255 characters)."""
    segments = []
    for part in text.replace("\\", "/").split("/"):
        cleaned = _SLUG_BAD.sub("-", part.strip()).strip("-.")[:64]
        if cleaned and cleaned not in (".", ".."):
            segments.append(cleaned)
    path = "/".join(segments)[:255].rstrip("/")
    return path if path and PATH_PATTERN.fullmatch(path) else fallback


def load_json(data: bytes, *, name: str) -> Any:
    """JSON, or JSON Lines (a list), with the file and line of a syntax error."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name}: not UTF-8 text (byte {exc.start})", file=name) from exc
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            return jsontext.loads(text, name=name)
        except FormatError:
            # One object per line also starts with "{": only that shape falls through.
            if not stripped.startswith("{") or "\n{" not in text.strip():
                raise
    return [
        jsontext.loads(line, name=name, line=number)
        for number, line in enumerate(text.split("\n"), start=1)
        if line.strip()
    ]


def require(record: Any, key: str, kind: type | tuple[type, ...], *, where: str) -> Any:
    """``record[key]`` of the given type, or a FormatError naming where and what."""
    if not isinstance(record, Mapping):
        raise FormatError(f"{where}: expected a JSON object, found {type(record).__name__}")
    value = record.get(key)
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise FormatError(f"{where}: '{key}' must be {names}; got {type(value).__name__}")
    return value


def optional(record: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``record[key]`` if present and not null, checked like :func:`require`."""
    if record.get(key) is None:
        return None
    return require(record, key, kind, where=where)


def clean_tags(values: Any) -> list[str]:
    """Unique tags of 1..100 characters (others dropped)."""
    out: list[str] = []
    for value in values or ():
        if isinstance(value, str):
            tag = value.strip()[:100]
            if tag and tag not in out and tag != "tombstone" and not tag.startswith("lm:"):
                out.append(tag)
    return out[:64]

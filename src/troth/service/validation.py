"""Checks on what callers hand the facade: types, sizes, enums, each with a fixing hint."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from troth.core.chain import check_text
from troth.core.errors import InvalidInputError
from troth.core.events import canonical
from troth.core.limits import (
    MAX_CONTENT_CHARS,
    MAX_NOTE_CHARS,
    MAX_REASON_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TITLE_CHARS,
)
from troth.core.records import (
    CORE_RELATIONS,
    DATE_OR_DATETIME_PATTERN,
    ERASED_SCOPE_ID,
    GLOBAL_SCOPE,
    ID_PATTERN,
    LIFECYCLES,
    NEVER_TTL,
    PAGE_TYPES,
    PARTITION_PATTERN,
    PATH_PATTERN,
    TTL,
    UTC_PATTERN,
    Relation,
    Scope,
    check_choice,
    check_unit_interval,
)
from troth.core.tags import MAX_NAMESPACED_TAG_CHARS, is_namespaced

_NAMESPACED_REL = re.compile(r"^[a-z][a-z0-9-]*:[a-z][a-z0-9_-]*$")
_EXTRA_KEY = re.compile(r"^x[_-][A-Za-z0-9_-]+$")


def text(value: object, field: str, *, max_chars: int, required: bool = True) -> str:
    """A non-empty string of at most ``max_chars`` characters."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be text; got {type(value).__name__}", field=field)
    if required and not value.strip():
        hint = "give the text to remember" if field == "content" else f"give a non-empty {field}"
        raise InvalidInputError(f"{field} is empty; {hint}", field=field)
    if len(value) > max_chars:
        raise InvalidInputError(
            f"{field} is {len(value)} characters; the limit is {max_chars}. "
            "Split it into several memories or shorten it",
            field=field,
            limit=max_chars,
        )
    check_text(value, field=field)
    return value


def content(value: object) -> str:
    """Memory text: 1..2000 characters."""
    return text(value, "content", max_chars=MAX_CONTENT_CHARS)


def reason(value: object) -> str:
    """Why this is remembered: 1..280 characters."""
    return text(value, "reason", max_chars=MAX_REASON_CHARS)


def title(value: object) -> str:
    """A page title: up to 300 characters."""
    return text(value, "title", max_chars=MAX_TITLE_CHARS)


def note(value: object, field: str = "reason") -> str:
    """A short audit note (HUX caps notes at 200 characters)."""
    return text(value, field, max_chars=MAX_NOTE_CHARS)


def tags(values: object) -> tuple[str, ...]:
    """Unique tags of 1..100 characters, at most 64."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidInputError("tags must be a list of strings", field="tags")
    out: list[str] = []
    for value in values:
        # A tag under its writer's name (core.tags) has the writer's tag behind the name.
        namespaced = isinstance(value, str) and is_namespaced(value)
        longest = MAX_NAMESPACED_TAG_CHARS if namespaced else MAX_TAG_CHARS
        if not isinstance(value, str) or not 1 <= len(value) <= longest or not value.strip():
            raise InvalidInputError(
                f"each tag must be 1..{MAX_TAG_CHARS} characters of text; got {value!r}",
                field="tags",
            )
        if value.startswith(("lm:", "target:")) or value == "tombstone":
            raise InvalidInputError(f"tag {value!r} is reserved by the ledger", field="tags")
        if value not in out:
            out.append(value)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(f"at most {MAX_TAGS} tags per memory", field="tags")
    return tuple(out)


def scope(value: object) -> Scope:
    """A Scope or its text form (``global``, ``project:ID``, ``conversation:ID``)."""
    if isinstance(value, Scope):
        return value
    if not isinstance(value, str):
        raise InvalidInputError("scope must be text like global, project:ID or conversation:ID")
    if value == "global":  # the default of every write: one shared (frozen) value
        return GLOBAL_SCOPE
    parsed = Scope.parse(value)
    if parsed.scope_id == ERASED_SCOPE_ID:
        raise InvalidInputError(
            f"{ERASED_SCOPE_ID} is the id an erased scope reads; give the scope an id of"
            " letters, digits and ._:-"
        )
    return parsed


def ttl(value: object) -> TTL:
    """A TTL or its text form (``never``, ``expires_at:2027-01-01T00:00:00Z``, ``decay:30``)."""
    if isinstance(value, TTL):
        return value
    if isinstance(value, str) and value == "never":  # every write's default: one shared value
        return NEVER_TTL
    if isinstance(value, Mapping):
        try:
            return TTL(**value)
        except TypeError as exc:
            raise InvalidInputError(f"ttl has unknown keys: {exc}") from exc
    if not isinstance(value, str):
        raise InvalidInputError("ttl must be never, expires_at:<UTC time> or decay:<days>")
    policy, _, arg = value.partition(":")
    if policy == "decay":
        if not arg.isdigit():
            raise InvalidInputError("write decay:<days>, for example decay:30", field="ttl")
        return TTL("decay", decay_days=int(arg))
    if policy == "expires_at":
        return TTL("expires_at", expires_at=arg)
    return TTL(policy)


def utc_time(value: object, field: str) -> str | None:
    """None or an RFC 3339 UTC time with Z."""
    if value is None:
        return None
    if not isinstance(value, str) or not UTC_PATTERN.fullmatch(value):
        raise InvalidInputError(
            f"{field} must be a UTC time like 2027-01-01T00:00:00Z; got {value!r}", field=field
        )
    return value


def date_or_time(value: object, field: str) -> str | None:
    """None or an RFC 3339 date or date-time with an offset."""
    if value is None:
        return None
    if not isinstance(value, str) or not DATE_OR_DATETIME_PATTERN.fullmatch(value):
        raise InvalidInputError(
            f"{field} must be a date like 2026-03-01 or a time like 2026-03-01T09:00:00Z;"
            f" got {value!r}",
            field=field,
        )
    return value


def unit(value: object, field: str) -> float | None:
    """None or a number in [0, 1]."""
    return check_unit_interval(value, field)


def relations(values: object) -> tuple[Relation, ...]:
    """Relations as Relation objects or ``{rel, target, confidence?}`` mappings."""
    if values is None:
        return ()
    if not isinstance(values, Iterable) or isinstance(values, str | Mapping):
        raise InvalidInputError("relations must be a list of {rel, target} objects")
    out = []
    for value in values:
        relation = value if isinstance(value, Relation) else None
        if relation is None:
            if not isinstance(value, Mapping) or set(value) - {"rel", "target", "confidence"}:
                raise InvalidInputError("each relation is {rel, target, confidence?}")
            relation = Relation(
                rel=value.get("rel"),  # type: ignore[arg-type]
                target=value.get("target"),  # type: ignore[arg-type]
                confidence=value.get("confidence"),
            )
        if not isinstance(relation.rel, str) or not (
            relation.rel in CORE_RELATIONS or _NAMESPACED_REL.fullmatch(relation.rel)
        ):
            raise InvalidInputError(
                f"relation {relation.rel!r} must be one of {', '.join(CORE_RELATIONS)}"
                " or namespaced like ns:name"
            )
        page_path(relation.target, "relation target")
        check_unit_interval(relation.confidence, "relation confidence")
        out.append(relation)
    return tuple(out)


def page_path(value: object, field: str = "path") -> str:
    """A PCP page path: segments of [A-Za-z0-9._-], no leading dot, no '..', ≤255 chars."""
    if not isinstance(value, str) or len(value) > 255 or not PATH_PATTERN.fullmatch(value):
        raise InvalidInputError(
            f"{field} {value!r} is not a page path: use segments of letters, digits and ._- "
            "separated by /, none starting with a dot, 255 characters at most",
            field=field,
        )
    return value


def partition(value: object) -> str:
    """A partition name."""
    if not isinstance(value, str) or not PARTITION_PATTERN.fullmatch(value):
        raise InvalidInputError(
            f"partition {value!r} must be lowercase letters, digits, _ and -, up to 64",
            field="partition",
        )
    return value


def identifier(value: object, field: str = "id") -> str:
    """An opaque id of letters, digits and ._:-."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise InvalidInputError(f"{field} {value!r} is not a valid id", field=field)
    return value


def whole_number(value: object, low: int, high: int, field: str) -> int:
    """An int (not a bool) from ``low`` to ``high``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{field} must be a whole number from {low} to {high}", field=field)
    return value


def choice(value: object, choices: tuple[str, ...], field: str) -> str:
    """One of a fixed set of words."""
    return check_choice(value, choices, field)


def lifecycle(value: object) -> str:
    """A PCP lifecycle word."""
    return check_choice(value, LIFECYCLES, "lifecycle")


def page_type(value: object) -> str | None:
    """None or a PCP page type."""
    return None if value is None else check_choice(value, PAGE_TYPES, "type")


def extra(values: object) -> dict[str, Any]:
    """Implementation keys (``x_…``/``x-…``) kept through round trips."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise InvalidInputError("extra must be a mapping of x_ keys")
    if not values:
        return {}  # most writes: nothing to check (canonical({}) cost ~10,000 instructions)
    for key in values:
        if not isinstance(key, str) or not _EXTRA_KEY.fullmatch(key):
            raise InvalidInputError(f"extra key {key!r} must look like x_name or x-name")
    try:
        canonical(values)
    except (ValueError, TypeError) as exc:  # rfc8785's errors are ValueErrors
        raise InvalidInputError(
            f"extra values must be JSON data (text, numbers, true/false, null, lists and"
            f" mappings of text keys); {exc}",
            field="extra",
        ) from exc
    return dict(values)

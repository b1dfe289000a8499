"""Value objects of the domain: principals, scopes, memories and their audit trail."""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final, Literal, get_args

from troth.core.errors import InvalidInputError
from troth.core.limits import (  # defined in core/limits.py; kept importable from here
    MAX_CONTENT_CHARS as MAX_CONTENT_CHARS,
)
from troth.core.limits import MAX_REASON_CHARS as MAX_REASON_CHARS
from troth.core.limits import MAX_TAG_CHARS as MAX_TAG_CHARS
from troth.core.limits import MAX_TAGS as MAX_TAGS
from troth.core.limits import MAX_TITLE_CHARS as MAX_TITLE_CHARS

# The closed vocabularies, once: as types for the edges' schemas (HTTP, MCP) and as tuples.
Channel = Literal["user", "internal", "tool", "synthesis"]
Kind = Literal["preference", "fact", "instruction", "context"]
Status = Literal["proposed", "active", "rejected", "expired", "forgotten", "no_store"]
Topic = Literal[
    "general",
    "health",
    "finance",
    "legal",
    "relationships",
    "credentials",
    "minors",
    "location",
    "biometric",
]
CHANNELS: Final[tuple[str, ...]] = get_args(Channel)
KINDS: Final[tuple[str, ...]] = get_args(Kind)
STATUSES: Final[tuple[str, ...]] = get_args(Status)
TOPICS: Final[tuple[str, ...]] = get_args(Topic)
APPROVAL_MODES: Final = ("automatic", "ask", "no_store")
SENSITIVITIES: Final = ("normal", "sensitive")
SCOPE_LEVELS: Final = ("global", "project", "conversation")
TTL_POLICIES: Final = ("never", "expires_at", "decay")
LIFECYCLES: Final = ("active", "validated", "stale", "archived")
PAGE_TYPES: Final = ("episodic", "semantic", "procedural")
AUDIT_ACTIONS: Final = (
    "proposed",
    "approved",
    "rejected",
    "expired",
    "forgotten",
    "exported",
    "no_store",
    "superseded",
    "retrieval_removed",
    "edited",
)
CORE_RELATIONS: Final = ("supersedes", "contradicts", "refines", "about")


PRINCIPAL_PATTERN: Final = re.compile(r"^(human|agent|org|service):[A-Za-z0-9._@+/-]{1,128}$")
ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
PARTITION_PATTERN: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
PATH_PATTERN: Final = re.compile(
    r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}(/[A-Za-z0-9_][A-Za-z0-9._-]{0,63})*$"
)
UTC_PATTERN: Final = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$")
DATE_OR_DATETIME_PATTERN: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}))?$"
)
SYSTEM_PRINCIPAL: Final = "service:troth"
ERASED_SCOPE_ID: Final = "-redacted-"
"""The id a project or conversation scope reads once its memory is redacted (an id of the
pattern every format accepts; reserved: no write may give it)."""


def check_choice(value: object, choices: tuple[str, ...], field_name: str) -> str:
    """Return ``value`` if it is one of ``choices``; otherwise a precise error."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidInputError(
            f"{field_name} must be one of {', '.join(choices)}; got {value!r}",
            field=field_name,
        )
    return value


def check_principal(value: object, field_name: str = "principal") -> str:
    """A typed principal: ``human:``, ``agent:``, ``org:`` or ``service:`` then a local id."""
    if not isinstance(value, str) or not PRINCIPAL_PATTERN.fullmatch(value):
        raise InvalidInputError(
            f"{field_name} {value!r} is not a principal; write human:NAME, agent:NAME, "
            "org:NAME or service:NAME (letters, digits and ._@+/- only, up to 128)",
            field=field_name,
        )
    return value


def principal_kind(principal: str) -> str:
    """``human``, ``agent``, ``org`` or ``service``."""
    return principal.split(":", 1)[0]


def check_unit_interval(value: object, field_name: str) -> float | None:
    """None, or a number in [0, 1]."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInputError(f"{field_name} must be a number from 0 to 1; got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a memory applies: ``global``, or one ``project`` or ``conversation``."""

    level: str = "global"
    scope_id: str | None = None

    def __post_init__(self) -> None:
        check_choice(self.level, SCOPE_LEVELS, "scope level")
        if self.level == "global" and self.scope_id is not None:
            raise InvalidInputError("a global scope takes no id; write 'global'")
        if self.level != "global" and (
            self.scope_id is None or not ID_PATTERN.fullmatch(self.scope_id)
        ):
            raise InvalidInputError(
                f"a {self.level} scope needs an id of letters, digits and ._:- "
                f"(write {self.level}:ID); got {self.scope_id!r}"
            )

    @classmethod
    def parse(cls, text: str) -> Scope:
        """``global``, ``project:ID`` or ``conversation:ID``."""
        level, _, scope_id = text.partition(":")
        return cls(level, scope_id or None)

    def __str__(self) -> str:
        return self.level if self.scope_id is None else f"{self.level}:{self.scope_id}"

    def to_json(self) -> dict[str, Any]:
        """The HUX ``scope`` object."""
        out: dict[str, Any] = {"level": self.level}
        if self.scope_id is not None:
            out["scope_id"] = self.scope_id
        return out


@dataclass(frozen=True, slots=True)
class TTL:
    """Retention: ``never``, an absolute ``expires_at``, or ``decay`` after days without use."""

    policy: str = "never"
    expires_at: str | None = None
    decay_days: int | None = None

    def __post_init__(self) -> None:
        check_choice(self.policy, TTL_POLICIES, "ttl policy")
        if self.policy == "expires_at" and (
            self.expires_at is None or not UTC_PATTERN.fullmatch(self.expires_at)
        ):
            raise InvalidInputError(
                "ttl policy expires_at needs expires_at as a UTC time like 2027-01-01T00:00:00Z"
            )
        if self.policy == "decay" and (
            not isinstance(self.decay_days, int)
            or isinstance(self.decay_days, bool)
            or not 1 <= self.decay_days <= 3650
        ):
            raise InvalidInputError("ttl policy decay needs decay_days, a whole number 1..3650")
        if self.policy == "never" and (self.expires_at or self.decay_days):
            raise InvalidInputError("ttl policy never takes neither expires_at nor decay_days")

    def to_json(self) -> dict[str, Any]:
        """The HUX ``ttl`` object."""
        out: dict[str, Any] = {"policy": self.policy}
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at
        if self.decay_days is not None:
            out["decay_days"] = self.decay_days
        return out


GLOBAL_SCOPE: Final = Scope()
"""The global scope: frozen, so every memory of it may share this one value."""
NEVER_TTL: Final = TTL()
"""Kept until forgotten: frozen, so every memory kept so may share this one value."""


@dataclass(frozen=True, slots=True)
class Relation:
    """A typed link to another page: ``supersedes``, ``contradicts``, ``refines``, ``about``."""

    rel: str
    target: str
    confidence: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The PCP ``relations[]`` item."""
        out: dict[str, Any] = {"rel": self.rel, "target": self.target}
        if self.confidence is not None:
            out["confidence"] = self.confidence
        return out


@dataclass(frozen=True, slots=True)
class AuditItem:
    """One step of a memory's audit trail (HUX ``audit[]``)."""

    at: str
    action: str
    actor: str
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The HUX audit item."""
        out: dict[str, Any] = {"at": self.at, "action": self.action, "actor": self.actor}
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """The current state of one remembered item: a projection of its owner's ledger."""

    id: str
    owner: str
    content: str
    status: str
    approval_mode: str
    channel: str
    actor: str
    reason: str
    created_at: str
    updated_at: str
    scope: Scope = field(default_factory=Scope)
    kind: str = "fact"
    sensitivity: str = "normal"
    topic: str = "general"
    ttl: TTL = field(default_factory=TTL)
    on_behalf_of: str | None = None
    session: str | None = None
    evidence: str | None = None
    audit: tuple[AuditItem, ...] = ()
    supersedes: str | None = None
    superseded_by: str | None = None
    retrievable: bool = False
    revision: int = 1
    title: str = ""
    tags: tuple[str, ...] = ()
    confidence: float | None = None
    importance: float | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    expires: str | None = None
    relations: tuple[Relation, ...] = ()
    lifecycle: str = "active"
    partition: str = "default"
    path: str | None = None
    page_type: str | None = None
    derived_from: tuple[str, ...] = ()
    flagged: bool = False
    redacted: bool = False
    recorded_at: str | None = None
    # Provenance (docs/api.md, "Trust model"): ``channel`` and ``origin`` say where the text
    # came from, the weakest of its sources (``origin`` empty: ``actor`` wrote it);
    # ``endorsed_by`` the people who approved or edited it since. An endorsement never
    # changes the channel.
    origin: str = ""
    endorsed_by: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    stamps: Mapping[str, Any] = field(default_factory=dict)
    entry_hash: str = ""
    seq: int = 0

    @property
    def writer(self) -> str:
        """Who wrote the text at its origin: ``origin``, or ``actor`` when it names none."""
        return self.origin or self.actor

    @property
    def searchable(self) -> bool:
        """Active, retrievable and with text: recall may return it, so it has a vector."""
        return self.status == "active" and self.retrievable and bool(self.content)

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON data (the projection's comparable form)."""
        # Runs for every memory a write touches: every field is read at once, and only
        # the values that are not already plain (text, numbers, None) are converted.
        return {
            name: value if type(value) in _PLAIN else _json_value(name, value)
            for name, value in zip(_MEMORY_FIELDS, _read_fields(self), strict=True)
        }


def _json_value(name: str, value: Any) -> Any:
    if isinstance(value, (Scope, TTL)):  # a tuple of types: faster than a union here
        return value.to_json()
    if name in ("audit", "relations"):
        return [v.to_json() for v in value]
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


_MEMORY_FIELDS: Final = tuple(f.name for f in fields(MemoryRecord))
_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
_read_fields: Final = operator.attrgetter(*_MEMORY_FIELDS)


def memory_from_dict(data: Mapping[str, Any]) -> MemoryRecord:
    """Inverse of :meth:`MemoryRecord.to_dict`."""
    values = dict(data)
    values["scope"] = Scope(**values["scope"])
    values["ttl"] = TTL(**values["ttl"])
    values["audit"] = tuple(AuditItem(**a) for a in values["audit"])
    values["relations"] = tuple(Relation(**r) for r in values["relations"])
    values["tags"] = tuple(values["tags"])
    values["derived_from"] = tuple(values["derived_from"])
    if "endorsed_by" in values:
        values["endorsed_by"] = tuple(values["endorsed_by"])
    return MemoryRecord(**values)

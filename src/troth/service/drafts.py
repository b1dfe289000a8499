"""The words of a write: what a caller may say about a new memory, and what a write returns.

``Draft`` is the value object behind every optional field of ``Memory.remember``;
``draft_fields`` validates it into the fields the chain commits to and the texts it may
later erase. A ``CreationPlan`` is a validated, policy-decided creation waiting for its
transaction (``Admission.plan``); ``WriteResult`` is what the caller gets back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from troth.core import lifecycle
from troth.core.events import Event, canonical_bytes
from troth.core.limits import MAX_EVIDENCE_CHARS, MAX_SESSION_CHARS
from troth.core.policy import Decision
from troth.core.records import KINDS, MemoryRecord
from troth.service import validation as check


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of a write: the memory's id and status, and why the policy chose it."""

    id: str
    status: str
    owner: str
    why: str
    flagged: bool = False
    memory: MemoryRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "id": self.id,
            "status": self.status,
            "owner": self.owner,
            "why": self.why,
            "flagged": self.flagged,
        }


@dataclass(frozen=True, slots=True)
class CreationPlan:
    """A validated creation, decided by the policy, waiting for its transaction."""

    owner: str
    event: Event
    content: str
    channel: str
    reserved: tuple[str, ...]
    decision: Decision
    #: The policy's trust of each channel, for the edit that derives from what it supersedes
    #: (``service.provenance.inherit``, run once the superseded memory is read).
    trust: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Draft:
    """Everything a caller may say about a new memory beyond its text (all optional)."""

    kind: str = "fact"
    topic: str = "general"
    scope: Any = "global"
    reason: str | None = None
    title: str | None = None
    tags: Sequence[str] = ()
    ttl: Any = "never"
    sensitivity: str | None = None
    confidence: float | None = None
    importance: float | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    expires: str | None = None
    relations: Sequence[Any] = ()
    lifecycle: str = "active"
    partition: str = "default"
    path: str | None = None
    page_type: str | None = None
    derived_from: Sequence[str] = ()
    session: str | None = None
    evidence: str | None = None
    recorded_at: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    stamps: Mapping[str, Any] = field(default_factory=dict)
    #: Mark the text instruction-shaped whatever the detector says (an import keeps the flag
    #: its source gave it). A flag only ever restricts: none is cleared by saying False.
    flagged: bool = False


class WriteFields(TypedDict, total=False):
    """The per-item fields of a write, by name: ``Memory.remember(text, **fields)``.

    The same names as :class:`Draft` (``tests/service/test_lifecycle.py`` keeps the two
    alike); every one is optional and validated by the service, which refuses an unknown
    name with a sentence listing the known ones.
    """

    kind: str
    topic: str
    scope: Any  # a Scope or its text form: global, project:ID, conversation:ID
    reason: str | None
    title: str | None
    tags: Sequence[str]
    ttl: Any  # a TTL, its text form (never, expires_at:…, decay:N) or a mapping
    sensitivity: str | None
    confidence: float | None
    importance: float | None
    valid_from: str | None
    valid_until: str | None
    expires: str | None
    relations: Sequence[Any]
    lifecycle: str
    partition: str
    path: str | None
    page_type: str | None
    derived_from: Sequence[str]
    session: str | None
    evidence: str | None
    recorded_at: str | None
    extra: Mapping[str, Any]
    stamps: Mapping[str, Any]
    flagged: bool


class ItemText(TypedDict):
    """The one required key of a :class:`WriteItem`."""

    text: str


class WriteItem(ItemText, WriteFields, total=False):
    """One item of ``Memory.remember_many``: its text, its own channel, and its fields.

    (``Required`` would say it in one class, but the postponed annotations of this module
    hide it from Python 3.11's TypedDict, so the required key comes from ``ItemText``.)
    """

    channel: str


def draft_fields(draft: Draft) -> tuple[dict[str, Any], dict[str, str]]:
    """Validate a draft into the committed metadata fields and the erasable texts (every
    free text: reason, title, scope id, tags, session, evidence, path, extra)."""
    fields: dict[str, Any] = {
        "kind": check.choice(draft.kind, KINDS, "kind"),
        "topic": draft.topic,
        "scope": check.scope(draft.scope).to_json(),
        "ttl": check.ttl(draft.ttl).to_json(),
        "tags": list(check.tags(draft.tags)),
        "lifecycle": check.lifecycle(draft.lifecycle),
        "partition": check.partition(draft.partition),
    }
    optional = {
        "confidence": check.unit(draft.confidence, "confidence"),
        "importance": check.unit(draft.importance, "importance"),
        "valid_from": check.date_or_time(draft.valid_from, "valid_from"),
        "valid_until": check.date_or_time(draft.valid_until, "valid_until"),
        "expires": check.utc_time(draft.expires, "expires"),
        "recorded_at": check.utc_time(draft.recorded_at, "recorded_at"),
        "path": None if draft.path is None else check.page_path(draft.path),
        "page_type": check.page_type(draft.page_type),
        "session": None
        if draft.session is None
        else check.text(draft.session, "session", max_chars=MAX_SESSION_CHARS),
        "evidence": None
        if draft.evidence is None
        else check.text(draft.evidence, "evidence", max_chars=MAX_EVIDENCE_CHARS),
    }
    fields.update({k: v for k, v in optional.items() if v is not None})
    relations = check.relations(draft.relations)
    if relations:
        fields["relations"] = [r.to_json() for r in relations]
    if draft.derived_from:
        fields["derived_from"] = [check.page_path(p, "derived_from") for p in draft.derived_from]
    extra = check.extra(draft.extra)
    if extra:
        fields["extra"] = extra
    if draft.stamps:
        # Server-stamped values kept from a restored page, and the import's idempotency key
        # (see service/portability.py); committed like every other field.
        fields["stamps"] = dict(draft.stamps)
    texts = {}
    if draft.reason is not None:
        texts["reason"] = check.reason(draft.reason)
    if draft.title is not None:
        texts["title"] = check.title(draft.title)
    return lifecycle.split_free_text(fields, texts, canonical_bytes)

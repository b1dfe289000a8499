"""The ``Memory`` facade: remember, recall, approve, forget, redact, verify — the use cases.

Adapters (CLI, HTTP, MCP) call this class and nothing below it. Every write runs inside one
store transaction that holds the owner's chain: the chain is verified up to its head, the
transition is checked against the current state, one entry is appended and the projection
is updated — or nothing happens at all.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ledgermind.core import lifecycle
from ledgermind.core.chain import (
    INJECTION_TAG,
    REDACTED_MARKER,
    TARGET_PREFIX,
    TOMBSTONE_TAG,
    Entry,
    Verification,
    format_ts,
    make_entry,
    redact_entry,
    tombstone_content,
)
from ledgermind.core.chain import reanchor as reanchor_chain
from ledgermind.core.errors import (
    ConflictError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    PolicyDeniedError,
)
from ledgermind.core.events import (
    Event,
    Record,
    canonical,
    check_head,
    event_tags,
    meta_problem,
    verify_records,
)
from ledgermind.core.policy import Decision, Justification, Policy
from ledgermind.core.records import (
    KINDS,
    MAX_REASON_CHARS,
    SENSITIVITIES,
    SYSTEM_PRINCIPAL,
    check_principal,
    principal_kind,
)
from ledgermind.core.records import (
    Memory as MemoryRecord,
)
from ledgermind.service import validation as check
from ledgermind.service.recall import Query, RecallHit, memory_text
from ledgermind.service.recall import recall as run_recall
from ledgermind.storage.base import MemoryFilter, Store, Tip, Transaction

if TYPE_CHECKING:
    from pathlib import Path

    from ledgermind.embedding import Embedder
    from ledgermind.service.portability import ExportResult, ImportReport

Clock = Callable[[], datetime]
MAX_NOTE_CHARS = 200  # HUX audit notes


def utc_now() -> datetime:
    """The wall clock in UTC."""
    return datetime.now(UTC)


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
class OwnerReport:
    """Verification of one owner: the chain, then the projection against a rebuild."""

    owner: str
    chain: Verification
    projection_ok: bool
    mismatch: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when both the chain and the projection verify."""
        return self.chain.ok and self.projection_ok

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "owner": self.owner,
            "ok": self.ok,
            **self.chain.to_dict(),
            "projection_ok": self.projection_ok,
            "mismatch": self.mismatch,
        }


@dataclass(frozen=True, slots=True)
class _Plan:
    """A validated creation, decided by the policy, waiting for its transaction."""

    owner: str
    event: Event
    content: str
    channel: str
    reserved: tuple[str, ...]
    decision: Decision


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


def _fields(draft: Draft) -> tuple[dict[str, Any], dict[str, str]]:
    """Validate a draft into the committed metadata fields and the erasable texts."""
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
        else check.text(draft.session, "session", max_chars=256),
        "evidence": None
        if draft.evidence is None
        else check.text(draft.evidence, "evidence", max_chars=512),
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
    return fields, texts


class Memory:
    """Long-term memory for one installation: the use cases over a store and a policy."""

    def __init__(
        self,
        store: Store,
        *,
        policy: Policy,
        principal: str,
        clock: Clock = utc_now,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.principal = check_principal(principal, "acting principal")
        self._clock = clock
        self._verified: dict[str, Tip] = {}
        self.embedder = embedder
        self._vectors_ok: bool | None = None

    # -- embeddings -------------------------------------------------------------------

    def _vectors_ready(self) -> bool:
        """Whether writes embed and recall searches vectors: the store's model is ours.

        The first use records this embedder's name and dimension in the store; a store
        that holds another model's vectors gets none from this one until ``reindex``.
        """
        if self.embedder is None:
            return False
        if self._vectors_ok is None:
            model = self.store.vector_model()
            if model is None:
                self.store.set_vector_model(self.embedder.name, self.embedder.dim)
                model = (self.embedder.name, self.embedder.dim)
            self._vectors_ok = model == (self.embedder.name, self.embedder.dim)
        return self._vectors_ok

    def _embed(self, texts: Sequence[str]) -> list[Any]:
        """Vectors for texts in one batch (empty when vectors are off)."""
        if not texts or not self._vectors_ready() or self.embedder is None:
            return []
        return list(self.embedder.embed(list(texts)))

    def _plan_vectors(self, plans: Sequence[_Plan]) -> dict[str, Any]:
        """Embeddings of planned creations, computed in one batch before the transaction."""
        wanted = [p for p in plans if p.decision.mode != "no_store"]
        texts = [" ".join(t for t in (p.event.texts.get("title"), p.content) if t) for p in wanted]
        vectors = self._embed(texts)
        return {p.event.memory: v for p, v in zip(wanted, vectors, strict=False)}

    # -- composition ------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        home: str | None = None,
        *,
        principal: str | None = None,
        policy_path: str | None = None,
        clock: Clock = utc_now,
    ) -> Memory:
        """Open the embedded default store under ``home`` (or LEDGERMIND_HOME)."""
        from ledgermind.config import Settings, build_memory

        settings = Settings.load(home=home, principal=principal, policy_path=policy_path)
        return build_memory(settings, clock=clock)

    def close(self) -> None:
        """Release the store's connections."""
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- helpers ----------------------------------------------------------------------

    def _now(self) -> str:
        return format_ts(self._clock())

    def _new_id(self) -> str:
        millis = int(self._clock().timestamp() * 1000)
        return f"m_{millis:011x}{secrets.token_hex(5)}"

    def _actor(self, actor: str | None) -> str:
        return self.principal if actor is None else check_principal(actor, "actor")

    def _owner(self, owner: str | None, actor: str) -> str:
        if owner is not None:
            return check_principal(owner, "owner")
        if principal_kind(actor) != "human":
            raise InvalidInputError(
                f"{actor} is not a person; say whose memory this is with owner=human:NAME",
                field="owner",
            )
        return actor

    def _ensure_verified(self, tx: Transaction) -> Tip:
        """Verify the chain up to its head before appending (incrementally after the first)."""
        tip = tx.tip()
        cached = self._verified.get(tx.owner)
        result: Verification | None = None
        if cached is not None and cached.length <= tip.length:
            if cached.length == tip.length and cached.head == tip.head:
                return tip
            result = verify_records(
                tx.records(cached.length), start_index=cached.length, prev_hash=cached.head
            )
            if not result.ok and result.broken_at == cached.length:
                result = None  # the cached head itself may have moved: verify from scratch
        if result is None:
            result = verify_records(tx.records(0))
        result = check_head(result, tip.length, tip.head)
        if not result.ok:
            self._verified.pop(tx.owner, None)
            raise IntegrityError(
                f"the ledger of {tx.owner} is broken at entry #{result.broken_at} "
                f"({result.reason}); refusing to write. Run `ledgermind verify` to inspect it",
                owner=tx.owner,
                broken_at=result.broken_at,
                reason=result.reason,
            )
        tip = Tip(result.length, result.head)
        self._verified[tx.owner] = tip
        return tip

    @contextmanager
    def _writing(self, owner: str) -> Iterator[Transaction]:
        self._vectors_ready()  # records the model first: not inside the write
        with self.store.write(owner) as tx:
            self._ensure_verified(tx)
            yield tx
            self._verified[owner] = tx.tip()

    def _commit(
        self,
        tx: Transaction,
        event: Event,
        *,
        content: str,
        channel: str,
        reserved: tuple[str, ...] = (),
        vectors: Mapping[str, Any] | None = None,
    ) -> list[MemoryRecord]:
        """Append one event and project it; returns the memories it changed.

        A changed memory that is active and retrievable gets its embedding (from
        ``vectors``, computed before the transaction, or here for e.g. an approval); the
        store drops the vector of one that leaves retrieval.
        """
        meta_text = canonical(event.meta())
        entry = make_entry(
            ts=self._now(),
            content=content,
            source=channel,
            tags=event_tags(event, meta_text, reserved),
            prev_hash=tx.tip().head,
        )
        seq = tx.append(entry, meta_text, event.texts)
        touched: dict[str, MemoryRecord] = {}
        for memory_id in (event.memory, event.supersedes, *event.memories):
            if memory_id:
                current = tx.get(memory_id)
                if current is not None:
                    touched[memory_id] = current
        pending = touched.get(event.memory)
        if event.event == "approve" and pending is not None and pending.supersedes:
            old = tx.get(pending.supersedes)  # an approved edit supersedes now
            if old is not None:
                touched[old.id] = old
        lifecycle.apply(touched, Record(seq, entry, meta_text, event.texts), tx.owner)
        given = vectors or {}
        live = [
            m
            for m in touched.values()
            if m.status == "active" and m.retrievable and m.content and m.id not in given
        ]
        embedded = self._embed([memory_text(m) for m in live])
        computed = dict(zip((m.id for m in live), embedded, strict=False))
        for memory in touched.values():
            tx.put(memory, given.get(memory.id, computed.get(memory.id)))
        return list(touched.values())

    def _load(self, tx: Transaction, memory_id: str) -> MemoryRecord:
        check.identifier(memory_id, "memory id")
        memory = tx.get(memory_id)
        if memory is None:
            raise NotFoundError(f"no memory {memory_id} for {tx.owner}", id=memory_id)
        return memory

    def _owner_of(self, memory_id: str, owner: str | None) -> str:
        if owner is not None:
            return check_principal(owner, "owner")
        check.identifier(memory_id, "memory id")
        found = self.store.locate(memory_id)
        if found is None:
            raise NotFoundError(
                f"no memory {memory_id}; `ledgermind list` shows the ids you can use",
                id=memory_id,
            )
        return found

    @staticmethod
    def _steward_channel(actor: str, owner: str) -> str:
        """Lifecycle decisions by the owner are user statements; anyone else's are internal."""
        return "user" if actor == owner and principal_kind(actor) == "human" else "internal"

    # -- writes -----------------------------------------------------------------------

    def decide(
        self,
        text: str,
        *,
        topic: str = "general",
        channel: str = "user",
        actor: str | None = None,
        owner: str | None = None,
    ) -> Decision:
        """What the policy would decide for a write, without writing."""
        who = self._actor(actor)
        return self.policy.decide(
            content=check.content(text),
            topic=topic,
            channel=channel,
            actor=who,
            owner=self._owner(owner, who),
        )

    def remember(
        self,
        text: str,
        *,
        owner: str | None = None,
        actor: str | None = None,
        channel: str = "user",
        on_behalf_of: str | None = None,
        draft: Draft | None = None,
        **details: Any,
    ) -> WriteResult:
        """Write a memory; the policy decides whether it is kept, proposed or not stored."""
        return self._create(
            text,
            owner=owner,
            actor=actor,
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
            details=details,
        )

    def _create(
        self,
        text: str,
        *,
        owner: str | None,
        actor: str | None,
        channel: str,
        on_behalf_of: str | None,
        draft: Draft | None,
        details: Mapping[str, Any],
        supersedes: str | None = None,
        status: str | None = None,
    ) -> WriteResult:
        plan = self._plan(
            text,
            owner=owner,
            actor=actor,
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
            details=details,
            supersedes=supersedes,
            status=status,
        )
        vectors = self._plan_vectors([plan])
        with self._writing(plan.owner) as tx:
            return self._write_plan(tx, plan, vectors)

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        owner: str | None = None,
        actor: str | None = None,
        channel: str = "user",
        on_behalf_of: str | None = None,
        draft: Draft | None = None,
        **details: Any,
    ) -> list[WriteResult]:
        """Write many memories into one ledger in one transaction: all of them, or none.

        Each item is the text, or a mapping with ``text`` and any per-item field of
        :meth:`remember` (``kind``, ``topic``, ``reason`` …) overriding the shared ones.
        Every item is validated and decided by the policy before anything is written.
        """
        if isinstance(items, str | Mapping):
            raise InvalidInputError("items must be a list of texts or of {text, …} mappings")
        plans: list[_Plan] = []
        for index, item in enumerate(items):
            try:
                if isinstance(item, str):
                    text, own = item, {}
                elif isinstance(item, Mapping):
                    own = dict(item)
                    text = own.pop("text", None)
                else:
                    raise InvalidInputError(
                        f"expected text or a mapping with 'text'; got {type(item).__name__}"
                    )
                plans.append(
                    self._plan(
                        text,
                        owner=owner,
                        actor=actor,
                        channel=own.pop("channel", channel),
                        on_behalf_of=on_behalf_of,
                        draft=draft,
                        details={**details, **own},
                    )
                )
            except InvalidInputError as exc:
                raise InvalidInputError(
                    f"item {index}: {exc.message}", item=index, **exc.details
                ) from exc
        if not plans:
            return []
        vectors = self._plan_vectors(plans)
        with self._writing(plans[0].owner) as tx:
            return [self._write_plan(tx, plan, vectors) for plan in plans]

    def _plan(
        self,
        text: object,
        *,
        owner: str | None,
        actor: str | None,
        channel: str,
        on_behalf_of: str | None,
        draft: Draft | None,
        details: Mapping[str, Any],
        supersedes: str | None = None,
        status: str | None = None,
    ) -> _Plan:
        """Validate a write and let the policy decide it; nothing is written yet."""
        who = self._actor(actor)
        whose = self._owner(owner, who)
        if on_behalf_of is not None:
            check_principal(on_behalf_of, "on_behalf_of")
        unknown = sorted(set(details) - set(Draft.__dataclass_fields__))
        if unknown:
            raise InvalidInputError(
                f"unknown memory field {', '.join(unknown)}; known fields:"
                f" {', '.join(sorted(Draft.__dataclass_fields__))}",
                field=unknown[0],
            )
        draft = replace(draft or Draft(), **details)
        body = check.content(text)
        self.policy.check_channel(actor=who, owner=whose, channel=channel)
        decision = self.policy.decide(
            content=body, topic=draft.topic, channel=channel, actor=who, owner=whose
        )
        fields, texts = _fields(replace(draft, topic=decision.topic))
        sensitivity = draft.sensitivity or decision.sensitivity
        if decision.sensitivity == "sensitive":
            sensitivity = "sensitive"
        fields["sensitivity"] = check.choice(sensitivity, SENSITIVITIES, "sensitivity")
        fields["approval_mode"] = decision.mode
        initial = {"automatic": "active", "ask": "proposed", "no_store": "no_store"}[decision.mode]
        fields["status"] = status or initial
        if decision.flagged:
            fields["flagged"] = True
            fields["tags"] = [*fields["tags"], INJECTION_TAG]
        texts.setdefault("reason", self._default_reason(who, whose, channel))
        memory_id = self._new_id()
        if decision.mode == "no_store":
            texts.pop("title", None)
            texts["reason"] = f"not stored: {decision.why}"[:MAX_REASON_CHARS]
            kind = "no_store"
            content = "[not stored]"
        else:
            kind = "edit" if supersedes else "propose"
            content = body
        event = Event(
            event=kind,
            memory=memory_id,
            actor=who,
            fields=fields,
            texts=texts,
            on_behalf_of=on_behalf_of,
            supersedes=supersedes,
        )
        reserved = (INJECTION_TAG,) if decision.flagged else ()
        return _Plan(whose, event, content, channel, reserved, decision)

    def _write_plan(
        self, tx: Transaction, plan: _Plan, vectors: Mapping[str, Any] | None = None
    ) -> WriteResult:
        """Append a planned creation inside an open transaction."""
        if plan.event.supersedes is not None:
            lifecycle.check_transition(self._load(tx, plan.event.supersedes), "edit")
        changed = self._commit(
            tx,
            plan.event,
            content=plan.content,
            channel=plan.channel,
            reserved=plan.reserved,
            vectors=vectors,
        )
        created = next(m for m in changed if m.id == plan.event.memory)
        return WriteResult(
            id=plan.event.memory,
            status=created.status,
            owner=plan.owner,
            why=plan.decision.why,
            flagged=plan.decision.flagged,
            memory=created,
        )

    def admit(
        self,
        text: str,
        *,
        owner: str,
        status: str | None = None,
        actor: str | None = None,
        channel: str = "user",
        on_behalf_of: str | None = None,
        draft: Draft | None = None,
    ) -> WriteResult:
        """Write a memory carried in from an export, keeping the review state it had there.

        A restore keeps a page's status (``proposed``, ``active`` or ``rejected``); an import
        passes ``proposed`` for what the source had not approved, or None to let the policy
        choose. The policy still runs and what it would not store is refused. Only the owner,
        or a service principal, may admit memories into a ledger.
        """
        whose = check_principal(owner, "owner")
        if self.principal != whose and principal_kind(self.principal) != "service":
            raise PolicyDeniedError(
                f"only {whose} (or a service principal) may restore or import into their"
                f" ledger; {self.principal} may not",
                actor=self.principal,
                owner=whose,
            )
        if status is not None and status not in ("proposed", "active", "rejected"):
            raise InvalidInputError(
                f"an admitted memory is proposed, active or rejected; got {status!r}",
                field="status",
            )
        topic = (draft or Draft()).topic
        decision = self.decide(text, topic=topic, channel=channel, actor=actor, owner=whose)
        if decision.mode == "no_store":
            raise PolicyDeniedError(
                f"the policy does not store this: {decision.why}", reason=decision.why
            )
        return self._create(
            text,
            owner=whose,
            actor=actor,
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
            details={},
            status=status,
        )

    @staticmethod
    def _default_reason(actor: str, owner: str, channel: str) -> str:
        if actor == owner:
            return "the person asked to remember this"
        return f"proposed by {actor} through the {channel} channel"

    def approve(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """A person approves a proposed memory; it becomes active and retrievable."""
        return self._decide(memory_id, "approve", actor=actor, owner=owner, note=note)

    def reject(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """A person rejects a proposed memory; it is never retrievable."""
        return self._decide(memory_id, "reject", actor=actor, owner=owner, note=note)

    def _decide(
        self, memory_id: str, kind: str, *, actor: str | None, owner: str | None, note: str | None
    ) -> MemoryRecord:
        who = self._actor(actor)
        whose = self._owner_of(memory_id, owner)
        if principal_kind(who) != "human":
            raise PolicyDeniedError(
                f"only a person may {kind} a proposed memory; {who} is not a human principal",
                actor=who,
            )
        texts = {"note": check.note(note, "note")} if note is not None else {}
        with self._writing(whose) as tx:
            memory = self._load(tx, memory_id)
            lifecycle.check_transition(memory, kind)
            if memory.actor == who and who != whose:
                raise PolicyDeniedError(
                    f"{who} proposed memory {memory_id} and cannot {kind} it; "
                    f"ask {whose} to review it",
                    actor=who,
                    id=memory_id,
                )
            if who != whose:
                raise PolicyDeniedError(
                    f"only {whose} may {kind} their own memories", actor=who, id=memory_id
                )
            event = Event(kind, memory_id, who, texts=texts)
            changed = self._commit(
                tx,
                event,
                content=f"[{_DONE[kind]} {memory_id}]",
                channel=self._steward_channel(who, whose),
            )
        return changed[0]

    def edit(
        self,
        memory_id: str,
        text: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        channel: str | None = None,
        **details: Any,
    ) -> WriteResult:
        """Supersede a memory with new text: a new memory; the old one leaves retrieval."""
        whose = self._owner_of(memory_id, owner)
        old = self.store.get(whose, memory_id)
        if old is None:
            raise NotFoundError(f"no memory {memory_id} for {whose}", id=memory_id)
        who = self._actor(actor)
        base = Draft(
            kind=old.kind,
            topic=old.topic,
            scope=old.scope,
            tags=tuple(t for t in old.tags if t != INJECTION_TAG),
            ttl=old.ttl,
            confidence=old.confidence,
            importance=old.importance,
            valid_from=old.valid_from,
            valid_until=old.valid_until,
            expires=old.expires,
            relations=old.relations,
            lifecycle=old.lifecycle,
            partition=old.partition,
            path=old.path,
            page_type=old.page_type,
            derived_from=old.derived_from,
            session=old.session,
            extra=old.extra,
            sensitivity=old.sensitivity,
            reason=details.pop("reason", None) or f"edit of {memory_id}",
        )
        return self._create(
            text,
            owner=whose,
            actor=who,
            channel=channel
            or ("user" if who == whose and principal_kind(who) == "human" else "internal"),
            on_behalf_of=None,
            draft=base,
            details=details,
            supersedes=memory_id,
        )

    def hide(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """Remove a memory from retrieval without forgetting it (``retrieval_removed``)."""
        return self._simple(memory_id, "hide", actor=actor, owner=owner, note=note)

    def _simple(
        self, memory_id: str, kind: str, *, actor: str | None, owner: str | None, note: str | None
    ) -> MemoryRecord:
        who = self._actor(actor)
        whose = self._owner_of(memory_id, owner)
        texts = {"note": check.note(note, "note")} if note is not None else {}
        with self._writing(whose) as tx:
            memory = self._load(tx, memory_id)
            lifecycle.check_transition(memory, kind)
            event = Event(kind, memory_id, who, texts=texts)
            label = {"hide": "hidden", "expire": "expired"}[kind]
            changed = self._commit(
                tx,
                event,
                content=f"[{label} {memory_id}]",
                channel=self._steward_channel(who, whose),
            )
        return changed[0]

    def forget(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        reason: str = "forgotten at the owner's request",
    ) -> MemoryRecord:
        """Forget a memory at once: a tombstone; its bytes stay until redacted."""
        who = self._actor(actor)
        whose = self._owner_of(memory_id, owner)
        why = check.note(reason)
        with self._writing(whose) as tx:
            memory = self._load(tx, memory_id)
            lifecycle.check_transition(memory, "forget")
            event = Event("forget", memory_id, who, texts={"note": why})
            changed = self._commit(
                tx,
                event,
                content=tombstone_content(why),
                channel=self._steward_channel(who, whose),
                reserved=(TOMBSTONE_TAG, TARGET_PREFIX + memory.entry_hash),
            )
        return changed[0]

    def redact(
        self, memory_id: str, *, reason: str, actor: str | None = None, owner: str | None = None
    ) -> MemoryRecord:
        """Erase a memory's text from every byte the store keeps; the chain still verifies."""
        who = self._actor(actor)
        whose = self._owner_of(memory_id, owner)
        why = check.text(reason, "reason", max_chars=MAX_NOTE_CHARS - len("redacted: "))
        with self._writing(whose) as tx:
            memory = self._load(tx, memory_id)
            lifecycle.check_transition(memory, "redact")
            self._erase_creation(tx, memory)
            event = Event("redact", memory_id, who, texts={"note": f"redacted: {why}"})
            changed = self._commit(
                tx,
                event,
                content=tombstone_content(f"redacted: {why}"),
                channel=self._steward_channel(who, whose),
                reserved=(TOMBSTONE_TAG, TARGET_PREFIX + memory.entry_hash),
            )
        return changed[0]

    def _erase_creation(self, tx: Transaction, memory: MemoryRecord) -> None:
        record = next(tx.records(memory.seq), None)
        if record is None or record.entry.hash != memory.entry_hash:
            raise IntegrityError(
                f"the entry that created {memory.id} is not where the projection says;"
                " run `ledgermind verify`",
                id=memory.id,
            )
        erased_texts = dict.fromkeys(record.texts, REDACTED_MARKER)
        tx.erase(record.seq, redact_entry(record.entry), erased_texts)
        from ledgermind.service.checkpoints import erase_copies

        erase_copies(tx, memory.id, record.entry.content)

    def sweep(self, *, now: datetime | None = None, owner: str | None = None) -> list[MemoryRecord]:
        """Expire what retention says is over (ttl, PCP expires) and erase its text.

        Sweeps every owner, or only ``owner``. Each due memory gets an ``expire`` event and
        then a ``redact`` event by ``service:ledgermind``: expired text is erased at once.
        """
        moment = now or self._clock()
        stamp = format_ts(moment)
        expired: list[MemoryRecord] = []
        owners = [check_principal(owner, "owner")] if owner else self.store.owners()
        for owner in owners:
            live = self.store.memories(owner, MemoryFilter(statuses=("proposed", "active")))
            for memory in live:
                if not _is_due(memory, moment, stamp):
                    continue
                with self._writing(owner) as tx:
                    current = self._load(tx, memory.id)
                    if current.status not in ("proposed", "active"):
                        continue
                    event = Event(
                        "expire", memory.id, SYSTEM_PRINCIPAL, texts={"note": "retention"}
                    )
                    self._commit(tx, event, content=f"[expired {memory.id}]", channel="internal")
                    self._erase_creation(tx, current)
                    erase = Event(
                        "redact",
                        memory.id,
                        SYSTEM_PRINCIPAL,
                        texts={"note": "redacted: retention expired"},
                    )
                    changed = self._commit(
                        tx,
                        erase,
                        content=tombstone_content("redacted: retention expired"),
                        channel="internal",
                        reserved=(TOMBSTONE_TAG, TARGET_PREFIX + current.entry_hash),
                    )
                expired.extend(changed)
        return expired

    def handle_checkpoint(
        self,
        raw: bytes,
        *,
        caller: str | None = None,
        owner: str | None = None,
        include_sensitive: bool | None = None,
    ) -> bytes:
        """Answer a Spiralist UAIX checkpoint request envelope; returns the response envelope.

        ``caller`` is the authenticated principal (default: this facade's principal) and must
        equal the envelope's ``trust.principal``. The checkpoint lives in ``owner``'s ledger
        (default: the caller, who must then be a person). Create, drift audit and restore
        brief; refusals are ``uai.error.v1`` answers, not exceptions. Everything one request
        writes — memories, the ``checkpoint`` event, the stored reply — is one transaction.
        Sensitive memories join a restore brief only if ``include_sensitive`` (default: the
        caller is the owner). See ``docs/checkpoints.md``.
        """
        from ledgermind.service.checkpoints import handle_checkpoint

        return handle_checkpoint(
            self, raw, caller=caller, owner=owner, include_sensitive=include_sensitive
        )

    # -- reads ------------------------------------------------------------------------

    def get(self, memory_id: str, *, owner: str | None = None) -> MemoryRecord:
        """One memory, whatever its status."""
        whose = self._owner_of(memory_id, owner)
        memory = self.store.get(whose, memory_id)
        if memory is None:
            raise NotFoundError(f"no memory {memory_id} for {whose}", id=memory_id)
        return memory

    def memories(
        self, owner: str | None = None, query: MemoryFilter | None = None
    ) -> list[MemoryRecord]:
        """An owner's memories, newest first."""
        whose = self._owner(owner, self.principal)
        return self.store.memories(whose, query or MemoryFilter(limit=100))

    def log(self, owner: str | None = None, *, start: int = 0) -> Iterator[Record]:
        """An owner's ledger rows in order."""
        return self.store.records(self._owner(owner, self.principal), start)

    def may_justify(
        self, action: str, memory_ids: Sequence[str], *, owner: str | None = None
    ) -> Justification:
        """Whether these memories may justify a sensitive action (the weakest channel decides)."""
        whose = self._owner(owner, self.principal)
        found = []
        for memory_id in memory_ids:
            memory = self.store.get(whose, check.identifier(memory_id, "memory id"))
            if memory is None:
                raise NotFoundError(f"no memory {memory_id} for {whose}", id=memory_id)
            found.append(memory)
        return self.policy.justify(action, found)

    def recall(self, query: Query | str, **options: Any) -> list[RecallHit]:
        """The owner's active, retrievable memories that best answer a query."""
        if isinstance(query, str):
            query = Query(text=query, **options)
        text = check.text(query.text, "query", max_chars=2000)
        if (
            not isinstance(query.limit, int)
            or isinstance(query.limit, bool)
            or not 1 <= query.limit <= 1000
        ):
            raise InvalidInputError("limit must be a whole number from 1 to 1000", field="limit")
        whose = self._owner(query.owner, self.principal)
        if query.valid_on is not None:
            check.date_or_time(query.valid_on, "valid_on")
        check.utc_time(query.as_of, "as_of")
        if not query.indexes or set(query.indexes) - {"lexical", "vector"}:
            raise InvalidInputError("indexes must name lexical, vector or both", field="indexes")
        now = self._clock() if query.now is None else _parse(str(check.utc_time(query.now, "now")))
        embedder = None
        if self.embedder is not None:
            if not self._vectors_ready():
                model = self.store.vector_model()
                raise ConflictError(
                    f"the stored vectors were made by {model[0] if model else 'another model'}"
                    f" ({model[1] if model else '?'} dimensions), not by {self.embedder.name};"
                    " run `ledgermind reindex`",
                    model=model[0] if model else None,
                )
            embedder = self.embedder
        return run_recall(self.store, embedder, whose, query, text=text, now=now)

    def _refresh_vectors(self, owner: str) -> None:
        # A projection written without embeddings (restore, rebuild, re-anchor) gets them.
        if self._vectors_ready():
            self.reindex(owner)

    def reindex(
        self,
        owner: str | None = None,
        *,
        batch: int = 1000,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Recompute the vector of every retrievable memory (all owners, or one).

        Run it after changing the embedding model (the store then records the new one) or
        after restoring a store whose vectors were not kept. Returns memories per owner.
        ``progress(done, total)`` is called after each batch.
        """
        if self.embedder is None:
            raise InvalidInputError("this installation has no embedder; nothing to reindex")
        model = (self.embedder.name, self.embedder.dim)
        owners = [check_principal(owner, "owner")] if owner else self.store.owners()
        if self.store.vector_model() != model:
            self.store.set_vector_model(*model)
            owners = self.store.owners()  # every owner's vectors were dropped
        self._vectors_ok = True
        live = MemoryFilter(retrievable_only=True)
        totals = {whose: self.store.count(whose, live) for whose in owners}
        total, done, out = sum(totals.values()), 0, {}
        for whose in owners:
            memories = [m for m in self.store.memories(whose, live) if m.content]
            for start in range(0, len(memories), batch):
                chunk = memories[start : start + batch]
                vectors = self._embed([memory_text(m) for m in chunk])
                with self.store.write(whose) as tx:
                    for memory, vector in zip(chunk, vectors, strict=True):
                        tx.put(memory, vector)
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
            out[whose] = len(memories)
        return out

    def export(self, fmt: str, *, owner: str | None = None) -> tuple[bytes, int]:
        """An owner's ledger as personaxis JSONL, or its memories as HUX records."""
        from ledgermind.formats import hux, personaxis

        whose = self._owner(owner, self.principal)
        if fmt == "personaxis":
            entries = [r.entry for r in self.store.records(whose)]
            return personaxis.encode(entries), len(entries)
        if fmt in ("hux", "hux-jsonl"):
            items = self.store.memories(whose, MemoryFilter())
            return hux.encode(reversed(items), lines=fmt == "hux-jsonl"), len(items)
        raise InvalidInputError(
            f"unknown export format {fmt!r}; use personaxis or hux", field="format"
        )

    def export_to(
        self,
        fmt: str,
        output: Path,
        *,
        owner: str | None = None,
        at: datetime | None = None,
    ) -> ExportResult:
        """Export to a file: a PCP archive (.tar or .zip), personaxis JSONL or HUX records."""
        from ledgermind.service import portability

        return portability.export_to(self, fmt, output, owner=owner, at=at)

    def import_path(
        self,
        path: Path,
        *,
        fmt: str | None = None,
        mode: str = "import",
        owner: str | None = None,
        reanchor: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import or restore a file, an archive or a folder of notes (service/portability.py)."""
        from ledgermind.service import portability

        return portability.import_path(
            self, path, fmt=fmt, mode=mode, owner=owner, reanchor=reanchor, progress=progress
        )

    # -- integrity ----------------------------------------------------------------------

    def verify(self, owner: str | None = None) -> list[OwnerReport]:
        """Verify each chain and compare each stored projection with a rebuild."""
        owners = [check_principal(owner, "owner")] if owner else self.store.owners()
        reports = []
        for whose in owners:
            chain = self._verify_chain(whose)
            projection_ok, mismatch = True, None
            if chain.ok:
                projection_ok, mismatch = self._compare_projection(whose)
            reports.append(OwnerReport(whose, chain, projection_ok, mismatch))
        return reports

    def _verify_chain(self, owner: str) -> Verification:
        """The chain by personaxis and ledgermind rules, held against its recorded head."""
        tip = self.store.tip(owner)
        return check_head(verify_records(self.store.records(owner)), tip.length, tip.head)

    def _compare_projection(self, owner: str) -> tuple[bool, dict[str, Any] | None]:
        try:
            rebuilt = lifecycle.fold(self.store.records(owner), owner)
        except (NotFoundError, InvalidInputError, ConflictError) as exc:
            return False, {"error": exc.message}
        try:
            stored = self.store.projection(owner)
        except IntegrityError as exc:
            return False, {**exc.details, "error": exc.message}
        for memory_id in sorted(set(rebuilt) | set(stored)):
            left, right = rebuilt.get(memory_id), stored.get(memory_id)
            if left is None or right is None:
                return False, {"memory": memory_id, "field": "existence"}
            if left == right:
                continue
            a, b = left.to_dict(), right.to_dict()
            for name in a:
                if a[name] != b.get(name):
                    return False, {
                        "memory": memory_id,
                        "field": name,
                        "stored": b.get(name),
                        "ledger": a[name],
                    }
        return True, None

    def rebuild(self, owner: str | None = None) -> list[dict[str, Any]]:
        """Recompute each projection from its ledger; reports whether it equalled the stored."""
        owners = [check_principal(owner, "owner")] if owner else self.store.owners()
        out = []
        for whose in owners:
            chain = self._verify_chain(whose)
            if not chain.ok:
                raise IntegrityError(
                    f"the ledger of {whose} is broken at entry #{chain.broken_at} ({chain.reason});"
                    " a projection cannot be rebuilt from it",
                    owner=whose,
                    broken_at=chain.broken_at,
                )
            equal, mismatch = self._compare_projection(whose)
            rebuilt = lifecycle.fold(self.store.records(whose), whose)
            self.store.replace_projection(whose, rebuilt)
            self._refresh_vectors(whose)
            out.append(
                {"owner": whose, "memories": len(rebuilt), "equal": equal, "mismatch": mismatch}
            )
        return out

    # -- restore and re-anchor ------------------------------------------------------------

    def _may_rewrite(self, owner: str, actor: str | None, verb: str) -> tuple[str, str]:
        who = self._actor(actor)
        whose = check_principal(owner, "owner")
        if who != whose and principal_kind(who) != "service":
            raise PolicyDeniedError(
                f"only {whose} (or a service principal) may {verb} {whose}'s ledger; {who} may not",
                actor=who,
                owner=whose,
            )
        return who, whose

    def restore_chain(
        self, owner: str, entries: Iterable[Entry | Record], *, actor: str | None = None
    ) -> Verification:
        """Write a personaxis chain verbatim into an empty ledger and project it.

        ``entries`` are personaxis entries (e.g. ``formats.personaxis.decode`` of an
        ``episodic.jsonl``), or stored rows with their metadata and texts (a ledgermind
        ledger moved between stores). Rows are kept byte for byte — exporting the ledger
        gives the same file back. Plain entries become "foreign" memories (active, their
        tombstones forget them). The chain must verify and the ledger must be empty;
        otherwise nothing is written. Only the owner, or a service principal, may restore.
        """
        _who, whose = self._may_rewrite(owner, actor, "restore")
        records: list[Record] = []
        for index, item in enumerate(entries):
            if isinstance(item, Record):
                records.append(Record(index, item.entry, item.meta, dict(item.texts)))
            elif isinstance(item, Entry):
                records.append(Record(index, item))
            else:
                raise InvalidInputError(
                    f"entry #{index} is a {type(item).__name__}; give personaxis entries"
                    " (formats.personaxis.decode) or ledger records",
                    index=index,
                )
        result = verify_records(records)
        broken = next((r.seq for r in records if meta_problem(r) is not None), None)
        if not result.ok or broken is not None:
            at = result.broken_at if not result.ok else broken
            why = result.reason if not result.ok else meta_problem(records[at or 0])
            raise IntegrityError(
                f"entry #{at} does not verify ({why}); nothing was restored."
                " Restore the file as it was exported, or re-anchor a legacy log first",
                broken_at=at,
                reason=why,
            )
        try:
            projection = lifecycle.fold(records, whose)
        except (NotFoundError, ConflictError, InvalidInputError, KeyError, TypeError) as exc:
            raise InvalidInputError(
                f"the chain verifies but its ledgermind events do not replay: {exc};"
                " nothing was restored",
            ) from exc
        with self.store.write(whose) as tx:
            tip = tx.tip()
            if tip.length:
                raise ConflictError(
                    f"the ledger of {whose} already has {tip.length} entries; restore only"
                    " into an empty ledger (a new owner)",
                    owner=whose,
                    length=tip.length,
                )
            for record in records:
                tx.append(record.entry, record.meta, record.texts)
            for memory in sorted(projection.values(), key=lambda m: m.seq):
                tx.put(memory)
        self._verified[whose] = Tip(result.length, result.head)
        self._refresh_vectors(whose)
        return result

    def reanchor(self, owner: str | None = None, *, actor: str | None = None) -> dict[str, str]:
        """Re-anchor a ledger holding legacy (≤0.10) lines into v1.0 form.

        Every hash from the first legacy line on changes (``migrateMemoryChain``);
        ``target:`` tags follow. Returns old hash → new hash for every entry ({} when there
        is no legacy line). Ids of foreign memories derive from entry hashes, so they change
        too; the projection is rebuilt.
        """
        _who, whose = self._may_rewrite(owner or self.principal, actor, "re-anchor")
        with self._writing(whose) as tx:
            records = list(tx.records(0))
            if not any(r.entry.is_legacy for r in records):
                return {}
            migrated, remapped = reanchor_chain([r.entry for r in records])
            for record, entry in zip(records, migrated, strict=True):
                if entry != record.entry:
                    tx.rewrite(record.seq, entry)
            renewed = [
                Record(r.seq, e, r.meta, r.texts) for r, e in zip(records, migrated, strict=True)
            ]
        self.store.replace_projection(whose, lifecycle.fold(renewed, whose))
        self._refresh_vectors(whose)
        return {old: new for old, new in remapped.items() if old != new}


_DONE = {"approve": "approved", "reject": "rejected"}


def _is_due(memory: MemoryRecord, moment: datetime, stamp: str) -> bool:
    """Whether retention has run out for a memory at ``moment``."""
    if memory.expires is not None and _parse(memory.expires) <= moment:
        return True
    if memory.ttl.policy == "expires_at" and memory.ttl.expires_at is not None:
        return _parse(memory.ttl.expires_at) <= moment
    if memory.ttl.policy == "decay" and memory.ttl.decay_days is not None:
        return _parse(memory.updated_at) + timedelta(days=memory.ttl.decay_days) <= moment
    return False


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))

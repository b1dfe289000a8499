"""Creating memories: remember, remember_many, admit and edit, each decided by the policy.

A creation is planned first — validated, decided by the policy, embedded — and only then
written inside the owner's transaction, so a batch either lands whole or not at all and no
model runs while the chain is held.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from troth.core import lifecycle
from troth.core.chain import INJECTION_TAG
from troth.core.errors import InvalidInputError, PolicyDeniedError
from troth.core.events import Event
from troth.core.policy import Decision
from troth.core.records import (
    MAX_REASON_CHARS,
    SENSITIVITIES,
    check_principal,
    principal_kind,
)
from troth.service import validation as check
from troth.service.base import MemoryBase
from troth.service.drafts import CreationPlan, Draft, WriteResult, draft_fields
from troth.storage.base import Transaction

_FIRST_STATUS = {"automatic": "active", "ask": "proposed", "no_store": "no_store"}
ADMITTED_STATUSES = ("proposed", "active", "rejected")


def check_admitted_status(status: str | None) -> None:
    """A restored or imported memory keeps a reviewed state, or lets the policy choose."""
    if status is not None and status not in ADMITTED_STATUSES:
        raise InvalidInputError(
            f"an admitted memory is proposed, active or rejected; got {status!r}",
            field="status",
        )


def refuse_unstored(decision: Decision) -> None:
    """What is carried in from elsewhere is refused, not recorded, when the policy won't keep it."""
    if decision.mode == "no_store":
        raise PolicyDeniedError(
            f"the policy does not store this: {decision.why}", reason=decision.why
        )


class MemoryWrites(MemoryBase):
    """The use cases that create memories."""

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
        plans: list[CreationPlan] = []
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
        # Held from the start and pipelined: a batch is never the one-statement write.
        with self._writing(plans[0].owner) as tx:
            return [self._write_plan(tx, plan, vectors) for plan in plans]

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Defer the store's index upkeep to one build when a large load ends.

        For a first load, a migration or a big import into a store that is not being
        searched meanwhile: on PostgreSQL the HNSW index is dropped and built once at the
        end (docs/operations.md); on SQLite nothing changes. Writes inside are as usual.
        """
        self._vectors_ready()  # record the model first, so its index is the one deferred
        with self.store.bulk_load():
            yield

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
        self._may_admit(whose)
        check_admitted_status(status)
        plan = self._plan(
            text,
            owner=whose,
            actor=actor,
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
            details={},
            status=status,
        )
        refuse_unstored(plan.decision)  # the one policy decision, before anything is written
        return self._write_planned(plan)

    def edit(
        self,
        memory_id: str,
        text: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        channel: str | None = None,
        on_behalf_of: str | None = None,
        **details: Any,
    ) -> WriteResult:
        """Supersede a memory with new text: a new memory; the old one leaves retrieval.

        The policy decides the new memory like any write: a person's own edit is kept at
        once, an agent's (``actor`` an agent, ``channel`` its own, ``on_behalf_of`` the
        person) is proposed, and the old memory stays retrievable until it is approved.
        """
        whose = self._owner_of(memory_id, owner)
        old = self._stored(whose, memory_id)
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
            channel=channel or self._steward_channel(who, whose),
            on_behalf_of=on_behalf_of,
            draft=base,
            details=details,
            supersedes=memory_id,
        )

    # -- the internal API of a creation: plan it, then write it in an open transaction ------

    def _may_admit(self, owner: str) -> None:
        """Only the owner, or a service principal, may restore or import into a ledger."""
        if self.principal != owner and principal_kind(self.principal) != "service":
            raise PolicyDeniedError(
                f"only {owner} (or a service principal) may restore or import into their"
                f" ledger; {self.principal} may not",
                actor=self.principal,
                owner=owner,
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
        return self._write_planned(plan)

    def _write_planned(self, plan: CreationPlan) -> WriteResult:
        """Embed a planned creation, then append it on the owner's chain.

        A creation that reads nothing (all but an edit, which loads what it supersedes)
        is tried on the head verified last: one statement on a server backend.
        """
        vectors = self._plan_vectors([plan])
        if plan.event.supersedes is not None:
            with self._writing(plan.owner) as tx:
                return self._write_plan(tx, plan, vectors)
        return self._append(plan.owner, lambda tx: self._write_plan(tx, plan, vectors))

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
    ) -> CreationPlan:
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
        draft = replace(draft or Draft(), **details) if details else draft or Draft()
        body = check.content(text)
        self.policy.check_channel(actor=who, owner=whose, channel=channel)
        decision = self.policy.decide(
            content=body, topic=draft.topic, channel=channel, actor=who, owner=whose
        )
        if decision.topic != draft.topic:
            draft = replace(draft, topic=decision.topic)
        fields, texts = draft_fields(draft)
        sensitivity = draft.sensitivity or decision.sensitivity
        if decision.sensitivity == "sensitive":
            sensitivity = "sensitive"
        fields["sensitivity"] = check.choice(sensitivity, SENSITIVITIES, "sensitivity")
        fields["approval_mode"] = decision.mode
        fields["status"] = status or _FIRST_STATUS[decision.mode]
        if decision.flagged:
            fields["flagged"] = True
            fields["tags"] = [*fields["tags"], INJECTION_TAG]
        texts.setdefault("reason", _default_reason(who, whose, channel))
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
        return CreationPlan(whose, event, content, channel, reserved, decision)

    def _plan_vectors(self, plans: Sequence[CreationPlan]) -> dict[str, Any]:
        """Embeddings of planned creations, computed in one batch before the transaction."""
        wanted = [p for p in plans if p.decision.mode != "no_store"]
        texts = [" ".join(t for t in (p.event.texts.get("title"), p.content) if t) for p in wanted]
        vectors = self._embed(texts)
        return {p.event.memory: v for p, v in zip(wanted, vectors, strict=False)}

    def _write_plan(
        self, tx: Transaction, plan: CreationPlan, vectors: Mapping[str, Any] | None = None
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
            minted=True,  # every plan mints its memory's id
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


def _default_reason(actor: str, owner: str, channel: str) -> str:
    if actor == owner:
        return "the person asked to remember this"
    return f"proposed by {actor} through the {channel} channel"

"""Creating memories: remember, remember_many, admit and edit, each decided by the policy.

A creation is planned first — validated, decided by the policy, embedded (``Admission``)
— and only then written inside the owner's transaction (``Ledger``), so a batch either
lands whole or not at all and no model runs while the chain is held.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from troth.core.access import default_channel
from troth.core.chain import INJECTION_TAG
from troth.core.errors import InvalidInputError
from troth.core.policy import Decision
from troth.core.records import check_principal
from troth.service.admission import Admission, check_admitted_status, refuse_unstored
from troth.service.base import Parties
from troth.service.conflicts import link_contradictions
from troth.service.drafts import CreationPlan, Draft, WriteResult
from troth.service.groupcommit import GroupCommit
from troth.service.ledger import Ledger
from troth.service.vectors import Vectors


class Writes:
    """The use cases that create memories."""

    def __init__(
        self, parties: Parties, admission: Admission, ledger: Ledger, vectors: Vectors
    ) -> None:
        self.parties = parties
        self.admission = admission
        self.ledger = ledger
        self.vectors = vectors
        # Creations arriving together on one chain share a transaction (service.groupcommit).
        self.group = GroupCommit(ledger)

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
        return self.admission.decide(text, topic=topic, channel=channel, actor=actor, owner=owner)

    def remember(
        self,
        text: str,
        *,
        owner: str | None,
        actor: str | None,
        channel: str | None,
        on_behalf_of: str | None,
        draft: Draft | None,
        details: Mapping[str, Any],
    ) -> WriteResult:
        """Write a memory; the policy decides whether it is kept, proposed or not stored."""
        if channel is None:
            channel = self.default_channel(self.parties.actor(actor), owner)
        plan = self.admission.plan(
            text,
            owner=owner,
            actor=actor,  # checked once, in plan
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
            details=details,
        )
        return self.write_planned(plan)

    def default_channel(self, actor: str, owner: str | None) -> str:
        """The channel of a write that names none (``core.access.default_channel``)."""
        return default_channel(actor, self.parties.owner(owner, actor))

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        owner: str | None,
        actor: str | None,
        channel: str | None,
        on_behalf_of: str | None,
        draft: Draft | None,
        details: Mapping[str, Any],
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
                chosen = own.pop("channel", channel)
                if chosen is None:
                    chosen = self.default_channel(self.parties.actor(actor), owner)
                plans.append(
                    self.admission.plan(
                        text,
                        owner=owner,
                        actor=actor,
                        channel=chosen,
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
        plans = [self.linked(plan) for plan in plans]
        vectors = self.admission.plan_vectors(plans)
        # Held from the start and pipelined: a batch is never the one-statement write.
        with self.ledger.writing(plans[0].owner) as tx:
            return [self.ledger.write_plan(tx, plan, vectors) for plan in plans]

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Defer the store's index upkeep to one build when a large load ends.

        For a first load, a migration or a big import into a store that is not being
        searched meanwhile: on PostgreSQL the HNSW index is dropped and built once at the
        end (docs/operations.md); on SQLite nothing changes. Writes inside are as usual.
        """
        with self.vectors.bulk_load():
            yield

    def admit(
        self,
        text: str,
        *,
        owner: str,
        status: str | None,
        actor: str | None,
        channel: str,
        on_behalf_of: str | None,
        draft: Draft | None,
    ) -> WriteResult:
        """Write a memory carried in from an export, keeping the review state it had there.

        A restore keeps a page's status (``proposed``, ``active`` or ``rejected``); an import
        passes ``proposed`` for what the source had not approved, or None to let the policy
        choose. The policy still runs and what it would not store is refused. Only the owner,
        or a service principal, may admit memories into a ledger.
        """
        whose = check_principal(owner, "owner")
        self.admission.may_admit(whose)
        check_admitted_status(status)
        plan = self.admission.plan(
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
        return self.write_planned(plan)

    def edit(
        self,
        memory_id: str,
        text: str,
        *,
        actor: str | None,
        owner: str | None,
        channel: str | None,
        details: Mapping[str, Any],
        on_behalf_of: str | None = None,
    ) -> WriteResult:
        """Supersede a memory with new text: a new memory; the old one leaves retrieval.

        The policy decides the new memory like any write: a person's own edit is kept at
        once, an agent's (``actor`` an agent, ``channel`` its own, ``on_behalf_of`` the
        person) is proposed, and the old memory stays retrievable until it is approved.
        The new memory derives from the old one (``service.provenance.inherit``): it keeps
        the weaker channel of the two and its origin's writer, and a flag.
        """
        whose = self.parties.owner_of(memory_id, owner)
        old = self.parties.stored(whose, memory_id)
        who = self.parties.actor(actor)
        rest = dict(details)
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
            reason=rest.pop("reason", None) or f"edit of {memory_id}",
        )
        plan = self.admission.plan(
            text,
            owner=whose,
            actor=who,
            # An edit that names no channel goes through the writer's own (the one rule of
            # core.access.default_channel): an agent's correction is never "internal".
            channel=channel or default_channel(who, whose),
            on_behalf_of=on_behalf_of,
            draft=base,
            details=rest,
            supersedes=memory_id,
            inherited_tags=base.tags,
        )
        return self.write_planned(plan)

    def linked(self, plan: CreationPlan) -> CreationPlan:
        """The plan with its ``contradicts`` links to more trusted memories (service.conflicts)."""
        return link_contradictions(self.parties.store, self.admission.policy.trust, plan)

    def write_planned(self, plan: CreationPlan) -> WriteResult:
        """Embed a planned creation, then append it on the owner's chain.

        A creation that reads nothing (all but an edit, which loads what it supersedes)
        is tried on the head verified last: one statement on a server backend.
        """
        plan = self.linked(plan)
        vectors = self.admission.plan_vectors([plan])
        if plan.event.supersedes is not None:
            with self.ledger.writing(plan.owner) as tx:
                return self.ledger.write_plan(tx, plan, vectors)
        return self.group.append(plan.owner, lambda tx: self.ledger.write_plan(tx, plan, vectors))

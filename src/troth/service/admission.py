"""Admission: a write validated and decided by the policy once, before any chain is held.

:meth:`Admission.plan` turns what a caller said into a :class:`CreationPlan` — the event
with its committed fields and erasable texts, the content, the channel and the policy's
one decision — and :meth:`Admission.plan_vectors` embeds a batch of plans. Nothing here
writes: the plans go to :meth:`troth.service.ledger.Ledger.write_plan`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from troth.core.chain import INJECTION_TAG
from troth.core.errors import InvalidInputError, PolicyDeniedError
from troth.core.events import Event
from troth.core.limits import MAX_REASON_CHARS
from troth.core.policy import Decision, Policy
from troth.core.records import SENSITIVITIES, check_principal, principal_kind
from troth.core.tags import writer_tags
from troth.service import validation as check
from troth.service.base import Clock, Parties
from troth.service.drafts import CreationPlan, Draft, draft_fields
from troth.service.vectors import Vectors

_FIRST_STATUS = {"automatic": "active", "ask": "proposed", "no_store": "no_store"}
ADMITTED_STATUSES = ("proposed", "active", "rejected")


def check_admitted_status(status: str | None) -> None:
    """A restored or imported memory keeps a reviewed state, or lets the policy choose."""
    if status is not None and status not in ADMITTED_STATUSES:
        raise InvalidInputError(
            f"an admitted memory is proposed, active or rejected; got {status!r}",
            field="status",
        )


def flag_decision(decision: Decision) -> Decision:
    """A decision for text its source flagged as instruction-shaped: held like a detected one."""
    if decision.mode != "automatic":
        return replace(decision, flagged=True)
    why = "its source flagged the text as an instruction to the assistant; held for review"
    return replace(decision, flagged=True, mode="ask", why=why)


def refuse_unstored(decision: Decision) -> None:
    """What is carried in from elsewhere is refused, not recorded, when the policy won't keep it."""
    if decision.mode == "no_store":
        raise PolicyDeniedError(
            f"the policy does not store this: {decision.why}", reason=decision.why
        )


class Admission:
    """Validation and the policy's decision for every creation, on every path."""

    def __init__(self, policy: Policy, parties: Parties, vectors: Vectors, clock: Clock) -> None:
        self.policy = policy
        self.parties = parties
        self.vectors = vectors
        self.clock = clock

    def new_id(self) -> str:
        """A fresh memory id: the clock's milliseconds, then randomness."""
        millis = int(self.clock().timestamp() * 1000)
        return f"m_{millis:011x}{secrets.token_hex(5)}"

    def decide(
        self, text: str, *, topic: str, channel: str, actor: str | None, owner: str | None
    ) -> Decision:
        """What the policy would decide for a write, without writing."""
        who = self.parties.actor(actor)
        return self.policy.decide(
            content=check.content(text),
            topic=topic,
            channel=channel,
            actor=who,
            owner=self.parties.owner(owner, who),
        )

    def may_admit(self, owner: str) -> None:
        """Only the owner, or a service principal, may restore or import into a ledger."""
        principal = self.parties.principal
        if principal != owner and principal_kind(principal) != "service":
            raise PolicyDeniedError(
                f"only {owner} (or a service principal) may restore or import into their"
                f" ledger; {principal} may not",
                actor=principal,
                owner=owner,
            )

    def plan(
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
        inherited_tags: Sequence[str] = (),
    ) -> CreationPlan:
        """Validate a write and let the policy decide it; nothing is written yet.

        Tags from anyone but the owner are stored under the writer's name (``core.tags``);
        ``inherited_tags`` (an edit's, from what it supersedes) are kept as they are.
        """
        who = self.parties.actor(actor)
        whose = self.parties.owner(owner, who)
        if on_behalf_of is not None:
            check_principal(on_behalf_of, "on_behalf_of")
        unknown = sorted(set(details) - set(Draft.__dataclass_fields__))
        if unknown:
            raise InvalidInputError(
                f"unknown memory field {', '.join(unknown)}; known fields:"
                f" {', '.join(sorted(Draft.__dataclass_fields__))}",
                field=unknown[0],
            )
        if draft is None:  # a new draft from the details: one __init__, not two and a replace
            draft = Draft(**details)
        elif details:
            draft = replace(draft, **details)
        body = check.content(text)
        self.policy.check_channel(actor=who, owner=whose, channel=channel)
        decision = self.policy.decide(
            content=body, topic=draft.topic, channel=channel, actor=who, owner=whose
        )
        if draft.flagged is True and not decision.flagged:
            decision = flag_decision(decision)
        if decision.topic != draft.topic:
            draft = replace(draft, topic=decision.topic)
        # A tag anyone but the owner sets is stored under its writer's name (core/tags.py);
        # then the tags go with the other free texts, erasable (draft_fields).
        if who != whose and draft.tags:  # (replace only when it changes: it is not cheap)
            named = writer_tags(
                check.tags(draft.tags), writer=who, owner=whose, inherited=inherited_tags
            )
            draft = replace(draft, tags=tuple(named))
        fields, texts = draft_fields(draft)
        sensitivity = draft.sensitivity or decision.sensitivity
        if decision.sensitivity == "sensitive":
            sensitivity = "sensitive"
        fields["sensitivity"] = check.choice(sensitivity, SENSITIVITIES, "sensitivity")
        fields["approval_mode"] = decision.mode
        fields["status"] = status or _FIRST_STATUS[decision.mode]
        if decision.flagged:
            fields["flagged"] = True
            fields["tags"] = [*fields.get("tags", ()), INJECTION_TAG]
        texts.setdefault("reason", _default_reason(who, whose, channel))
        memory_id = self.new_id()
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
        return CreationPlan(
            whose, event, content, channel, reserved, decision, trust=self.policy.trust
        )

    def plan_vectors(self, plans: Sequence[CreationPlan]) -> dict[str, Any]:
        """Embeddings of planned creations, computed in one batch before the transaction."""
        wanted = [p for p in plans if p.decision.mode != "no_store"]
        texts = [" ".join(t for t in (p.event.texts.get("title"), p.content) if t) for p in wanted]
        vectors = self.vectors.embed(texts)
        return {p.event.memory: v for p, v in zip(wanted, vectors, strict=False)}


def _default_reason(actor: str, owner: str, channel: str) -> str:
    if actor == owner:
        return "the person asked to remember this"
    return f"proposed by {actor} through the {channel} channel"

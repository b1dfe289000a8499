"""Destructive acts that wait for the person: an agent's forget or redact becomes a request.

The policy ranks deleting a person's memory as a trust-3 act that no agent may take alone
(``[destructive] at_once`` in the policy file names the writers who may; by default the
person and service principals). Anyone else's forget or redact is written as a *request*: a
proposed memory saying what is asked (never quoting the target's text), ``about`` the target,
with ``extra.x_request = {act, target}``. It waits in the normal review flow (CLI ``approve``
/ ``reject``, ``POST /api/memories/{id}/approve``, the review page). Approving it carries
the act out in one transaction — the request approved, the target forgotten or redacted by
the person, the request taken out of retrieval — and rejecting it leaves the target as it
was (docs/api.md, "Access").
"""

from __future__ import annotations

from typing import Any

from troth.core import lifecycle
from troth.core.errors import PolicyDeniedError
from troth.core.limits import MAX_REDACTION_REASON_CHARS, REDACTION_PREFIX
from troth.core.records import MemoryRecord, Relation, principal_kind
from troth.service import validation as check
from troth.service.admission import Admission
from troth.service.base import Parties, steward_channel
from troth.service.drafts import Draft
from troth.service.ledger import Ledger
from troth.service.writes import Writes

REQUEST_KEY = "x_request"
ACTS = ("forget", "redact")


def request_of(memory: MemoryRecord) -> dict[str, Any] | None:
    """The act a memory asks for, if it is a request for a destructive act.

    The marker alone is not enough: anyone who can put ``extra`` on a memory (a library
    caller, an imported page) could hide it behind a harmless text, and the person's
    approval would then forget or redact another memory. A request is carried out only
    when its text says what approving it does, as :meth:`Requests.ask` writes it
    ("<writer> asks to <act> memory <id>: …"), and never when it came in by an import.
    """
    asked = memory.extra.get(REQUEST_KEY)
    if not (
        isinstance(asked, dict)
        and asked.get("act") in ACTS
        and isinstance(asked.get("target"), str)
    ):
        return None
    says = f"{memory.actor} asks to {asked['act']} memory {asked['target']}: "
    if "x_import" in memory.extra or not (memory.content or "").startswith(says):
        return None
    return asked


class Requests:
    """Asking for a destructive act, and carrying it out once the person approves."""

    def __init__(
        self, parties: Parties, admission: Admission, writes: Writes, ledger: Ledger
    ) -> None:
        self.parties = parties
        self.admission = admission
        self.writes = writes
        self.ledger = ledger

    def must_ask(self, act: str, *, actor: str | None, owner: str) -> bool:
        """Whether ``actor``'s ``act`` on ``owner``'s memory waits for the person."""
        who = self.parties.actor(actor)
        return not self.admission.policy.destroys_at_once(actor=who, owner=owner)

    def ask(
        self,
        act: str,
        target: MemoryRecord,
        *,
        actor: str | None,
        reason: str,
        on_behalf_of: str | None = None,
    ) -> MemoryRecord:
        """Write the request for ``act`` on ``target``: a proposal for the person."""
        who = self.parties.actor(actor)
        why = check.text(reason, "reason", max_chars=MAX_REDACTION_REASON_CHARS)
        lifecycle.check_transition(target, act)
        draft = Draft(
            kind="context",
            sensitivity=target.sensitivity,
            relations=(Relation(rel="about", target=target.id),),
            extra={REQUEST_KEY: {"act": act, "target": target.id}},
            reason=f"{who} asks to {act} {target.id}",
        )
        plan = self.admission.plan(
            f"{who} asks to {act} memory {target.id}: {why}",
            owner=target.owner,
            actor=who,
            channel=steward_channel(who, target.owner)
            if principal_kind(who) == "service"
            else "synthesis",
            on_behalf_of=on_behalf_of,
            draft=draft,
            details={},
            status="proposed",
        )
        result = self.writes.write_planned(plan)
        return self.parties.stored(target.owner, result.id)

    def carry_out(
        self, request: MemoryRecord, *, actor: str | None, note: str | None
    ) -> MemoryRecord:
        """The person approves a request: approve it, do the act, take it out of retrieval."""
        asked = request_of(request)
        assert asked is not None
        who = self.parties.actor(actor)
        whose = request.owner
        if who != whose or principal_kind(who) != "human":
            raise PolicyDeniedError(
                f"only {whose} may approve the request {request.id} to {asked['act']} one of"
                " their memories",
                actor=who,
                id=request.id,
            )
        channel = steward_channel(who, whose)
        act, target_id = asked["act"], asked["target"]
        asked_why = request.content.split(": ", 1)[-1] or "requested"
        if act == "redact":
            texts = {"note": REDACTION_PREFIX + asked_why[:MAX_REDACTION_REASON_CHARS]}
        else:
            texts = {"note": check.note(f"at the request of {request.actor} ({request.id})")}
        with self.ledger.writing(whose) as tx:
            current = self.parties.load(tx, request.id)
            lifecycle.check_transition(current, "approve")
            target = self.parties.load(tx, target_id)
            lifecycle.check_transition(target, act)
            approval = {"note": check.note(note, "note")} if note is not None else {}
            approved = self.ledger.append_change(
                tx, current, "approve", actor=who, texts=approval, channel=channel
            )[0]
            self.ledger.append_change(tx, target, act, actor=who, texts=texts, channel=channel)
            done = self.ledger.append_change(
                tx,
                approved,
                "hide",
                actor=who,
                texts={"note": f"carried out: {act} of {target_id}"},
                channel=channel,
            )
        return done[0]

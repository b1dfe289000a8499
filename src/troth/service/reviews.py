"""The review verbs as a caller meets them: a change, or a request that waits for the person.

An act the policy lets this writer take at once is a change (``changes.py``); a forget or a
redaction it does not (an agent's) is written as a request the person approves
(``requests.py``), and approving such a request carries its act out. The facade resolves
which memory a call names for its caller (``access.py``) and hands it here.
"""

from __future__ import annotations

from troth.core.records import MemoryRecord
from troth.service.base import Parties
from troth.service.changes import Changes
from troth.service.requests import Requests, request_of


class Reviews:
    """Approve, forget and redact a memory the caller may reach: at once, or by request."""

    def __init__(self, parties: Parties, changes: Changes, requests: Requests) -> None:
        self.parties = parties
        self.changes = changes
        self.requests = requests

    def approve(self, found: MemoryRecord, *, actor: str | None, note: str | None) -> MemoryRecord:
        """Approve a proposed memory; approving a request to forget or redact carries it out."""
        if request_of(found) is not None and found.status == "proposed":
            return self.requests.carry_out(found, actor=actor, note=note)
        return self.changes.approve(found.id, actor=actor, owner=found.owner, note=note)

    def forget(self, found: MemoryRecord, *, actor: str | None, reason: str) -> MemoryRecord:
        """Forget a memory at once, or ask the person to (the proposed request)."""
        if self.requests.must_ask("forget", actor=actor, owner=found.owner):
            return self.ask("forget", found, actor, reason)
        return self.changes.forget(found.id, actor=actor, owner=found.owner, reason=reason)

    def redact(self, found: MemoryRecord, *, actor: str | None, reason: str) -> MemoryRecord:
        """Redact a memory at once, or ask the person to (the proposed request)."""
        if self.requests.must_ask("redact", actor=actor, owner=found.owner):
            return self.ask("redact", found, actor, reason)
        return self.changes.redact(found.id, reason=reason, actor=actor, owner=found.owner)

    def ask(self, act: str, target: MemoryRecord, actor: str | None, reason: str) -> MemoryRecord:
        """The request for ``act`` on ``target``, on behalf of its owner when another asks."""
        who = actor or self.parties.principal
        behalf = target.owner if who != target.owner else None
        return self.requests.ask(act, target, actor=who, reason=reason, on_behalf_of=behalf)

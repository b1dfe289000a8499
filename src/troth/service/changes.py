"""Changing a memory that exists: approve, reject, hide, forget and redact.

Each is one lifecycle event appended to the owner's chain after the transition is checked
against the memory's current state inside the transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from troth.core import lifecycle
from troth.core.errors import PolicyDeniedError
from troth.core.limits import MAX_REDACTION_REASON_CHARS, REDACTION_PREFIX
from troth.core.records import MemoryRecord, principal_kind
from troth.service import validation as check
from troth.service.base import Parties, steward_channel
from troth.service.ledger import Ledger

#: The note of a forget that gives no reason, on every surface (library, CLI, HTTP, MCP).
FORGET_REASON = "forgotten at the owner's request"


class Changes:
    """The use cases that move an existing memory through its lifecycle."""

    def __init__(self, parties: Parties, ledger: Ledger) -> None:
        self.parties = parties
        self.ledger = ledger

    def approve(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """A person approves a proposed memory; it becomes active and retrievable."""
        return self._review(memory_id, "approve", actor=actor, owner=owner, note=note)

    def reject(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """A person rejects a proposed memory; it is never retrievable."""
        return self._review(memory_id, "reject", actor=actor, owner=owner, note=note)

    def hide(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """Remove a memory from retrieval without forgetting it (``retrieval_removed``)."""
        who = self.parties.actor(actor)
        whose = self.parties.owner_of(memory_id, owner)
        return self.change(memory_id, "hide", who, whose, _note(note))

    def forget(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        reason: str = FORGET_REASON,
    ) -> MemoryRecord:
        """Forget a memory at once: a tombstone; its bytes stay until redacted."""
        who = self.parties.actor(actor)
        whose = self.parties.owner_of(memory_id, owner)
        return self.change(memory_id, "forget", who, whose, {"note": check.note(reason)})

    def redact(
        self, memory_id: str, *, reason: str, actor: str | None = None, owner: str | None = None
    ) -> MemoryRecord:
        """Erase a memory's text from every byte the store keeps; the chain still verifies.

        Every free text of its history is erased: content, title, reason, scope id, tags,
        session, evidence, the notes of its approval, rejection or hiding, a forget's
        reason. Asked again of a memory already redacted (a retry whose first answer was
        lost, or that returned with its erasure pending), it finishes the compaction and
        answers the redacted memory instead of a conflict.
        """
        who = self.parties.actor(actor)
        whose = self.parties.owner_of(memory_id, owner)
        why = check.text(reason, "reason", max_chars=MAX_REDACTION_REASON_CHARS)
        current = self.parties.stored(whose, memory_id)
        if current.redacted:
            store = self.parties.store
            store.finish_erasures(store.erasure_wait)
            return current
        return self.change(memory_id, "redact", who, whose, {"note": REDACTION_PREFIX + why})

    def _review(
        self, memory_id: str, kind: str, *, actor: str | None, owner: str | None, note: str | None
    ) -> MemoryRecord:
        who = self.parties.actor(actor)
        whose = self.parties.owner_of(memory_id, owner)
        if principal_kind(who) != "human":
            raise PolicyDeniedError(
                f"only a person may {kind} a proposed memory; {who} is not a human principal",
                actor=who,
            )

        def only_the_owner(memory: MemoryRecord) -> None:
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

        return self.change(memory_id, kind, who, whose, _note(note), guard=only_the_owner)

    def change(
        self,
        memory_id: str,
        kind: str,
        who: str,
        whose: str,
        texts: Mapping[str, str],
        *,
        guard: Callable[[MemoryRecord], None] | None = None,
    ) -> MemoryRecord:
        """Check the transition (and ``guard``) on the current state, then append the event."""
        with self.ledger.writing(whose) as tx:
            memory = self.parties.load(tx, memory_id)
            lifecycle.check_transition(memory, kind)
            if guard is not None:
                guard(memory)
            changed = self.ledger.append_change(
                tx, memory, kind, actor=who, texts=texts, channel=steward_channel(who, whose)
            )
        return changed[0]


def _note(note: str | None) -> dict[str, str]:
    return {"note": check.note(note, "note")} if note is not None else {}

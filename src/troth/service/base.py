"""What every use case of the ``Memory`` facade stands on: the clock, and who acts on whose ledger.

:class:`Parties` answers the questions each verb asks first — who is acting, whose ledger
it touches, which owner a memory id belongs to — with the same checks and the same
sentences everywhere. The write path itself is :class:`troth.service.ledger.Ledger`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from troth.core.chain import parse_utc
from troth.core.errors import InvalidInputError, NotFoundError
from troth.core.records import MemoryRecord, check_principal, principal_kind
from troth.service import validation as check
from troth.storage.base import Store, Transaction

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The wall clock in UTC."""
    return datetime.now(UTC)


def parse_time(value: str) -> datetime:
    """A stored UTC time (``…Z``) as an aware datetime."""
    return parse_utc(value)


def steward_channel(actor: str, owner: str) -> str:
    """Lifecycle decisions by the owner are user statements; anyone else's are internal."""
    return "user" if actor == owner and principal_kind(actor) == "human" else "internal"


def found(memory: MemoryRecord | None, memory_id: str, owner: str) -> MemoryRecord:
    """``memory``, or the "no such memory" error naming it."""
    if memory is None:
        raise NotFoundError(f"no memory {memory_id} for {owner}", id=memory_id)
    return memory


class Parties:
    """The acting principal of a facade, and the owners its verbs act on."""

    def __init__(self, store: Store, principal: str) -> None:
        self.store = store
        self.principal = check_principal(principal, "acting principal")

    def actor(self, actor: str | None) -> str:
        """``actor``, checked, or the facade's own principal."""
        return self.principal if actor is None else check_principal(actor, "actor")

    def owner(self, owner: str | None, actor: str) -> str:
        """The owner named, or the actor when it is a person (an agent must say whose)."""
        if owner is not None:
            return check_principal(owner, "owner")
        if principal_kind(actor) != "human":
            raise InvalidInputError(
                f"{actor} is not a person; say whose memory this is with owner=human:NAME",
                field="owner",
            )
        return actor

    def owners(self, owner: str | None) -> list[str]:
        """One owner when named, else every owner the store knows."""
        return [check_principal(owner, "owner")] if owner else self.store.owners()

    def owner_of(self, memory_id: str, owner: str | None) -> str:
        """The owner named, or the one whose ledger holds ``memory_id``."""
        if owner is not None:
            return check_principal(owner, "owner")
        check.identifier(memory_id, "memory id")
        located = self.store.locate(memory_id)
        if located is None:
            raise NotFoundError(
                f"no memory {memory_id}; `troth list` shows the ids you can use",
                id=memory_id,
            )
        return located

    def stored(self, owner: str, memory_id: str) -> MemoryRecord:
        """One of the owner's memories, outside any transaction."""
        return found(self.store.get(owner, memory_id), memory_id, owner)

    @staticmethod
    def load(tx: Transaction, memory_id: str) -> MemoryRecord:
        """One of the transaction owner's memories, as the open transaction sees it."""
        check.identifier(memory_id, "memory id")
        return found(tx.get(memory_id), memory_id, tx.owner)

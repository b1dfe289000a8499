"""The one access authority of the service: every verb of the facade asks it first.

A :class:`~troth.core.access.Grant` says whom a caller is and how far it reaches (the pure
rules are in ``core/access.py``); :class:`Access` applies that grant to the store: which
ledger a call acts on, which memory an id names *for this caller*, what a listing, a recall,
a checkpoint reply, a log or an export may contain. The library facade
(``Memory``) holds one for its principal (:func:`troth.core.access.library_grant`); the HTTP
API and the MCP tools see the facade through a token's grant (``Memory.acting_as``), so
every surface gets the same answers from this one class (docs/api.md, "Access").

What a caller may not read is "not found" when it names it by id, absent from what it lists
or searches, and refused whole where leaving it out would falsify the answer (a personaxis
export is the whole chain).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from troth.core.access import EVERY, EXPORT, NAMED, READ, WRITE, Grant, library_grant, not_found
from troth.core.errors import PolicyDeniedError
from troth.core.events import Record
from troth.core.records import MemoryRecord, principal_kind
from troth.service import validation as check
from troth.service.recall import Query
from troth.storage.base import MemoryFilter, Store

__all__ = ["EXPORT", "READ", "WRITE", "Access"]


class Access:
    """One grant applied to one store: the decision every verb of the facade goes through."""

    def __init__(self, store: Store, grant: Grant, *, default: str | None = None) -> None:
        self.store = store
        self.grant = grant
        # The person an agent acts for when a call names no owner: the person whose facade
        # relays the agent's call (``Memory.as_actor``); None elsewhere.
        self.default = default

    @classmethod
    def relayed(cls, store: Store, actor: str, principal: str) -> Access:
        """The authority of a library call by ``principal``'s facade that names another
        ``actor``: the library takes its caller's word for who acts, so the call is held to
        that actor's own grant (``Memory.as_actor``)."""
        grant = library_grant(actor)
        # An agent relayed through a person's facade acts for that person unless it names
        # another; a person's own facade never lends them another's ledger.
        person = principal if principal_kind(principal) == "human" else None
        return cls(store, grant, default=person if grant.reach == NAMED else None)

    def require(self, scope: str, action: str) -> None:
        """Refuse unless the grant holds ``scope`` (a sentence naming it)."""
        self.grant.require(scope, action)

    def writable(self, named: str | None, action: str) -> str:
        """The ledger a write acts on: refused unless the grant may write (``action`` says
        what was asked, as for :meth:`require`), then as :meth:`owner`."""
        self.require(WRITE, action)
        return self.owner(named)

    def owner(self, named: str | None) -> str:
        """The ledger a call acts on (the one named, if the grant reaches it)."""
        return self.grant.owner_for(self.default if named is None else named)

    def memory(self, memory_id: str, owner: str | None = None) -> MemoryRecord:
        """The memory ``memory_id`` names for this caller: in a ledger it reaches and one it
        may read; anything else is the one "not found" (never "it is someone else's")."""
        check.identifier(memory_id, "memory id")
        self.require(READ, "read memories")
        if owner is None and self.grant.reach == EVERY:
            located = self.store.locate(memory_id)
            return self.grant.visible(
                None if located is None else self.store.get(located, memory_id), memory_id
            )
        try:
            whose = self.owner(owner)
        except PolicyDeniedError:
            # Naming another owner is asking whether an id exists there: the same answer.
            raise not_found(memory_id) from None
        return self.grant.visible(self.store.get(whose, memory_id), memory_id)

    def memories(self, ids: Iterable[str], owner: str | None = None) -> tuple[str, list[str]]:
        """The one owner of memories named together (each one visible), and their ids."""
        found = [self.memory(memory_id, owner) for memory_id in ids]
        whose = found[0].owner if found else self.owner(owner)
        return whose, [m.id for m in found]

    def listing(self, query: MemoryFilter | None) -> MemoryFilter:
        """A listing's filter, with sensitive memories left out unless the grant sees them."""
        self.require(READ, "list memories")
        flt = query or MemoryFilter(limit=100)
        return replace(flt, include_sensitive=flt.include_sensitive and self.grant.sees_sensitive)

    def recall(self, query: Query) -> Query:
        """A recall's query, on a ledger the grant reaches, sensitive ones only if it sees them."""
        self.require(READ, "search memories")
        return replace(
            query,
            owner=self.owner(query.owner),
            include_sensitive=query.include_sensitive and self.grant.sees_sensitive,
        )

    def sensitive_for_checkpoint(self, asked: bool | None) -> bool | None:
        """Whether a checkpoint reply may quote sensitive memories: never past the grant."""
        return asked if self.grant.sees_sensitive else False

    def hidden(self, owner: str) -> set[str]:
        """The ids of the owner's memories this grant may not read (sensitive ones)."""
        if self.grant.sees_sensitive:
            return set()
        return {
            m.id for m in self.store.memories(owner, MemoryFilter()) if not self.grant.may_read(m)
        }

    def records(self, owner: str, rows: Iterable[Record]) -> Iterator[Record]:
        """Ledger rows, without those about memories the grant may not read."""
        hidden = self.hidden(owner)
        for row in rows:
            event = row.decode()
            if (
                hidden
                and event is not None
                and (event.memory in hidden or hidden.intersection(event.memories))
            ):
                continue
            yield row

    def exportable(self, owner: str | None) -> str:
        """The owner of an export, refused whole when it would carry what the grant may not
        read: an export speaks for the whole ledger (a personaxis one is the whole chain)."""
        self.require(EXPORT, "export the ledger")
        whose = self.owner(owner)
        hidden = self.hidden(whose)
        if hidden:
            raise PolicyDeniedError(
                f"this ledger holds {len(hidden)} sensitive memor"
                f"{'y' if len(hidden) == 1 else 'ies'} this caller may not read, and an export"
                " carries the whole ledger; export with a token that also has"
                " memory.sensitive:read",
                scope="memory.sensitive:read",
            )
        return whose

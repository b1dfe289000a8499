"""HTTP routes for the ledger as a whole: counts, one memory's chain events, the tokens on it.

What the review page's "Ledger" view and a memory's audit trail read, beside the memory
routes of :mod:`troth.adapters.http`. ``server.create_app`` includes :func:`ledger_router`.

Tokens: a person sees and revokes the tokens *issued on their own ledger* — their own and
those of every agent acting for them — and nobody else's. Both routes need ``review:write``
held by a person (the scope that already guards every decision about the ledger), so an
agent can neither list the tokens that act for its person nor revoke one (docs/api.md,
authorisation matrix).
"""

from __future__ import annotations

from typing import get_args

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from troth.adapters.http import ERRORS, ON_MEMORY, Caller, EventOut
from troth.adapters.http_schema import MemoryId
from troth.core.access import TokenRecord
from troth.core.errors import NotFoundError
from troth.core.records import Status
from troth.service.tokens import Tokens

STATUSES: tuple[str, ...] = get_args(Status)
EVENT_PAGE = 1000  # the audit route's largest page


class CountsOut(BaseModel):
    """How many memories the caller can see, in all and by status."""

    total: int
    by_status: dict[str, int]


class EventList(BaseModel):
    """The ledger events that name one memory, in chain order (never content)."""

    memory: str
    events: list[EventOut]


class TokenOut(BaseModel):
    """A token issued on the caller's ledger (never its secret)."""

    id: str
    principal: str
    on_behalf_of: str | None
    scopes: list[str]
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    label: str | None
    active: bool = Field(description="neither revoked nor expired")
    current: bool = Field(description="the token this request was made with")


class TokenList(BaseModel):
    """Tokens on the caller's ledger, oldest first."""

    tokens: list[TokenOut]


def _on_ledger(record: TokenRecord, owner: str) -> bool:
    return record.principal == owner or record.on_behalf_of == owner


def ledger_router() -> APIRouter:
    """The routes of this module, for ``app.include_router``."""
    router = APIRouter()

    @router.get("/api/counts", tags=["audit"], responses=ERRORS)
    def counts(scoped: Caller) -> CountsOut:
        """How many memories there are by status (what the caller may see)."""
        by_status = {s: scoped.memories(statuses=(s,), limit=1)[1] for s in STATUSES}
        return CountsOut(total=sum(by_status.values()), by_status=by_status)

    @router.get("/api/memories/{memory_id}/events", tags=["audit"], responses=ON_MEMORY)
    def events(scoped: Caller, memory_id: MemoryId) -> EventList:
        """The chain events naming one memory, each with its position and entry hash."""
        scoped.read(memory_id)  # 404 for a memory the caller may not see
        found: list[EventOut] = []
        start = 0
        while True:
            page = scoped.audit(None, start=start, limit=EVENT_PAGE)
            found += [EventOut.model_validate(e) for e in page if e["memory"] == memory_id]
            if len(page) < EVENT_PAGE:
                return EventList(memory=memory_id, events=found)
            start = page[-1]["seq"] + 1

    @router.get("/api/tokens", tags=["tokens"], responses=ERRORS)
    def tokens_list(scoped: Caller, request: Request) -> TokenList:
        """The tokens issued on the caller's ledger: theirs and their agents' (a person only)."""
        scoped.grant.require_review("see the tokens issued on your ledger")
        tokens: Tokens = request.app.state.tokens
        owner = scoped.owner
        mine = [r for r in tokens.records() if _on_ledger(r, owner)]
        live = {r.token_id for p in {r.principal for r in mine} for r in tokens.active(p)}
        return TokenList(
            tokens=[
                TokenOut.model_validate(
                    {
                        **r.to_dict(),
                        "active": r.token_id in live,
                        "current": r.token_id == scoped.grant.token_id,
                    }
                )
                for r in mine
            ]
        )

    @router.post("/api/tokens/{token_id}/revoke", tags=["tokens"], responses=ON_MEMORY)
    def tokens_revoke(scoped: Caller, request: Request, token_id: str) -> TokenOut:
        """Revoke a token on the caller's ledger at once (a person only)."""
        scoped.grant.require_review("revoke a token")
        tokens: Tokens = request.app.state.tokens
        owner = scoped.owner
        if not any(r.token_id == token_id and _on_ledger(r, owner) for r in tokens.records()):
            # Another ledger's token is not found, like another owner's memory.
            raise NotFoundError(
                f"no token {token_id} on your ledger; the Ledger view lists them", id=token_id
            )
        record = tokens.revoke(token_id)
        return TokenOut.model_validate(
            {**record.to_dict(), "active": False, "current": token_id == scoped.grant.token_id}
        )

    return router


__all__ = ["ledger_router"]

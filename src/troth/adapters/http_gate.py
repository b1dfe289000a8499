"""The trust gate over HTTP: ``POST /api/gate`` asks whether memories may justify an action.

The same question as ``Memory.may_justify``, the CLI's ``troth gate`` and the MCP tool
``trust.gate``, with the same answer: whether it is allowed, the reason, and the weakest
source named — which memory, through which channel, written by whom, and who endorsed it
(docs/api.md, "Trust model"). ``server.create_app`` includes :func:`gate_router`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from troth.adapters.http import ON_MEMORY, Caller
from troth.core.limits import MAX_ACTION_CHARS, MAX_GATE_MEMORIES, MAX_ID_CHARS


class GateIn(BaseModel):
    """The question: may these memories justify this action?"""

    model_config = ConfigDict(extra="forbid")

    action: str = Field(
        min_length=1,
        max_length=MAX_ACTION_CHARS,
        description="an action of the policy's [actions] table, e.g. delete, credential_use,"
        " external_api, file_write, self_edit",
    )
    memory_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]] = Field(
        min_length=1,
        max_length=MAX_GATE_MEMORIES,
        description="the memories whose text would justify it; the weakest source decides",
    )


class SourceOut(BaseModel):
    """The memory that decided the answer: the weakest source of those asked about."""

    memory: str
    channel: str
    writer: str = Field(description="who wrote the text at its origin")
    trust: int = Field(description="the trust the gate gave it (0: flagged or not active)")
    flagged: bool
    endorsed_by: list[str] = Field(
        description="people who approved or edited it; an endorsement does not raise trust"
    )


class GateOut(BaseModel):
    """The gate's answer, the same on every surface."""

    allowed: bool
    action: str
    required: int = Field(description="the least trust the action needs")
    trust: int = Field(description="the trust of the weakest source")
    reason: str
    weakest: SourceOut | None


def gate_router() -> APIRouter:
    """The route of this module, for ``app.include_router``."""
    router = APIRouter()

    @router.post("/api/gate", tags=["trust"], responses=ON_MEMORY)
    def gate(scoped: Caller, body: GateIn) -> GateOut:
        """May these memories justify a sensitive action? The weakest source decides."""
        answer = scoped.may_justify(body.action, body.memory_ids)
        return GateOut.model_validate(answer.to_dict())

    return router


__all__ = ["gate_router"]

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

from troth.adapters.gate_views import GateAnswer
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


def gate_router() -> APIRouter:
    """The route of this module, for ``app.include_router``."""
    router = APIRouter()

    @router.post("/api/gate", tags=["trust"], responses=ON_MEMORY)
    def gate(scoped: Caller, body: GateIn) -> GateAnswer:
        """May these memories justify a sensitive action? The weakest source decides."""
        answer = scoped.may_justify(body.action, body.memory_ids)
        return GateAnswer.model_validate(answer.to_dict())

    return router


__all__ = ["gate_router"]

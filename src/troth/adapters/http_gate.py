"""The trust gate over HTTP: ``POST /api/gate`` asks whether memories may justify an action.

The same question as ``Memory.may_justify``, the CLI's ``troth gate`` and the MCP tool
``trust.gate``, with the same answer: whether it is allowed, the reason, and the weakest
source named — which memory, through which channel, written by whom, and who endorsed it
(docs/api.md, "Trust model"). ``server.create_app`` includes :func:`gate_router`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from troth.adapters.gate_views import GateAnswer
from troth.adapters.http import ON_MEMORY, Caller
from troth.core.limits import MAX_ACTION_CHARS, MAX_GATE_MEMORIES, MAX_ID_CHARS
from troth.core.records import ID_PATTERN


def gate_model(actions: Sequence[str]) -> type[BaseModel]:
    """The question's body, as the policy this server runs defines its actions: the OpenAPI
    document lists them, so every request it allows is one the gate can answer."""
    known: list[JsonValue] = [str(name) for name in sorted(actions)]
    action = Field(
        min_length=1,
        max_length=MAX_ACTION_CHARS,
        json_schema_extra={"enum": known},
        description="an action of the policy's [actions] table, e.g. delete, credential_use,"
        " external_api, file_write, self_edit",
    )
    memory_id = Annotated[
        str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN.pattern)
    ]
    ids = Field(
        min_length=1,
        max_length=MAX_GATE_MEMORIES,
        description="the memories whose text would justify it; the weakest source decides",
    )
    model: type[BaseModel] = create_model(
        "GateIn",
        __config__=ConfigDict(extra="forbid"),
        __doc__="The question: may these memories justify this action?",
        action=(str, action),
        memory_ids=(list[memory_id], ids),
    )
    return model


def gate_router(actions: Sequence[str]) -> APIRouter:
    """The route of this module, for ``app.include_router``; ``actions``: the policy's."""
    router = APIRouter()
    body_model = gate_model(actions)

    def gate(scoped: Caller, body: BaseModel) -> GateAnswer:
        """May these memories justify a sensitive action? The weakest source decides."""
        answer = scoped.may_justify(body.action, body.memory_ids)  # type: ignore[attr-defined]
        return GateAnswer.model_validate(answer.to_dict())

    # The body's model is made here, from the policy: named as an object, not as text,
    # so the framework reads the request body by it (this module's annotations are text).
    gate.__annotations__["body"] = body_model
    router.add_api_route("/api/gate", gate, methods=["POST"], tags=["trust"], responses=ON_MEMORY)
    return router


__all__ = ["gate_model", "gate_router"]

"""The trust gate over HTTP: ``POST /api/gate`` asks whether memories may justify an action.

The same question as ``Memory.may_justify``, the CLI's ``troth gate`` and the MCP tool
``trust.gate``, with the same answer: whether it is allowed, the reason, and the weakest
source named — which memory, through which channel, written by whom, and who endorsed it
(docs/api.md, "Trust model"). ``server.create_app`` includes :func:`gate_router`.

The body's model is made when the app is, from the policy it runs, and the route's function
names it as its body's annotation. That annotation must be the class itself, which is why
this module (alone of the adapters) does not defer its annotations to text with
``from __future__ import annotations``: FastAPI resolves a text annotation in the module's
globals, where a model made at start is not.
"""

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from troth.adapters.gate_views import GateAnswer
from troth.adapters.http import ON_MEMORY, Caller
from troth.core.limits import MAX_ACTION_CHARS, MAX_GATE_MEMORIES, MAX_ID_CHARS
from troth.core.records import ID_PATTERN

_MemoryId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN.pattern)]
# The action's limits, once: the question below and the model :func:`gate_model` makes.
_Action = Annotated[str, Field(min_length=1, max_length=MAX_ACTION_CHARS)]


class GateQuestion(BaseModel):
    """The question: may these memories justify this action?"""

    model_config = ConfigDict(extra="forbid")

    action: _Action = Field(
        description="an action of the policy's [actions] table, e.g. delete, credential_use,"
        " external_api, file_write, self_edit",
    )
    memory_ids: list[_MemoryId] = Field(
        min_length=1,
        max_length=MAX_GATE_MEMORIES,
        description="the memories whose text would justify it; the weakest source decides",
    )


def gate_model(actions: Sequence[str]) -> type[GateQuestion]:
    """The question's body, as the policy this server runs defines its actions: the OpenAPI
    document lists them, so every request it allows is one the gate can answer."""
    known: list[JsonValue] = [str(name) for name in sorted(actions)]
    inherited = GateQuestion.model_fields["action"]
    action = Field(json_schema_extra={"enum": known}, description=inherited.description)
    model: type[GateQuestion] = create_model(
        "GateIn", __base__=GateQuestion, __doc__=GateQuestion.__doc__, action=(_Action, action)
    )
    return model


def gate_router(actions: Sequence[str]) -> APIRouter:
    """The route of this module, for ``app.include_router``; ``actions``: the policy's."""
    router = APIRouter()
    GateIn = gate_model(actions)  # noqa: N806 (a class, named as one)

    # mypy takes no class made at run time for a type; FastAPI reads the body by it.
    def gate(scoped: Caller, body: GateIn) -> GateAnswer:  # type: ignore[valid-type]
        """May these memories justify a sensitive action? The weakest source decides."""
        question: GateQuestion = body
        answer = scoped.may_justify(question.action, question.memory_ids)
        return GateAnswer.model_validate(answer.to_dict())

    router.add_api_route("/api/gate", gate, methods=["POST"], tags=["trust"], responses=ON_MEMORY)
    return router


__all__ = ["GateQuestion", "gate_model", "gate_router"]

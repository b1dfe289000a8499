"""Session checkpoints over MCP: three structured tools, and the raw envelope for UAIX peers.

A model cannot compute a JCS sha256 checksum, so ``checkpoint.create``,
``checkpoint.drift_audit`` and ``checkpoint.restore_brief`` take plain arguments; the server
builds the ``uai.intent.request.v1`` envelope for the caller (``trust.principal`` is the
caller's principal), seals it and hands it to the same UAIX handler as ``checkpoint.handle``
and ``POST /uaix``. Their output schemas are the shipped result schemas of
``troth.formats.uaix``; a refusal (``uai.error.v1``) is a tool error whose text is its
message and its UAIX code, e.g. ``… (checkpoint-not-found)``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from troth.adapters.mcp_tool import Runner, StrictTool, ToolSpec, failed, structured
from troth.core.records import principal_kind
from troth.formats.uaix import (
    CHECKPOINT_CREATE,
    DRIFT_AUDIT,
    ERROR_PROFILE,
    RESTORE_BRIEF,
    build_request,
    encode,
    load_schema,
)
from troth.service.scoped import ScopedMemory

CHECKPOINT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "checkpoint.create",
        "Save a session checkpoint",
        "Save a checkpoint of this session: its summary, the stable facts worth keeping, open"
        " tasks, unresolved questions and persona constraints. Each stable fact becomes a"
        " memory that waits for the person's approval like any agent write. Returns the"
        " checkpoint id (keep it for drift audits and restore briefs) and the memory each fact"
        " became.",
        read_only=False,
        idempotent=False,
    ),
    ToolSpec(
        "checkpoint.drift_audit",
        "Audit drift from a checkpoint",
        "Compare where a session stands now with an earlier checkpoint: which of its facts"
        " were dropped or contradicted, and a drift score from 0 (unchanged) to 1. Changes no"
        " memory.",
        read_only=True,
    ),
    ToolSpec(
        "checkpoint.restore_brief",
        "Restore brief from a checkpoint",
        "Compose a brief to resume a session from a checkpoint: its summary, its facts, open"
        " tasks and persona constraints, the person's current memories, and what is no longer"
        " known (facts since forgotten, superseded or stale). Changes no memory.",
        read_only=True,
    ),
    ToolSpec(
        "checkpoint.handle",
        "Answer a UAIX envelope",
        "For UAIX peers that build their own envelopes: answer a complete Spiralist UAIX"
        " checkpoint request envelope (JSON text carrying its JCS sha256 checksum) and return"
        " the response envelope. A refused envelope is a tool error whose text gives the"
        " reason and the UAIX code, followed by the uai.error.v1 envelope. Sending the same"
        " envelope again returns the first answer and writes nothing. Models should use"
        " checkpoint.create, checkpoint.drift_audit and checkpoint.restore_brief instead.",
        read_only=False,
    ),
)

SessionId = Annotated[
    str,
    Field(min_length=1, description="This conversation's id; the same for every call in it."),
]
CheckpointId = Annotated[
    str, Field(min_length=1, description="The checkpoint_id checkpoint.create returned.")
]
Texts = Annotated[list[str] | None, Field(description="One item per entry, in plain sentences.")]
OUTPUT_SCHEMAS = {
    "checkpoint.create": "checkpoint-result.schema.json",
    "checkpoint.drift_audit": "drift-audit-result.schema.json",
    "checkpoint.restore_brief": "restore-brief-result.schema.json",
}


def checkpoint_tools(run: Runner, name: Callable[[str], str]) -> list[StrictTool]:
    """The checkpoint tools, named by ``name`` (dotted or underscored)."""

    async def ask(
        tool: str,
        ctx: Context,
        intent: str,
        parameters: Mapping[str, Any],
        constraints: list[str],
        session_id: str,
        turn_id: str,
    ) -> CallToolResult:
        over_stdio = run.over_stdio(ctx)

        def act(s: ScopedMemory) -> CallToolResult:
            principal = s.grant.principal
            envelope = build_request(
                intent,
                parameters,
                principal=principal,
                principal_type=principal_kind(principal),
                message_id=f"mcp-{uuid.uuid4().hex}",
                now=datetime.now(UTC),
                conversation_id=session_id,
                turn_id=turn_id,
                constraints=constraints,
                auth_scheme="process" if over_stdio else "bearer",
                log_ref=f"troth:mcp/{tool}",
            )
            return _answer(s.handle_checkpoint(encode(envelope)), result_only=True)

        return await run(tool, ctx, act)

    async def checkpoint_create(
        session_id: SessionId,
        label: Annotated[str, Field(min_length=1, description="A short name for the checkpoint.")],
        summary: Annotated[str, Field(min_length=1, description="Where the session stands.")],
        ctx: Context,
        stable_facts: Annotated[
            list[str] | None,
            Field(
                description="Durable facts about the person, one sentence each; each becomes a"
                " proposed memory."
            ),
        ] = None,
        open_tasks: Texts = None,
        unresolved_questions: Texts = None,
        persona_constraints: Annotated[
            list[str] | None, Field(description="How the assistant must behave, e.g. its tone.")
        ] = None,
        turn_count: Annotated[
            int, Field(ge=1, description="How many turns the checkpoint covers.")
        ] = 1,
        first_turn_id: Annotated[
            str | None, Field(min_length=1, description="The first turn covered (default 1).")
        ] = None,
        last_turn_id: Annotated[
            str | None,
            Field(min_length=1, description="The last turn covered (default turn_count)."),
        ] = None,
        review_required: Annotated[
            bool,
            Field(description="Hold every fact for the person even where the policy would not."),
        ] = False,
    ) -> CallToolResult:
        last = last_turn_id or str(turn_count)
        parameters: dict[str, Any] = {
            "session_id": session_id,
            "checkpoint_label": label,
            "turn_window": {
                "start_turn_id": first_turn_id or "1",
                "end_turn_id": last,
                "turn_count": turn_count,
            },
            "summary": summary,
        }
        for key, value in (
            ("stable_facts", stable_facts),
            ("open_tasks", open_tasks),
            ("unresolved_questions", unresolved_questions),
            ("persona_constraints", persona_constraints),
        ):
            if value:
                parameters[key] = value
        constraints = ["human-review-required"] if review_required else []
        return await ask(
            "checkpoint.create", ctx, CHECKPOINT_CREATE, parameters, constraints, session_id, last
        )

    async def checkpoint_drift_audit(
        checkpoint_id: CheckpointId,
        session_id: SessionId,
        summary: Annotated[str, Field(min_length=1, description="Where the session stands now.")],
        facts: Annotated[
            list[str], Field(description="The facts that hold now, one sentence each.")
        ],
        ctx: Context,
        current_turn_id: Annotated[
            str, Field(min_length=1, description="The turn the session is at now.")
        ] = "current",
        open_tasks: Texts = None,
        unresolved_questions: Texts = None,
        score_only: Annotated[
            bool, Field(description="Return only the drift score, not the findings.")
        ] = False,
    ) -> CallToolResult:
        digest: dict[str, Any] = {"summary": summary, "facts": facts}
        if open_tasks:
            digest["open_tasks"] = open_tasks
        if unresolved_questions:
            digest["unresolved_questions"] = unresolved_questions
        parameters = {
            "session_id": session_id,
            "baseline_checkpoint_id": checkpoint_id,
            "current_turn_id": current_turn_id,
            "current_session_digest": digest,
        }
        constraints = ["return-drift-score-only"] if score_only else []
        return await ask(
            "checkpoint.drift_audit",
            ctx,
            DRIFT_AUDIT,
            parameters,
            constraints,
            session_id,
            current_turn_id,
        )

    async def checkpoint_restore_brief(
        checkpoint_id: CheckpointId,
        session_id: SessionId,
        ctx: Context,
        resume_turn_id: Annotated[
            str | None, Field(min_length=1, description="The turn the session resumes at.")
        ] = None,
        max_memories: Annotated[
            int, Field(ge=0, le=200, description="At most this many current memories.")
        ] = 50,
        identify_unknowns: Annotated[
            bool, Field(description="List what the checkpoint said that is no longer known.")
        ] = True,
        withhold_sensitive: Annotated[
            bool, Field(description="Leave sensitive memories out of the brief.")
        ] = True,
    ) -> CallToolResult:
        parameters: dict[str, Any] = {
            "session_id": session_id,
            "checkpoint_id": checkpoint_id,
            "max_memories": max_memories,
        }
        if resume_turn_id is not None:
            parameters["resume_turn_id"] = resume_turn_id
        constraints = []
        if identify_unknowns:
            constraints.append("brief-must-identify-unknowns")
        if withhold_sensitive:
            constraints.append("no-sensitive-data-expansion")
        return await ask(
            "checkpoint.restore_brief",
            ctx,
            RESTORE_BRIEF,
            parameters,
            constraints,
            session_id,
            resume_turn_id or "resume",
        )

    async def checkpoint_handle(
        ctx: Context,
        envelope: Annotated[
            str, Field(description="A UAIX checkpoint request envelope, as JSON text.")
        ],
    ) -> CallToolResult:
        def act(s: ScopedMemory) -> CallToolResult:
            return _answer(s.handle_checkpoint(envelope.encode("utf-8")), result_only=False)

        return await run("checkpoint.handle", ctx, act)

    functions: dict[str, Callable[..., Any]] = {
        "checkpoint.create": checkpoint_create,
        "checkpoint.drift_audit": checkpoint_drift_audit,
        "checkpoint.restore_brief": checkpoint_restore_brief,
        "checkpoint.handle": checkpoint_handle,
    }
    tools = []
    for spec in CHECKPOINT_TOOLS:
        tool = StrictTool.of(spec, functions[spec.name], name=name(spec.name))
        schema = OUTPUT_SCHEMAS.get(spec.name)
        tool.fn_metadata.output_schema = (
            _result_schema(schema) if schema else response_envelope_schema()
        )
        tools.append(tool)
    return tools


def _answer(answer: bytes, *, result_only: bool) -> CallToolResult:
    """A UAIX answer as a tool result: the result (or the envelope), or a tool error."""
    envelope = json.loads(answer)
    body = envelope.get("body", {})
    if envelope.get("profile") == ERROR_PROFILE:
        return failed(str(body.get("code")), str(body.get("message")), answer.decode("utf-8"))
    if result_only:
        return structured(body["result"])
    return CallToolResult(
        content=[TextContent(type="text", text=answer.decode("utf-8"))],
        structured_content=envelope,
    )


def _result_schema(name: str) -> dict[str, Any]:
    schema = load_schema(name)
    return {k: v for k, v in schema.items() if k not in ("$id", "$schema")}


def response_envelope_schema() -> dict[str, Any]:
    """The ``uai.intent.response.v1`` schema with every schema it refers to inlined.

    An MCP client validates structured content against the output schema alone, so the
    references by ``$id`` between the shipped schemas become local ``#/$defs/…`` ones.
    """
    documents = {
        load_schema(f)["$id"]: load_schema(f)
        for f in (
            "request.schema.json",
            "checkpoint-result.schema.json",
            "drift-audit-result.schema.json",
            "restore-brief-result.schema.json",
        )
    }
    defs: dict[str, Any] = {}

    def inline(value: Any) -> Any:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                base, _, pointer = ref.partition("#")
                key = (base.rsplit(":", 1)[-1] + pointer.replace("/", ".")).strip(".")
                if key not in defs:
                    target: Any = documents[base]
                    for part in filter(None, pointer.split("/")):
                        target = target[part]
                    defs[key] = {}  # reserved before recursing, in case of a cycle
                    defs[key] = inline(
                        {k: v for k, v in target.items() if k not in ("$id", "$schema")}
                    )
                return {**{k: v for k, v in value.items() if k != "$ref"}, "$ref": f"#/$defs/{key}"}
            return {k: inline(v) for k, v in value.items()}
        if isinstance(value, list):
            return [inline(v) for v in value]
        return value

    response = {k: v for k, v in load_schema("response.schema.json").items() if k != "$id"}
    bundled: dict[str, Any] = inline(response)
    bundled.pop("$schema", None)
    bundled["$defs"] = {**bundled.get("$defs", {}), **defs}
    return bundled

"""How troth's MCP tools are declared, and how their results and errors are worded.

:class:`ToolSpec` is one row of the tool table (name, title, the four behaviour hints and the
description an agent reads); :class:`StrictTool` is the MCP SDK's ``Tool`` with two changes an
agent developer sees: an argument the tool does not take is refused (``additionalProperties:
false`` in the published schema, ``extra="forbid"`` when called), and a call whose arguments do
not fit the schema gets one plain sentence naming each field and what is wrong with it, with
the stable code ``invalid_input`` — never a validation library's dump.

Every tool result is either structured content (and the same JSON as text) or ``isError: true``
with the text ``<sentence> (<code>)``; the codes are those of :mod:`troth.core.errors`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from troth.core.access import Grant
from troth.core.errors import AuthenticationError, TrothError
from troth.service.memory import Memory
from troth.service.scoped import ScopedMemory

LOG = logging.getLogger("troth.mcp")
GRANT_KEY = "troth.grant"
INVALID_INPUT = "invalid_input"
INTERNAL = "internal_error"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as hosts and agents see it before calling it.

    The hints are as the MCP specification defines them: ``read_only`` — it changes nothing;
    ``destructive`` — it may remove or replace what exists (not merely add); ``idempotent`` —
    calling it again with the same arguments changes nothing more. Every troth tool acts on the
    person's own ledger only, so none is open-world.
    """

    name: str
    title: str
    description: str
    read_only: bool
    destructive: bool = False
    idempotent: bool = True

    def annotations(self) -> ToolAnnotations:
        """The ``annotations`` member of the tool in ``tools/list``."""
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )


class StrictTool(Tool):
    """An SDK tool that refuses unknown arguments and words argument errors as sentences."""

    @classmethod
    def of(cls, spec: ToolSpec, fn: Any, *, name: str | None = None) -> StrictTool:
        """The tool for ``fn`` (its signature is the input schema) described by ``spec``."""
        tool = cast(
            StrictTool,
            cls.from_function(
                fn,
                name=name or spec.name,
                title=spec.title,
                description=spec.description,
                annotations=spec.annotations(),
                structured_output=True,
            ),
        )
        loose = tool.fn_metadata.arg_model
        config = ConfigDict(**{**loose.model_config, "extra": "forbid"})
        strict = cast(
            "type[ArgModelBase]",
            type(loose.__name__, (loose,), {"model_config": config, "__module__": __name__}),
        )
        tool.fn_metadata.arg_model = strict
        tool.parameters = strict.model_json_schema(by_alias=True)
        return tool

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        """Refuse arguments that do not fit the schema with a sentence; else run the tool."""
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as error:
            return failed(INVALID_INPUT, argument_problems(self.name, self.parameters, error))
        return await super().run(arguments, context, convert_result=convert_result)


def argument_problems(tool: str, schema: dict[str, Any], error: ValidationError) -> str:
    """One sentence for every way ``error`` says the arguments miss the schema."""
    known = sorted(schema.get("properties", {}))
    problems: list[str] = []
    for item in error.errors(include_url=False, include_input=False):
        field = ".".join(str(part) for part in item["loc"]) or "the arguments"
        if item["type"] == "extra_forbidden":
            takes = ", ".join(known) if known else "no arguments"
            problems.append(f"{field} is not an argument of {tool} (it takes {takes})")
        elif item["type"] == "missing":
            problems.append(f"{field} is required")
        else:
            message = str(item["msg"])
            problems.append(f"{field}: {message[:1].lower()}{message[1:]}")
    return f"{tool} cannot run with these arguments: {'; '.join(problems)}"


def ok(model: BaseModel) -> CallToolResult:
    """A structured result, and the same JSON as text for clients that read only text."""
    return structured(model.model_dump(mode="json"))


def structured(data: dict[str, Any]) -> CallToolResult:
    """A structured result from JSON data."""
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def failed(code: str, message: str, *extra: str) -> CallToolResult:
    """A tool error: ``<message> (<code>)``, then any further text blocks."""
    blocks: list[ContentBlock] = [TextContent(type="text", text=f"{message} ({code})")]
    blocks += [TextContent(type="text", text=text) for text in extra]
    return CallToolResult(content=blocks, is_error=True)


def refused(error: TrothError) -> CallToolResult:
    """A domain error as a tool error the agent can act on."""
    return failed(error.code, error.message)


def crashed(tool: str) -> CallToolResult:
    """What an unexpected failure tells the caller; the details stay in the server log."""
    LOG.exception("MCP tool %s failed", tool)
    return failed(
        INTERNAL,
        f"{tool} failed inside the server; the server log has the details, and a retry may work",
    )


def grant_of(ctx: Context, stdio_grant: Grant | None) -> Grant:
    """The caller's grant: the HTTP request's token, or the stdio process's grant."""
    request = ctx.request_context.request
    if request is None:
        if stdio_grant is None:
            raise AuthenticationError("this MCP server was started without a principal")
        return stdio_grant
    grant = getattr(request, "scope", {}).get(GRANT_KEY)
    if not isinstance(grant, Grant):
        raise AuthenticationError("a valid bearer token is required for MCP over HTTP")
    return grant


class Runner:
    """Runs one tool call as its caller: the grant, a worker thread, the result or error."""

    def __init__(self, memory: Memory, stdio_grant: Grant | None) -> None:
        self.memory = memory
        self.stdio_grant = stdio_grant

    def scoped(self, ctx: Context) -> ScopedMemory:
        """The facade seen through the caller's grant."""
        return ScopedMemory(self.memory, grant_of(ctx, self.stdio_grant))

    def over_stdio(self, ctx: Context) -> bool:
        """Whether the call came over stdio (the process's grant) rather than HTTP."""
        return ctx.request_context.request is None

    async def __call__(
        self,
        tool: str,
        ctx: Context,
        action: Callable[[ScopedMemory], BaseModel | CallToolResult],
        limiter: anyio.CapacityLimiter | None = None,
    ) -> CallToolResult:
        """``action`` on the caller's view in a worker thread (after ``limiter``)."""
        try:
            scoped = self.scoped(ctx)
            result = await anyio.to_thread.run_sync(action, scoped, limiter=limiter)
        except TrothError as error:
            return refused(error)
        except Exception:
            return crashed(tool)
        return result if isinstance(result, CallToolResult) else ok(result)


def unknown_tools(known: Collection[str]) -> ServerMiddleware[Any]:
    """Middleware answering a call of a tool that does not exist with a sentence and a code.

    (The SDK's own answer, "Unknown tool: x", names no code and no way forward.)
    """
    names = ", ".join(known)

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and ctx.params is not None:
            name = ctx.params.get("name")
            if isinstance(name, str) and name not in known:
                return failed(
                    "not_found", f"there is no tool {name!r} on this server; the tools are {names}"
                )
        return await call_next(ctx)

    return middleware

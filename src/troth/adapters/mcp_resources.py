"""MCP resources and prompts: each memory as its PCP page, a context brief, and a prompt.

Resources are templates, read as the caller (the same grant as the tools):

- ``troth://memory/{id}`` — one memory as its PCP page (markdown with YAML frontmatter), the
  same bytes a PCP export holds for it. A tombstone (forgotten, expired, no_store, redacted)
  has no page and reads as "not found".
- ``troth://brief{?task}`` — the context brief of ``context.brief`` as plain text; without a
  task, the most recent memories.

The prompt ``propose_memories`` asks the assistant to go through the conversation and propose
what is worth remembering with ``memory.write`` / ``memory.update``.

A read the caller may not make is a JSON-RPC error whose message is the sentence and code of
the refusal: -32002 (resource not found) when there is no such memory, -32602 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import Field

from troth.adapters.mcp_tool import Runner
from troth.core.access import not_found
from troth.core.errors import NotFoundError, TrothError
from troth.formats import pcp
from troth.service.scoped import ScopedMemory, compose_brief

#: The JSON-RPC code the MCP specification gives "resource not found".
RESOURCE_NOT_FOUND = -32002
#: Statuses whose memory still has its text, and so a page.
WITH_PAGE = ("proposed", "active", "rejected")
BRIEF_CHARS = 4000


def _page(scoped: ScopedMemory, memory_id: str) -> str:
    memory = scoped.read(memory_id)
    if memory.status not in WITH_PAGE or memory.redacted:
        raise NotFoundError(
            f"memory {memory_id} is {'redacted' if memory.redacted else memory.status}: it"
            " has no page any more; memory.read shows its audit trail",
            id=memory_id,
        )
    return pcp.encode_page(pcp.memory_to_page(memory)).decode("utf-8")


def _brief(scoped: ScopedMemory, task: str) -> str:
    if task.strip():
        return scoped.brief(task, budget_chars=BRIEF_CHARS).text
    items, _ = scoped.memories(statuses=("active",), limit=50)
    # The same quoted lines as context.brief: memories are data, never instructions.
    return compose_brief([m for m in items if m.retrievable], BRIEF_CHARS).text


def add_resources(server: MCPServer, run: Runner) -> None:
    """Register the memory page and brief resource templates on ``server``."""

    async def read(ctx: Context, action: Callable[[ScopedMemory], str]) -> str:
        try:
            scoped = run.scoped(ctx)
            return await anyio.to_thread.run_sync(action, scoped)
        except NotFoundError as error:
            raise MCPError(RESOURCE_NOT_FOUND, f"{error.message} ({error.code})") from None
        except TrothError as error:
            raise MCPError(INVALID_PARAMS, f"{error.message} ({error.code})") from None

    @server.resource(
        "troth://memory/{id}",
        name="memory",
        title="A memory (PCP page)",
        description="One of the person's memories as its PCP page: YAML frontmatter (title,"
        " source, review state, validity) and the memory's text.",
        mime_type="text/markdown",
    )
    async def memory_page(id: str, ctx: Context) -> str:
        if not id.startswith(("m_", "px-")):
            raise MCPError(RESOURCE_NOT_FOUND, f"{not_found(id).message} ({NotFoundError.code})")
        return await read(ctx, lambda s: _page(s, id))

    @server.resource(
        "troth://brief{?task}",
        name="brief",
        title="Context brief",
        description="The person's memories most relevant to a task (troth://brief?task=…), one"
        " line each; without a task, the most recent ones.",
        mime_type="text/plain",
    )
    async def brief(ctx: Context, task: str = "") -> str:
        return await read(ctx, lambda s: _brief(s, task))


PROPOSE = """\
Go through our conversation so far and propose what is worth keeping in my long-term memory \
(troth).{focus}

1. Look for durable things about me: facts, preferences, standing instructions, and context \
that will still matter in later conversations. Skip small talk, one-off details and anything \
you only guessed.
2. Before proposing one, call memory.search with its key words: if a memory already says it, \
skip it; if one says something now wrong, propose the correction with memory.update.
3. Propose each new one with memory.write: one self-contained sentence in the third person \
("Alice prefers …"), the right kind (fact, preference, instruction or context) and a short \
reason saying where in our conversation it came from.
4. Never propose passwords, keys, card numbers or other secrets, nor anything about a child.
5. Finish with a short list of what you proposed. Proposals wait for my approval on the \
review page; memory.proposals lists the ones still waiting.
"""


def add_prompts(server: MCPServer) -> None:
    """Register the ``propose_memories`` prompt on ``server``."""

    @server.prompt(
        name="propose_memories",
        title="Propose memories from this conversation",
        description="Asks the assistant to go through the conversation and propose the durable"
        " facts and preferences in it as memories, checking for duplicates and corrections"
        " first. Proposals wait for the person's approval.",
    )
    def propose_memories(
        focus: Annotated[
            str, Field(description="Optional: what to look for, e.g. travel preferences.")
        ] = "",
    ) -> str:
        extra = f" Pay most attention to: {focus.strip()}." if focus.strip() else ""
        return PROPOSE.format(focus=extra)

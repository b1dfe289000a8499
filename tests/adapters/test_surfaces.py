"""One behaviour per verb on every surface: the library, the CLI, the HTTP API and MCP.

The same story runs on each surface against a fresh home built by the same composition
root (``config.build_memory``): the person remembers something, an agent acting for them
remembers something (no channel named), the person approves it, both recall, read and
list, the person forgets the first and exports the ledger. Each surface's answers are
brought to one shape, and then the answers, the ledger's events (kind, actor, on whose
behalf, channel) and the exported lines must be the same on every surface.

MCP has no approve or export tool (review belongs to the person's surfaces), so on MCP
those two steps are taken through the library, and only the other verbs speak for MCP.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Protocol

import anyio
from mcp import Client
from starlette.testclient import TestClient

from tests.adapters.conftest import ALICE, as_json, auth, invoke
from tests.bundles import export_member
from troth.adapters.mcp import create_mcp
from troth.adapters.server import ServerOptions, create_app
from troth.config import Settings, build_memory
from troth.core.access import AGENT_DEFAULT_SCOPES, HUMAN_DEFAULT_SCOPES, Grant
from troth.formats import personaxis
from troth.service.memory import Memory

AGENT = "agent:assistant"
MINE = "I drink green tea every morning"
INFERRED = "Alice is training for a marathon in the spring"
SURFACES = ("library", "cli", "http", "mcp")
ID = re.compile(r"\bm_[0-9a-f]{21}\b")


class Surface(Protocol):
    """The verbs a story needs, each answering in one shape across surfaces."""

    memory: Memory

    def remember(self, text: str, *, agent: bool) -> dict[str, Any]: ...
    def recall(self, text: str) -> list[str]: ...
    def read(self, memory_id: str) -> dict[str, Any]: ...
    def listing(self) -> list[tuple[str, str]]: ...
    def forget(self, memory_id: str) -> str: ...
    def approve(self, memory_id: str) -> str: ...
    def export(self) -> bytes: ...


def shape(record: dict[str, Any]) -> dict[str, Any]:
    """What every surface must agree on about one memory."""
    return {k: record.get(k) for k in ("content", "status", "channel", "actor", "on_behalf_of")}


class Library:
    def __init__(self, memory: Memory, home: Path) -> None:
        self.memory = memory
        self.agent = build_memory(Settings.load(home=home, principal=AGENT))

    def remember(self, text: str, *, agent: bool) -> dict[str, Any]:
        if agent:
            done = self.agent.remember(text, owner=ALICE, on_behalf_of=ALICE)
        else:
            done = self.memory.remember(text)
        return {"status": done.status, "id": done.id}

    def recall(self, text: str) -> list[str]:
        return [hit.memory.content for hit in self.memory.recall(text)]

    def read(self, memory_id: str) -> dict[str, Any]:
        return shape(self.memory.get(memory_id).to_dict())

    def listing(self) -> list[tuple[str, str]]:
        return [(m.content, m.status) for m in self.memory.memories()]

    def forget(self, memory_id: str) -> str:
        return self.memory.forget(memory_id).status

    def approve(self, memory_id: str) -> str:
        return self.memory.approve(memory_id).status

    def export(self) -> bytes:
        return self.memory.export("personaxis")[0]

    def close(self) -> None:
        self.agent.close()


class Cli:
    def __init__(self, memory: Memory, home: Path) -> None:
        self.memory = memory
        self.home = home

    def run(self, *args: str, who: str = ALICE) -> dict[str, Any]:
        return as_json(invoke(self.home, *args, "--json", who=who))

    def remember(self, text: str, *, agent: bool) -> dict[str, Any]:
        if agent:
            done = self.run("remember", text, "--owner", ALICE, "--as-agent-for", ALICE, who=AGENT)
        else:
            done = self.run("remember", text)
        return {"status": done["status"], "id": done["id"]}

    def recall(self, text: str) -> list[str]:
        return [hit["content"] for hit in self.run("recall", text)["hits"]]

    def read(self, memory_id: str) -> dict[str, Any]:
        return shape(self.run("show", memory_id))

    def listing(self) -> list[tuple[str, str]]:
        return [(m["content"], m["status"]) for m in self.run("list")["memories"]]

    def forget(self, memory_id: str) -> str:
        return str(self.run("forget", memory_id)["status"])

    def approve(self, memory_id: str) -> str:
        return str(self.run("approve", memory_id)["status"])

    def export(self) -> bytes:
        out = self.home.parent / "cli-export.jsonl"
        self.run("export", "--format", "personaxis", "-o", str(out))
        return out.read_bytes()

    def close(self) -> None:
        pass


class Http:
    def __init__(self, memory: Memory, home: Path) -> None:
        self.memory = memory
        tokens = memory.tokens
        self.alice = auth(tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token)
        self.agent = auth(tokens.create(AGENT, AGENT_DEFAULT_SCOPES, on_behalf_of=ALICE).token)
        app = create_app(memory, tokens, ServerOptions(allowed_hosts=("testserver",)))
        self.client = TestClient(app)
        self.client.__enter__()

    def call(self, method: str, url: str, **kwargs: Any) -> Any:
        headers = kwargs.pop("headers", self.alice)
        answer = self.client.request(method, url, headers=headers, **kwargs)
        assert answer.status_code < 300, answer.text
        return answer.json() if "json" in answer.headers.get("content-type", "") else answer

    def remember(self, text: str, *, agent: bool) -> dict[str, Any]:
        headers = self.agent if agent else self.alice
        done = self.call("POST", "/api/memories", json={"content": text}, headers=headers)
        return {"status": done["status"], "id": done["id"]}

    def recall(self, text: str) -> list[str]:
        return [
            hit["content"] for hit in self.call("GET", "/api/search", params={"q": text})["hits"]
        ]

    def read(self, memory_id: str) -> dict[str, Any]:
        return shape(self.call("GET", f"/api/memories/{memory_id}"))

    def listing(self) -> list[tuple[str, str]]:
        found = self.call("GET", "/api/memories")["memories"]
        return [(m["content"], m["status"]) for m in found]

    def forget(self, memory_id: str) -> str:
        return str(self.call("POST", f"/api/memories/{memory_id}/forget", json={})["status"])

    def approve(self, memory_id: str) -> str:
        return str(self.call("POST", f"/api/memories/{memory_id}/approve", json={})["status"])

    def export(self) -> bytes:
        answer = self.client.get("/api/export", params={"format": "personaxis"}, headers=self.alice)
        assert answer.status_code == 200, answer.text
        return export_member(answer.content)  # the log, out of the bundle carrying its proof

    def close(self) -> None:
        self.client.__exit__(None, None, None)


class Mcp:
    def __init__(self, memory: Memory, home: Path) -> None:
        self.memory = memory
        self.library = Library(memory, home)
        self.alice = Grant(ALICE, frozenset(HUMAN_DEFAULT_SCOPES))
        self.agent = Grant(AGENT, frozenset(AGENT_DEFAULT_SCOPES), ALICE)

    def tool(self, name: str, arguments: dict[str, Any], *, grant: Grant | None = None) -> Any:
        server = create_mcp(self.memory, stdio_grant=grant or self.alice)

        async def main() -> Any:
            async with Client(server) as client:
                result = await client.call_tool(name, arguments)
                text = result.content[0].text if result.content else ""
                assert not result.is_error, text
                return result.structured_content or json.loads(text)

        return anyio.run(main)

    def remember(self, text: str, *, agent: bool) -> dict[str, Any]:
        grant = self.agent if agent else self.alice
        done = self.tool("memory.write", {"content": text}, grant=grant)
        return {"status": done["status"], "id": done["id"]}

    def recall(self, text: str) -> list[str]:
        return [hit["content"] for hit in self.tool("memory.search", {"query": text})["hits"]]

    def read(self, memory_id: str) -> dict[str, Any]:
        return shape(self.tool("memory.read", {"id": memory_id})["memory"])

    def listing(self) -> list[tuple[str, str]]:
        found = self.tool("memory.list", {})["memories"]
        return [(m["content"], m["status"]) for m in found]

    def forget(self, memory_id: str) -> str:
        return str(self.tool("memory.forget", {"id": memory_id})["status"])

    def approve(self, memory_id: str) -> str:  # no MCP tool: the person's own surface
        return self.library.approve(memory_id)

    def export(self) -> bytes:  # no MCP tool: the person's own surface
        return self.library.export()

    def close(self) -> None:
        self.library.close()


KINDS = {"library": Library, "cli": Cli, "http": Http, "mcp": Mcp}


def story(surface: Surface) -> dict[str, Any]:
    """The same verbs in the same order; every answer in its surface-neutral shape."""
    mine = surface.remember(MINE, agent=False)
    inferred = surface.remember(INFERRED, agent=True)
    out: dict[str, Any] = {
        "remembered": [mine["status"], inferred["status"]],
        "proposed": surface.read(inferred["id"]),
        "approved": surface.approve(inferred["id"]),
        "recalled": surface.recall("marathon training in spring"),
        "read": [surface.read(mine["id"]), surface.read(inferred["id"])],
        "listed": surface.listing(),
        "forgotten": surface.forget(mine["id"]),
        "recalled after forget": surface.recall("green tea morning"),
    }
    exported = personaxis.decode(surface.export())
    out["exported"] = [(ID.sub("m_…", e.content), e.source) for e in exported]
    out["events"] = [
        (event.event, event.actor, event.on_behalf_of, row.entry.source)
        for row in surface.memory.log(ALICE)
        if (event := row.decode()) is not None
    ]
    return out


def run_story(name: str, home: Path) -> dict[str, Any]:
    """The story on one surface, over a fresh home built by the one composition root."""
    memory = build_memory(Settings.load(home=home, principal=ALICE))
    surface = KINDS[name](memory, home)
    try:
        return story(surface)
    finally:
        surface.close()
        memory.close()


EXPECTED_EVENTS = [
    ("propose", ALICE, None, "user"),
    ("propose", AGENT, ALICE, "synthesis"),  # the one channel rule: no channel named
    ("approve", ALICE, None, "user"),
    ("forget", ALICE, None, "user"),
    ("export", ALICE, None, "user"),  # every export is audited
]


def test_each_verb_answers_alike_on_every_surface_with_the_same_events_and_channel(
    tmp_path: Path,
) -> None:
    results = {name: run_story(name, tmp_path / name) for name in SURFACES}
    for name, result in results.items():
        assert result["remembered"] == ["active", "proposed"], name
        assert result["proposed"] == {
            "content": INFERRED,
            "status": "proposed",
            "channel": "synthesis",
            "actor": AGENT,
            "on_behalf_of": ALICE,
        }, name
        assert result["approved"] == "active", name
        assert result["recalled"][0] == INFERRED, name
        assert result["forgotten"] == "forgotten", name
        assert MINE not in result["recalled after forget"], name
        assert result["events"] == EXPECTED_EVENTS, name
        # The export holds everything before its own event, which it never contains.
        assert len(result["exported"]) == len(EXPECTED_EVENTS) - 1, name
    for name in SURFACES[1:]:
        assert results[name] == results["library"], name

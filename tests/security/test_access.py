"""One access authority (issue 15, points 1 and 3): what a caller may not read never leaves
the service, the library holds its principal to its own ledger, and channels follow
credentials — on both backends, through the library, the CLI, HTTP and MCP.

Each test here failed on the code before the authority (8d88f39) and passes after.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

from tests.bundles import unpacked_text
from tests.conftest import StepClock, facade
from troth.adapters.cli import cli
from troth.adapters.mcp import create_mcp
from troth.adapters.server import ServerOptions, create_app
from troth.core.access import HUMAN_DEFAULT_SCOPES, library_grant
from troth.core.errors import InvalidInputError, NotFoundError, PolicyDeniedError
from troth.service.memory import Memory
from troth.service.recall import Query
from troth.service.scoped import ScopedMemory
from troth.storage.base import Store

ALICE, BOB, AGENT = "human:alice", "human:bob", "agent:assistant"
HEALTH = "Alice takes lisinopril for her blood pressure every morning"
PLAIN = "Alice likes green tea in the afternoon"
BOBS = "Bob keeps the spare key under the blue flowerpot"


@dataclass
class Served:
    """A store served over HTTP, with tokens for the person and for narrower callers."""

    memory: Memory
    client: TestClient
    alice: str
    exporter: str  # alice's own token with export:read but not memory.sensitive:read
    reader: str  # an agent of alice's that may read
    sensitive_id: str
    plain_id: str


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def served(any_store: Store) -> Iterator[Served]:
    memory = facade(any_store, clock=StepClock())
    held = memory.remember(HEALTH, topic="health")
    assert held.status == "proposed"  # sensitive topics wait for the person
    memory.approve(held.id)
    plain = memory.remember(PLAIN)
    tokens = memory.tokens
    app = create_app(memory, tokens, ServerOptions(allowed_hosts=("testserver",)))
    with TestClient(app) as client:
        yield Served(
            memory=memory,
            client=client,
            alice=tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token,
            exporter=tokens.create(ALICE, ["memory:read", "export:read"]).token,
            reader=tokens.create(AGENT, ["memory:read"], on_behalf_of=ALICE).token,
            sensitive_id=held.id,
            plain_id=plain.id,
        )


# -- what a caller may not read never leaves the service -----------------------------------


@pytest.mark.parametrize("fmt", ["hux", "personaxis"])
def test_an_export_never_carries_a_sensitive_memory_the_token_may_not_read(
    served: Served, fmt: str
) -> None:
    head = served.memory.store.tip(ALICE)
    one = served.client.get(f"/api/memories/{served.sensitive_id}", headers=bearer(served.exporter))
    assert one.status_code == 404
    reply = served.client.get(
        "/api/export", params={"format": fmt}, headers=bearer(served.exporter)
    )
    assert reply.status_code == 403
    assert "lisinopril" not in reply.text
    body = reply.json()
    assert body["error"] == "denied"
    assert "memory.sensitive:read" in body["message"]
    assert served.memory.store.tip(ALICE) == head  # a refused export is not audited as done
    full = served.client.get("/api/export", params={"format": fmt}, headers=bearer(served.alice))
    assert full.status_code == 200
    assert "lisinopril" in unpacked_text(full.content)


@pytest.mark.parametrize("token", ["exporter", "reader"])
def test_the_audit_shows_no_id_or_event_of_a_sensitive_memory(served: Served, token: str) -> None:
    secret = getattr(served, token)
    events = served.client.get("/api/audit", headers=bearer(secret))
    assert events.status_code == 200
    assert served.sensitive_id not in events.text
    assert served.plain_id in events.text
    trail = served.client.get(
        "/api/audit", params={"memory_id": served.sensitive_id}, headers=bearer(secret)
    )
    assert trail.status_code == 404
    whole = served.client.get("/api/audit", headers=bearer(served.alice))
    assert served.sensitive_id in whole.text


def test_search_list_brief_and_read_leave_out_what_the_token_may_not_read(served: Served) -> None:
    h = bearer(served.reader)
    asked = {"q": "lisinopril blood pressure"}
    assert "lisinopril" not in served.client.get("/api/search", params=asked, headers=h).text
    assert "lisinopril" not in served.client.get("/api/memories", headers=h).text
    brief = served.client.get("/api/brief", params={"task": "blood pressure"}, headers=h)
    assert brief.status_code == 200
    assert "lisinopril" not in brief.text
    assert served.client.get(f"/api/memories/{served.sensitive_id}", headers=h).status_code == 404
    mine = bearer(served.alice)
    assert "lisinopril" in served.client.get("/api/search", params=asked, headers=mine).text


def test_mcp_audit_and_read_hide_a_sensitive_memory_from_an_agent(served: Served) -> None:
    grant = served.memory.tokens.authenticate(served.reader)

    async def calls() -> tuple[str, Any]:
        async with Client(create_mcp(served.memory, stdio_grant=grant)) as client:
            audit = await client.call_tool("audit.list", {})
            read = await client.call_tool("memory.read", {"id": served.sensitive_id})
            return json.dumps(audit.structured_content), read

    audit, read = anyio.run(calls)
    assert served.sensitive_id not in audit
    assert read.is_error
    assert "lisinopril" not in json.dumps([block.model_dump() for block in read.content])


# -- the library and the CLI hold a principal to its own ledger ----------------------------


def test_the_library_holds_a_person_to_their_own_ledger(any_store: Store) -> None:
    bob = facade(any_store, principal=BOB)
    bobs = bob.remember(BOBS)
    alice = facade(any_store, principal=ALICE)
    head = any_store.tip(BOB)
    for read in (
        lambda: alice.get(bobs.id),
        lambda: alice.get(bobs.id, owner=BOB),
        lambda: alice.forget(bobs.id),
        lambda: alice.hide(bobs.id),
        lambda: alice.redact(bobs.id, reason="mine now"),
        lambda: alice.edit(bobs.id, "Bob keeps no key"),
        lambda: alice.may_justify("file_write", [bobs.id]),
    ):
        with pytest.raises(NotFoundError) as refused:
            read()
        assert "no memory" in refused.value.message
    for owned in (
        lambda: alice.memories(BOB),
        lambda: alice.recall(Query(text="spare key", owner=BOB)),
        lambda: list(alice.log(BOB)),
        lambda: alice.export("hux", owner=BOB),
        lambda: alice.remember("Bob owes Alice ten euros", owner=BOB),
    ):
        with pytest.raises(PolicyDeniedError) as denied:
            owned()
        assert "human:alice acts on human:alice's ledger only" in denied.value.message
    assert any_store.tip(BOB) == head
    assert bob.get(bobs.id).content == BOBS


def test_an_agent_of_the_library_reads_no_sensitive_memory_and_exports_nothing(
    any_store: Store,
) -> None:
    alice = facade(any_store)
    held = alice.remember(HEALTH, topic="health")
    agent = facade(any_store, principal=AGENT)
    with pytest.raises(NotFoundError):
        agent.get(held.id, owner=ALICE)
    assert held.id not in [m.id for m in agent.memories(ALICE)]
    with pytest.raises(PolicyDeniedError, match="export:read"):
        agent.export("hux", owner=ALICE)
    with pytest.raises(InvalidInputError, match="say whose memory"):
        agent.get(held.id)


def test_the_cli_shows_no_one_elses_memory(
    backend: str, home: Path, request: pytest.FixtureRequest
) -> None:
    env = {"TROTH_HOME": str(home), "TROTH_WITNESS": "off"}
    if backend == "postgres":
        env["TROTH_DATABASE_URL"] = request.getfixturevalue("pg_url")
    runner = CliRunner()

    def troth(who: str, *args: str) -> Any:
        return runner.invoke(cli, ["--as", who, *args], env=env, catch_exceptions=False)

    made = troth(BOB, "remember", BOBS, "--json")
    assert made.exit_code == 0, made.output
    bobs = json.loads(made.output)["id"]
    for args in (["show", bobs], ["show", bobs, "--owner", BOB], ["forget", bobs]):
        refused = troth(ALICE, *args)
        assert refused.exit_code == 1, refused.output
        assert "no memory" in refused.output
        assert "flowerpot" not in refused.output
    listed = troth(ALICE, "list", "--owner", BOB)
    assert listed.exit_code == 2
    assert "flowerpot" not in listed.output
    assert "flowerpot" in troth(BOB, "show", bobs).output


# -- one place decides: a new verb cannot bypass it ----------------------------------------

#: Verbs that name no memory's text and work store-wide as the installation's maintenance
#: (docs/api.md, "Access"); every other verb naming a ledger or a memory asks the authority.
MAINTENANCE = {"sweep", "verify", "rebuild", "reindex", "reanchor", "embed_copied", "migrate"}
NAMES_A_LEDGER = {"memory_id", "memory_ids", "owner", "query"}


def _calls_authority(method: Any) -> bool:
    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    return any(
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr in ("access", "as_actor")
        for node in ast.walk(tree)
    )


def test_every_verb_of_the_facade_that_names_a_ledger_or_a_memory_asks_the_authority() -> None:
    missing = []
    for name, method in inspect.getmembers(Memory, inspect.isfunction):
        if name.startswith("_") or name in MAINTENANCE:
            continue
        params = set(inspect.signature(method).parameters)
        if params & NAMES_A_LEDGER and not _calls_authority(method):
            missing.append(name)
    assert missing == [], f"verbs that bypass the access authority: {missing}"


def test_the_scoped_view_reaches_the_store_only_through_the_facade() -> None:
    source = inspect.getsource(ScopedMemory)
    assert "acting_as(grant)" in source
    for reach_around in (".store", ".parts", "store."):
        assert reach_around not in source, reach_around


def test_a_library_grant_reaches_what_its_word_says() -> None:
    assert library_grant(ALICE).reaches(ALICE)
    assert not library_grant(ALICE).reaches(BOB)
    assert library_grant(AGENT).reaches(BOB)
    assert not library_grant(AGENT).sees_sensitive
    assert library_grant("service:backup").reaches("org:acme")


# -- channels follow credentials -----------------------------------------------------------


def test_an_agent_can_never_claim_the_internal_channel(served: Served, any_store: Store) -> None:
    head = any_store.tip(ALICE)
    agent = served.memory.tokens.create(AGENT, ["memory:read", "memory:write"], on_behalf_of=ALICE)
    claimed = served.client.post(
        "/api/memories",
        json={"content": "Alice wants the deploy key uploaded", "channel": "internal"},
        headers=bearer(agent.token),
    )
    assert claimed.status_code == 403
    assert "stronger internal channel" in claimed.json()["message"]
    with pytest.raises(PolicyDeniedError, match="may not write through the internal channel"):
        served.memory.remember("x", actor=AGENT, owner=ALICE, channel="internal")
    with pytest.raises(InvalidInputError, match="not 'internal'"):
        served.memory.tokens.create(AGENT, ["memory:write"], on_behalf_of=ALICE, channel="internal")
    assert any_store.tip(ALICE) == head

    async def over_mcp() -> Any:
        grant = served.memory.tokens.authenticate(agent.token)
        async with Client(create_mcp(served.memory, stdio_grant=grant)) as client:
            return await client.call_tool("memory.write", {"content": "y", "channel": "internal"})

    assert anyio.run(over_mcp).is_error
    assert any_store.tip(ALICE) == head


def test_a_tokens_channel_is_fixed_when_it_is_made(served: Served, any_store: Store) -> None:
    relay = served.memory.tokens.create(
        AGENT, ["memory:read", "memory:write"], on_behalf_of=ALICE, channel="tool"
    )
    assert served.memory.tokens.records(AGENT)[-1].channel == "tool"
    wrote = served.client.post(
        "/api/memories",
        json={"content": "The weather service says rain"},
        headers=bearer(relay.token),
    )
    assert wrote.status_code == 201
    assert served.memory.get(wrote.json()["id"]).channel == "tool"
    stronger = served.client.post(
        "/api/memories",
        json={"content": "Alice said so herself", "channel": "user"},
        headers=bearer(relay.token),
    )
    assert stronger.status_code == 403
    # A person's own token writes through user, and may name a weaker channel.
    weaker = served.client.post(
        "/api/memories",
        json={"content": "The calendar tool says Tuesday", "channel": "tool"},
        headers=bearer(served.alice),
    )
    assert weaker.status_code == 201
    assert served.memory.get(weaker.json()["id"]).channel == "tool"


def test_the_policys_sentence_for_a_person_writing_for_another_never_offers_user(
    any_store: Store,
) -> None:
    alice = facade(any_store)
    with pytest.raises(PolicyDeniedError) as wrong:
        alice.policy.check_channel(actor=BOB, owner=ALICE, channel="user")
    offered = wrong.value.message.rsplit("may use ", 1)[1]
    assert "user" not in offered.split(", ")
    assert "internal" in offered


# -- destructive acts by agents wait for the person ----------------------------------------


def test_an_agents_forget_in_the_library_is_a_request_the_person_approves(
    any_store: Store,
) -> None:
    alice = facade(any_store, clock=StepClock())
    kept = alice.remember(PLAIN)
    request = alice.forget(
        kept.id, actor=AGENT, owner=ALICE, reason="she said she stopped drinking tea"
    )
    assert request.status == "proposed"
    assert request.id != kept.id
    assert PLAIN not in request.content
    assert alice.get(kept.id).status == "active"
    assert [h.memory.id for h in alice.recall("green tea")] == [kept.id]
    done = alice.approve(request.id)
    assert done.status == "active"
    assert not done.retrievable  # the request itself is never served
    gone = alice.get(kept.id)
    assert gone.status == "forgotten"
    assert gone.audit[-1].actor == ALICE
    assert request.id in (gone.audit[-1].note or "")
    assert alice.recall("green tea") == []
    assert alice.verify(ALICE)[0].ok


def test_an_agents_redact_is_a_request_and_a_rejected_one_changes_nothing(
    any_store: Store,
) -> None:
    alice = facade(any_store, clock=StepClock())
    kept = alice.remember(PLAIN)
    request = alice.redact(kept.id, actor=AGENT, owner=ALICE, reason="erase it")
    assert request.status == "proposed"
    alice.reject(request.id)
    assert alice.get(kept.id).content == PLAIN
    again = alice.redact(kept.id, actor=AGENT, owner=ALICE, reason="erase it now")
    alice.approve(again.id)
    erased = alice.get(kept.id)
    assert erased.redacted
    assert erased.content == ""
    assert alice.verify(ALICE)[0].ok


def test_the_person_forgets_at_once_and_the_policy_file_can_let_an_agent(
    any_store: Store,
) -> None:
    from troth.config import default_policy_document, merge
    from troth.core.policy import Policy

    alice = facade(any_store, clock=StepClock())
    own = alice.remember(PLAIN)
    assert alice.forget(own.id).status == "forgotten"
    trusting = Policy.from_document(
        merge(default_policy_document(), {"destructive": {"at_once": ["self", "agent"]}})
    )
    lenient = facade(any_store, clock=StepClock(), policy=trusting)
    other = lenient.remember("Alice parks on level two")
    assert lenient.forget(other.id, actor=AGENT, owner=ALICE).status == "forgotten"


def test_an_agents_forget_over_http_and_mcp_waits_for_the_person(served: Served) -> None:
    agent = served.memory.tokens.create(AGENT, ["memory:read", "memory:write"], on_behalf_of=ALICE)
    asked = served.client.post(
        f"/api/memories/{served.plain_id}/forget", json={}, headers=bearer(agent.token)
    )
    assert asked.status_code == 200
    request = asked.json()
    assert request["status"] == "proposed"
    assert served.memory.get(served.plain_id).status == "active"
    grant = served.memory.tokens.authenticate(agent.token)

    async def over_mcp() -> Any:
        async with Client(create_mcp(served.memory, stdio_grant=grant)) as client:
            return await client.call_tool("memory.forget", {"id": served.plain_id})

    answer = anyio.run(over_mcp)
    assert not answer.is_error
    assert answer.structured_content["status"] == "proposed"
    assert served.memory.get(served.plain_id).status == "active"
    # The agent cannot approve its own request; the person does, through the review flow.
    refused = served.client.post(
        f"/api/memories/{request['id']}/approve", json={}, headers=bearer(agent.token)
    )
    assert refused.status_code == 403
    approved = served.client.post(
        f"/api/memories/{request['id']}/approve", json={}, headers=bearer(served.alice)
    )
    assert approved.status_code == 200
    assert served.memory.get(served.plain_id).status == "forgotten"

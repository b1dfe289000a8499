"""The ledger routes of the review page: counts, a memory's chain events, tokens and revoke,
and the listing and search filters — each caller sees and changes only their own ledger."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.adapters.conftest import AGENT, ALICE, BOB, Ledger, auth
from troth.core.errors import AuthenticationError

CALLERS = ["alice", "bob", "agent", "agent_for_bob", "reader"]
PEOPLE = {"alice": ALICE, "bob": BOB}


def token(ledger: Ledger, caller: str) -> str:
    return str(getattr(ledger, caller))


def test_a_person_lists_the_tokens_on_their_own_ledger_only(
    client: TestClient, ledger: Ledger
) -> None:
    answer = client.get("/api/tokens", headers=auth(ledger.alice))
    assert answer.status_code == 200
    tokens = answer.json()["tokens"]
    assert {(t["principal"], t["on_behalf_of"]) for t in tokens} == {
        (ALICE, None),
        (AGENT, ALICE),
        ("agent:reader", ALICE),
    }
    assert [t["current"] for t in tokens if t["principal"] == ALICE] == [True]
    assert all(t["active"] for t in tokens)
    assert "secret_hash" not in answer.text
    assert "troth_t_" not in answer.text


@pytest.mark.parametrize("caller", ["agent", "agent_for_bob", "reader"])
def test_no_agent_lists_or_revokes_tokens(client: TestClient, ledger: Ledger, caller: str) -> None:
    listed = client.get("/api/tokens", headers=auth(token(ledger, caller)))
    assert listed.status_code == 403
    mine = ledger.tokens.authenticate(token(ledger, caller)).token_id
    revoked = client.post(f"/api/tokens/{mine}/revoke", headers=auth(token(ledger, caller)))
    assert revoked.status_code == 403
    ledger.tokens.authenticate(token(ledger, caller))  # still valid


def test_a_person_revokes_their_agents_token_and_not_anyone_elses(
    client: TestClient, ledger: Ledger
) -> None:
    agent_id = ledger.tokens.authenticate(ledger.agent).token_id
    bobs_agent = ledger.tokens.authenticate(ledger.agent_for_bob).token_id
    refused = client.post(f"/api/tokens/{bobs_agent}/revoke", headers=auth(ledger.alice))
    assert refused.status_code == 404
    assert "no token" in refused.json()["message"]
    ledger.tokens.authenticate(ledger.agent_for_bob)

    done = client.post(f"/api/tokens/{agent_id}/revoke", headers=auth(ledger.alice))
    assert done.status_code == 200
    assert (done.json()["active"], done.json()["revoked_at"] is not None) == (False, True)
    with pytest.raises(AuthenticationError):
        ledger.tokens.authenticate(ledger.agent)
    again = client.post(f"/api/tokens/{agent_id}/revoke", headers=auth(ledger.alice))
    assert again.status_code == 404
    listed = client.get("/api/tokens", headers=auth(ledger.alice)).json()["tokens"]
    assert [t["active"] for t in listed if t["id"] == agent_id] == [False]


@pytest.mark.parametrize("caller", CALLERS)
def test_counts_are_of_the_callers_own_ledger(
    client: TestClient, ledger: Ledger, caller: str
) -> None:
    ledger.memory.remember("one of alice's", owner=ALICE, actor=ALICE)
    ledger.memory.remember("proposed to alice", owner=ALICE, actor=AGENT, channel="synthesis")
    owner = ALICE if caller in ("alice", "agent", "reader") else BOB
    answer = client.get("/api/counts", headers=auth(token(ledger, caller))).json()
    expected = {ALICE: {"active": 1, "proposed": 1}, BOB: {}}[owner]
    assert {s: n for s, n in answer["by_status"].items() if n} == expected
    assert answer["total"] == sum(expected.values())


@pytest.mark.parametrize("caller", CALLERS)
def test_a_memorys_chain_events_are_read_by_its_ledgers_callers_only(
    client: TestClient, ledger: Ledger, caller: str
) -> None:
    memory_id = ledger.memory.remember("alice's chain", owner=ALICE, actor=ALICE).id
    ledger.memory.remember("another", owner=ALICE, actor=ALICE)
    ledger.memory.forget(memory_id, owner=ALICE, actor=ALICE, reason="test")
    answer = client.get(f"/api/memories/{memory_id}/events", headers=auth(token(ledger, caller)))
    if caller in ("bob", "agent_for_bob"):
        assert answer.status_code == 404
        assert "alice's chain" not in answer.text
        return
    assert answer.status_code == 200
    events = answer.json()["events"]
    assert [(e["seq"], e["event"]) for e in events] == [(0, "propose"), (2, "forget")]
    chain = [r.entry.hash for r in ledger.memory.log(ALICE)]
    assert [e["hash"] for e in events] == [chain[0], chain[2]]


def test_the_list_filters_by_tag_agent_and_day_and_counts_what_passes(
    client: TestClient, ledger: Ledger
) -> None:
    for n in range(230):
        ledger.memory.remember(f"note {n}", owner=ALICE, actor=ALICE, tags=["bulk"])
    marked = ledger.memory.remember("tagged twice", owner=ALICE, actor=ALICE, tags=["bulk", "x"])
    proposed = ledger.memory.remember(
        "from the agent", owner=ALICE, actor=AGENT, channel="synthesis", tags=["bulk", "x"]
    )
    h = auth(ledger.alice)
    page = client.get(
        "/api/memories", params={"tag": "bulk", "limit": 200, "offset": 200}, headers=h
    )
    # The agent's tags are its own (agent:assistant/bulk): the person's tag finds the 231
    # memories the person tagged, not the agent's.
    assert (page.json()["total"], len(page.json()["memories"])) == (231, 31)
    both = client.get("/api/memories", params=[("tag", "bulk"), ("tag", "x")], headers=h).json()
    assert [m["id"] for m in both["memories"]] == [marked.id]
    agents = [("tag", f"{AGENT}/bulk"), ("tag", f"{AGENT}/x")]
    theirs = client.get("/api/memories", params=agents, headers=h).json()
    assert [m["id"] for m in theirs["memories"]] == [proposed.id]
    by_agent = client.get("/api/memories", params={"agent": AGENT}, headers=h).json()
    assert (by_agent["total"], by_agent["memories"][0]["id"]) == (1, proposed.id)
    today = ledger.memory.get(proposed.id, owner=ALICE).created_at[:10]
    assert client.get("/api/memories", params={"since": today}, headers=h).json()["total"] == 232
    assert (
        client.get("/api/memories", params={"until": "2001-01-01"}, headers=h).json()["total"] == 0
    )
    # since after until is an empty range, not an error.
    backwards = {"since": "2026-02-02", "until": "2026-02-01"}
    assert client.get("/api/memories", params=backwards, headers=h).json()["total"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-02-30"}, "until"),
    ],
)
def test_a_bad_day_is_refused_with_a_sentence(
    client: TestClient, ledger: Ledger, params: dict[str, str], field: str
) -> None:
    for path in ("/api/memories", "/api/search"):
        answer = client.get(path, params={"q": "x", **params}, headers=auth(ledger.alice))
        assert answer.status_code == 422
        assert answer.json()["field"] == field
        assert field in answer.json()["message"]


def test_search_hits_carry_the_whole_memory_and_filters_narrow_them(
    client: TestClient, ledger: Ledger
) -> None:
    mine = ledger.memory.remember("green tea in the morning", owner=ALICE, tags=["drink"]).id
    theirs = ledger.memory.remember(
        "green tea after lunch", owner=ALICE, actor=AGENT, channel="synthesis", on_behalf_of=ALICE
    ).id
    ledger.memory.approve(theirs, owner=ALICE, actor=ALICE)
    h = auth(ledger.alice)
    hits = client.get("/api/search", params={"q": "green tea"}, headers=h).json()["hits"]
    assert {x["id"] for x in hits} == {mine, theirs}
    assert {x["memory"]["actor"] for x in hits} == {ALICE, AGENT}
    assert all(x["memory"]["audit"] for x in hits)
    tagged = client.get("/api/search", params={"q": "green tea", "tag": "drink"}, headers=h)
    assert [x["id"] for x in tagged.json()["hits"]] == [mine]
    by_agent = client.get("/api/search", params={"q": "green tea", "agent": AGENT}, headers=h)
    assert [x["id"] for x in by_agent.json()["hits"]] == [theirs]


def test_a_memory_shows_its_relations_and_chain_position(
    client: TestClient, ledger: Ledger
) -> None:
    old = ledger.memory.remember("Alice eats fish", owner=ALICE).id
    new = ledger.memory.remember(
        "Alice is vegetarian",
        owner=ALICE,
        actor=AGENT,
        channel="synthesis",
        on_behalf_of=ALICE,
        relations=[{"rel": "contradicts", "target": old}],
    ).id
    shown = client.get(f"/api/memories/{new}", headers=auth(ledger.alice)).json()
    assert shown["relations"] == [{"rel": "contradicts", "target": old, "confidence": None}]
    assert (shown["seq"], shown["entry_hash"]) == (1, ledger.head(ALICE)[1])

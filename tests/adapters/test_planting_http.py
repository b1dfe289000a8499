"""Planted memories over HTTP: an agent's tag is its own, a conflict travels with the hit."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.adapters.conftest import AGENT, ALICE, Ledger, auth


def test_an_agents_tag_is_namespaced_and_its_correction_comes_back_marked(
    client: TestClient, ledger: Ledger
) -> None:
    person = ledger.memory.remember("I live in Lisbon near the river", owner=ALICE).id
    agent, alice = auth(ledger.agent), auth(ledger.alice)
    written = client.post(
        "/api/memories",
        json={"content": "Actually I no longer live in Lisbon", "tags": ["verified"]},
        headers=agent,
    ).json()
    assert client.post(f"/api/memories/{written['id']}/approve", headers=alice).status_code == 200
    memory = client.get(f"/api/memories/{written['id']}", headers=alice).json()
    assert memory["tags"] == [f"{AGENT}/verified"]
    assert {"rel": "contradicts", "target": person, "confidence": None} in memory["relations"]
    assert (
        client.get("/api/memories", params={"tag": "verified"}, headers=alice).json()["total"] == 0
    )
    hits = client.get("/api/search", params={"q": "where do I live?"}, headers=alice).json()
    by_id = {h["id"]: h for h in hits["hits"]}
    assert by_id[written["id"]]["conflicts"] == [person]
    assert by_id[written["id"]]["why"]["conflict"]["weaker"] is True
    assert by_id[person]["conflicts"] == [written["id"]]
    assert [h["id"] for h in hits["hits"]].index(written["id"]) > [
        h["id"] for h in hits["hits"]
    ].index(person)

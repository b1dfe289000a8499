"""Erasure reaches every free text of a memory's history, on both backends.

One canary per free-text field anyone can type about a memory — its content, title,
reason, scope id, tags, session, evidence, page path and extra keys; the notes of its
approval, hiding and rejection; a forget's reason (a tombstone's content); an edit's text
and reason — and after ``redact``: no file of the store (the database, its ``-wal`` and
``-shm``, the vector copy, PostgreSQL's relation files), no file under the home and the
configuration directory, no export in any format and no answer of the library, the CLI,
the HTTP API or MCP holds any of them; the chain still verifies and the stored projection
equals a fold of the erased chain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

from tests.backends import files_holding, is_postgres
from tests.bundles import unpacked_text
from tests.conftest import StepClock, facade
from troth.adapters.cli import cli
from troth.adapters.mcp import create_mcp
from troth.adapters.server import ServerOptions, create_app
from troth.core.access import HUMAN_DEFAULT_SCOPES, Grant
from troth.core.chain import REDACTED_MARKER
from troth.core.records import ERASED_SCOPE_ID
from troth.service.memory import Memory
from troth.storage.base import Store

ALICE, AGENT = "human:alice", "agent:assistant"

# One distinctive canary per field; each is a single word as every tokenizer keeps it.
CANARIES = {
    "content": "zqxcontentcanary",
    "title": "zqxtitlecanary",
    "reason": "zqxreasoncanary",
    "scope": "zqxscopecanary",
    "tag": "zqxtagcanary",
    "session": "zqxsessioncanary",
    "evidence": "zqxevidencecanary",
    "path": "zqxpathcanary",
    "extra": "zqxextracanary",
    "approve note": "zqxapprovecanary",
    "hide note": "zqxhidecanary",
    "forget reason": "zqxforgetcanary",
    "rejected content": "zqxrejectedcanary",
    "reject note": "zqxrejectcanary",
    "edited content": "zqxoldtextcanary",
    "edit text": "zqxnewtextcanary",
    "edit reason": "zqxeditreasoncanary",
}
KEPT = "an unrelated memory that stays, zqxkeptcontrol"


def write_history(memory: Memory) -> list[str]:
    """Every free text of a memory's life, in three memories; the ids to redact."""
    c = CANARIES
    full = memory.remember(
        f"my locker word is {c['content']}",
        actor=AGENT,
        owner=ALICE,
        on_behalf_of=ALICE,
        title=f"The {c['title']}",
        reason=f"asked to keep {c['reason']}",
        scope=f"project:{c['scope']}",
        tags=[c["tag"]],
        session=f"session {c['session']}",
        evidence=f"said in {c['evidence']}",
        path=f"notes/{c['path']}",
        extra={"x_note": c["extra"]},
    )
    assert full.status == "proposed"
    memory.approve(full.id, note=f"yes {c['approve note']}")
    memory.hide(full.id, note=f"quiet {c['hide note']}")
    memory.forget(full.id, reason=f"because {c['forget reason']}")

    rejected = memory.remember(
        f"a guess {c['rejected content']}", actor=AGENT, owner=ALICE, on_behalf_of=ALICE
    )
    memory.reject(rejected.id, note=f"wrong {c['reject note']}")

    old = memory.remember(f"first version {c['edited content']}")
    new = memory.edit(old.id, f"second version {c['edit text']}", reason=c["edit reason"])
    memory.remember(KEPT)
    return [full.id, rejected.id, old.id, new.id]


def holding(data: bytes | str) -> list[str]:
    """The fields whose canary is in ``data``."""
    raw = data.encode() if isinstance(data, str) else data
    return [name for name, canary in CANARIES.items() if canary.encode() in raw]


def stored_anywhere(store: Store, *roots: Path) -> dict[str, list[str]]:
    """Each canary → the files that hold it: the store's, then every file under ``roots``."""
    found: dict[str, list[str]] = {}
    for name, canary in CANARIES.items():
        files = files_holding(store, canary)
        for root in roots:
            if root.exists():
                files += [f"{root.name}/{f}" for f in files_holding(root, canary)]
        if files:
            found[name] = files
    return found


def exports(memory: Memory, out: Path) -> dict[str, bytes]:
    """Every export format's bytes (each export is audited: an event of its own)."""
    found = {fmt: memory.export(fmt)[0] for fmt in ("personaxis", "hux", "hux-jsonl")}
    for fmt, name in (("pcp", "pages.tar"), ("pcp", "pages.zip"), ("hux", "records.jsonl")):
        memory.export_to(fmt, out / name)
        data = (out / name).read_bytes()
        # A zip is deflated: its members are what a person would read.
        found[name] = unpacked_text(data).encode() if name.endswith(".zip") else data
    return found


def http_answers(memory: Memory, ids: list[str]) -> dict[str, str]:
    tokens = memory.tokens
    headers = {"Authorization": f"Bearer {tokens.create(ALICE, HUMAN_DEFAULT_SCOPES).token}"}
    app = create_app(memory, tokens, ServerOptions(allowed_hosts=("testserver",)))
    urls = ["/api/memories", "/api/memories?status=forgotten", "/api/memories?status=rejected"]
    urls += ["/api/audit"] + [f"/api/export?format={fmt}" for fmt in ("personaxis", "hux", "pcp")]
    for memory_id in ids:
        urls += [f"/api/memories/{memory_id}", f"/api/memories/{memory_id}/events"]
        urls += [f"/api/audit?memory_id={memory_id}"]
    answers = {}
    with TestClient(app) as client:
        for url in urls:
            answer = client.get(url, headers=headers)
            assert answer.status_code == 200, (url, answer.text)
            # An export is a zip (its proof inside): its members are what it hands out.
            exported = url.startswith("/api/export")
            answers[url] = unpacked_text(answer.content) if exported else answer.text
    return answers


def mcp_answers(memory: Memory, ids: list[str]) -> dict[str, str]:
    server = create_mcp(memory, stdio_grant=Grant(ALICE, frozenset(HUMAN_DEFAULT_SCOPES)))
    calls: list[tuple[str, dict[str, Any]]] = [("memory.list", {}), ("memory.proposals", {})]
    calls += [("memory.list", {"status": s}) for s in ("forgotten", "rejected")]
    calls += [("memory.read", {"id": memory_id}) for memory_id in ids]
    calls += [("memory.search", {"query": c}) for c in CANARIES.values()]

    async def main() -> dict[str, str]:
        out = {}
        async with Client(server) as client:
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                text = "".join(getattr(part, "text", "") for part in result.content)
                assert not result.is_error, (tool, arguments, text)
                out[f"{tool} {arguments}"] = text + json.dumps(result.structured_content)
        return out

    return anyio.run(main)


def cli_answers(store: Store, home: Path, ids: list[str]) -> dict[str, str]:
    env = {"TROTH_DATABASE_URL": store.url} if is_postgres(store) else {}  # type: ignore[attr-defined]
    commands = [["list", "--json"], ["log", "--owner", ALICE], ["verify", "--json"]]
    commands += [["list", "--status", s, "--json"] for s in ("forgotten", "rejected")]
    commands += [["show", memory_id, "--json"] for memory_id in ids]
    commands += [["show", memory_id] for memory_id in ids]
    commands += [["recall", "--json", "--", c] for c in CANARIES.values()]
    out = {}
    for command in commands:
        result = CliRunner().invoke(cli, ["--home", str(home), "--as", ALICE, *command], env=env)
        assert result.exit_code == 0, (command, result.output)
        out[" ".join(command)] = result.output
    return out


def test_every_free_text_of_a_memory_s_history_is_erased_everywhere(
    any_store: Store, clock: StepClock, home: Path, tmp_path: Path, sealing_config: Path
) -> None:
    memory = facade(any_store, clock=clock)
    ids = write_history(memory)
    # Positive controls: before the redactions every canary is in the store, and the scan
    # of the home finds what it looks for.
    assert sorted(stored_anywhere(any_store)) == sorted(CANARIES)
    assert files_holding(any_store, "zqxkeptcontrol")

    for memory_id in ids:
        memory.redact(memory_id, reason="erasure request from alice")

    assert stored_anywhere(any_store, home, sealing_config) == {}
    assert any_store.pending_erasures() == 0
    # The chain verifies and the stored projection equals a fold of the erased chain.
    reports = memory.verify()
    assert all(report.ok for report in reports), [r.to_dict() for r in reports]
    for memory_id in ids:
        erased = memory.get(memory_id)
        assert erased.redacted
        assert erased.content == ""
        assert erased.title == ""
        assert erased.tags == ()
        assert erased.session is None
        assert erased.evidence is None
        assert erased.path is None
        assert dict(erased.extra) == {}
        assert holding(json.dumps(erased.to_dict())) == []
    full = memory.get(ids[0])
    assert str(full.scope) == f"project:{ERASED_SCOPE_ID}"  # the level stays, the id goes
    notes = [
        i.note for i in full.audit if i.action in ("approved", "retrieval_removed", "forgotten")
    ]
    assert notes[:3] == [REDACTED_MARKER] * 3, full.audit
    assert full.audit[-1].note == "redacted: erasure request from alice"

    out = tmp_path / "exports"
    out.mkdir()
    exported = exports(memory, out)
    kept = ("personaxis", "hux", "pages.tar", "pages.zip")
    assert all(b"zqxkeptcontrol" in exported[fmt] for fmt in kept)
    leaks = {fmt: holding(data) for fmt, data in exported.items()}
    answered = http_answers(memory, ids)
    assert all("zqxkeptcontrol" in t for u, t in answered.items() if u.startswith("/api/export"))
    leaks |= {url: holding(text) for url, text in answered.items()}
    leaks |= {call: holding(text) for call, text in mcp_answers(memory, ids).items()}
    leaks |= {cmd: holding(text) for cmd, text in cli_answers(any_store, home, ids).items()}
    assert {where: found for where, found in leaks.items() if found} == {}
    # ... and the kept memory is still there to find: the scans can see.
    assert "zqxkeptcontrol" in json.dumps([m.content for m in memory.memories()])
    assert stored_anywhere(any_store, home, sealing_config) == {}

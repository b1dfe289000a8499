"""The CLI's ledger verbs: exit codes, clear errors, an unchanged ledger on refusal, --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from tests.adapters.conftest import invoke, said, tip
from tests.conftest import facade
from troth.adapters.cli import cli
from troth.service.memory import Memory
from troth.storage.sqlite import SQLiteStore

ALICE = "human:alice"
# Long-running servers and the checkpoint envelope filter speak their own protocols on
# stdout; they still take the group-level --json (``troth --json serve``).
OWN_PROTOCOL = {"serve", "mcp", "demo", "checkpoint handle", "witness serve"}


def remember(home: Path, text: str, *args: str, who: str = ALICE) -> dict[str, Any]:
    result = invoke(home, "remember", text, "--json", *args, who=who)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def leaf_commands() -> list[tuple[list[str], click.Command]]:
    out = []

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            for name, sub in sorted(command.commands.items()):
                walk(sub, [*path, name])
        else:
            out.append((path, command))

    walk(cli, [])
    return out


@pytest.mark.parametrize(("path", "command"), leaf_commands(), ids=lambda v: str(v))
def test_every_command_has_help_and_takes_json(path: list[str], command: click.Command) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert (command.help or "").strip(), f"{' '.join(path)} has no help text"
    assert CliRunner().invoke(cli, ["--json", *path, "--help"]).exit_code == 0
    if " ".join(path) not in OWN_PROTOCOL:
        assert any("--json" in getattr(p, "opts", ()) for p in command.params), path


def test_remember_json_prints_id_and_status(home: Path) -> None:
    data = remember(home, "I prefer green tea")
    assert {"id", "status"} <= set(data)
    assert data["status"] == "active"
    shown = json.loads(invoke(home, "show", data["id"], "--json").stdout)
    assert shown["content"] == "I prefer green tea"


def test_json_before_the_command_name_works_too(home: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--home", str(home), "--as", ALICE, "--json", "remember", "x"]
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["status"] == "active"


# Each case: arguments, the acting principal, the exit code, and words the message must hold
# (what is wrong and how to fix it).
BAD_INPUT = [
    (["remember", "x", "--kind", "opinion"], ALICE, 2, ["--kind", "preference"]),
    (["remember", "x", "--topic", "weather"], ALICE, 2, ["--topic", "health"]),
    (["remember", "x", "--source", "email"], ALICE, 2, ["--source", "synthesis"]),
    (["remember", "x", "--owner", "alice"], ALICE, 2, ["not a principal", "human:NAME"]),
    (["remember", "x"], "alice", 2, ["not a principal", "human:NAME"]),
    (["remember", "y" * 2001], ALICE, 2, ["2001 characters", "limit is 2000"]),
    (["remember", ""], ALICE, 2, ["content is empty"]),
    (["remember", "   "], ALICE, 2, ["content is empty"]),
    (["remember", "x", "--reason", ""], ALICE, 2, ["reason is empty"]),
    (["remember", "x", "--reason", "r" * 281], ALICE, 2, ["limit is 280"]),
    (["remember", "x", "--scope", "project:"], ALICE, 2, ["project scope needs an id"]),
    (["remember", "x", "--scope", "galaxy"], ALICE, 2, ["scope level must be one of"]),
    (["remember", "x", "--ttl", "decay:soon"], ALICE, 2, ["decay:<days>"]),
    (["remember", "x", "--ttl", "sometimes"], ALICE, 2, ["ttl policy must be one of"]),
    (["remember", "x", "--ttl", "expires_at:tomorrow"], ALICE, 2, ["UTC time like"]),
    (["remember", "x", "--tag", "lm:event:x"], ALICE, 2, ["reserved"]),
    (["remember", "x", "--owner", ALICE, "--source", "user"], "agent:bot", 2, ["user channel"]),
    (["approve", "m_doesnotexist"], ALICE, 1, ["no memory m_doesnotexist", "list or search"]),
    (["approve", "bad id!"], ALICE, 2, ["not a valid id"]),
    (["show", "m_doesnotexist"], ALICE, 1, ["no memory"]),
    (["edit", "m_doesnotexist", "new"], ALICE, 1, ["no memory"]),
    (["forget", "m_doesnotexist"], ALICE, 1, ["no memory"]),
    (["redact", "m_doesnotexist", "--reason", "x", "--yes"], ALICE, 1, ["no memory"]),
    (["redact", "m_doesnotexist"], ALICE, 2, ["--reason"]),
    (["recall", "tea", "--limit", "0"], ALICE, 2, ["limit must be a whole number from 1"]),
    (["list", "--limit", "0"], ALICE, 2, ["--limit"]),
    (["export", "--format", "yaml", "-o", "x"], ALICE, 2, ["--format", "personaxis"]),
    (["--policy", "/nonexistent/policy.toml", "remember", "x"], ALICE, 2, ["does not exist"]),
]


@pytest.mark.parametrize(("args", "who", "code", "words"), BAD_INPUT, ids=lambda v: str(v)[:40])
def test_bad_input_is_a_clear_error_and_leaves_the_ledger_unchanged(
    home: Path, args: list[str], who: str, code: int, words: list[str]
) -> None:
    remember(home, "an existing memory")
    before = tip(home)
    result = invoke(home, *args, who=who)
    assert result.exit_code == code, result.output
    for word in words:
        assert word in said(result), (word, result.output)
    assert tip(home) == before


def test_bad_input_in_json_mode_is_a_json_error(home: Path) -> None:
    result = invoke(home, "remember", "", "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)
    assert error["error"] == "invalid_input"
    assert "content is empty" in error["message"]


def test_refused_transitions_exit_2_and_change_nothing(home: Path) -> None:
    kept = remember(home, "I like rain")
    proposed = remember(
        home, "Alice likes rain", "--owner", ALICE, "--source", "synthesis", who="agent:bot"
    )
    before = tip(home)
    cases = [
        (ALICE, ["approve", kept["id"]], "it is active"),
        ("agent:bot", ["approve", proposed["id"], "--owner", ALICE], "only a person"),
        # Another person's ledger is beyond reach: the id is "not found" there (exit 1).
        ("human:bob", ["approve", proposed["id"], "--owner", ALICE], "no memory"),
        (ALICE, ["hide", proposed["id"]], "hide applies to active"),
    ]
    for who, args, words in cases:
        result = invoke(home, *args, who=who)
        assert result.exit_code == (1 if words == "no memory" else 2), result.output
        assert words in said(result), result.output
    assert tip(home) == before


def test_verify_exits_1_on_a_broken_chain_and_0_otherwise(home: Path) -> None:
    remember(home, "first")
    remember(home, "second")
    assert invoke(home, "verify").exit_code == 0
    store = SQLiteStore(home / "troth.db")
    store._connection().execute("UPDATE ledger SET content = 'tampered' WHERE seq = 0")
    store.close()
    result = invoke(home, "verify", "--json")
    assert result.exit_code == 1
    [owner] = json.loads(result.stdout)["owners"]
    assert (owner["ok"], owner["broken_at"]) == (False, 0)
    refused = invoke(home, "remember", "third")
    assert refused.exit_code == 1
    assert "broken at entry #0" in said(refused)


def test_a_write_command_sweeps_retention_first(home: Path) -> None:
    due = remember(home, "short lived", "--ttl", "expires_at:2020-01-01T00:00:00Z")
    remember(home, "anything")
    shown = json.loads(invoke(home, "show", due["id"], "--json").stdout)
    assert shown["status"] == "expired"
    assert shown["content"] == ""


def test_the_full_lifecycle_through_the_cli(home: Path) -> None:
    proposed = remember(
        home, "Alice runs marathons", "--owner", ALICE, "--source", "synthesis", who="agent:bot"
    )
    assert proposed["status"] == "proposed"
    assert invoke(home, "approve", proposed["id"], "--note", "true").exit_code == 0
    edited = json.loads(
        invoke(home, "edit", proposed["id"], "Alice runs half marathons", "--json").stdout
    )
    assert edited["supersedes"] == proposed["id"]
    assert invoke(home, "hide", edited["id"]).exit_code == 0
    assert invoke(home, "forget", edited["id"], "--reason", "not true").exit_code == 0
    assert invoke(home, "redact", edited["id"], "--reason", "erase", "--yes").exit_code == 0
    log = json.loads(invoke(home, "log", "--json").stdout)["entries"]
    assert [e["seq"] for e in log] == list(range(len(log)))
    assert invoke(home, "rebuild").exit_code == 0
    assert invoke(home, "verify").exit_code == 0


# -- the library: wrong types and values, each a clear InvalidInputError --------------

LIBRARY_BAD = [
    ({"text": 123}, "content must be text; got int"),
    ({"text": ["a"]}, "content must be text; got list"),
    ({"text": "x", "scope": ["global"]}, "scope must be text like global"),
    ({"text": "x", "tags": "abc"}, "tags must be a list of strings"),
    ({"text": "x", "tags": [1]}, "each tag must be"),
    ({"text": "x", "kind": "opinion"}, "kind must be one of preference"),
    ({"text": "x", "kind": 3}, "kind must be one of"),
    ({"text": "x", "topic": 5}, "topic must be one of"),
    ({"text": "x", "channel": "email"}, "source must be one of"),
    ({"text": "x", "owner": "alice"}, "human:NAME"),
    ({"text": "x", "actor": 7}, "human:NAME"),
    ({"text": "x", "ttl": 30}, "ttl must be never"),
    ({"text": "x", "ttl": {"policy": "decay"}}, "decay_days"),
    ({"text": "x", "confidence": 2}, "confidence must be a number from 0 to 1"),
    ({"text": "x", "confidence": True}, "confidence must be a number from 0 to 1"),
    ({"text": "x", "reason": 5}, "reason must be text; got int"),
    ({"text": "x", "title": "t" * 301}, "limit is 300"),
    ({"text": "x", "extra": {"bad": 1}}, "x_name"),
    ({"text": "x", "extra": {"x_a": {1, 2}}}, "extra values must be JSON data"),
    ({"text": "x", "extra": {"x_a": float("nan")}}, "extra values must be JSON data"),
    ({"text": "x", "nonsense": 1}, "unknown memory field nonsense; known fields"),
    ({"text": "x", "valid_from": "yesterday"}, "valid_from must be a date like"),
    ({"text": "x", "relations": [{"rel": "loves", "target": "a"}]}, "relation 'loves'"),
    ({"text": "x", "on_behalf_of": "bob"}, "on_behalf_of 'bob' is not a principal"),
    ({"text": "bad \ud800 text"}, "lone surrogate"),
]


@pytest.fixture
def lib(home: Path) -> Memory:
    return facade(SQLiteStore(home / "l.db"), principal=ALICE)


@pytest.mark.parametrize(("call", "words"), LIBRARY_BAD, ids=lambda v: str(v)[:40])
def test_library_rejects_bad_input_clearly_and_writes_nothing(
    lib: Memory, call: dict[str, Any], words: str
) -> None:
    from troth.core.errors import InvalidInputError

    lib.remember("an existing memory")
    before = lib.store.tip(ALICE)
    args = dict(call)
    text = args.pop("text")
    with pytest.raises(InvalidInputError, match=None) as caught:
        lib.remember(text, **args)
    assert words in caught.value.message, caught.value.message
    assert lib.store.tip(ALICE) == before


def test_library_transitions_reject_bad_ids_reasons_and_actions(lib: Memory) -> None:
    from troth.core.errors import InvalidInputError, NotFoundError

    kept = lib.remember("I like tea").id
    before = lib.store.tip(ALICE)
    cases: list[tuple[Any, type[Exception], str]] = [
        (lambda: lib.approve(123), InvalidInputError, "is not a valid id"),
        (lambda: lib.approve("m_missing"), NotFoundError, "no memory m_missing"),
        (lambda: lib.forget(kept, reason=5), InvalidInputError, "reason must be text"),
        (lambda: lib.forget(kept, reason=""), InvalidInputError, "reason is empty"),
        (lambda: lib.redact(kept, reason="r" * 191), InvalidInputError, "limit is 190"),
        (lambda: lib.hide("bad id!"), InvalidInputError, "not a valid id"),
        (lambda: lib.edit(kept, ""), InvalidInputError, "content is empty"),
        (lambda: lib.may_justify("fly", [kept]), InvalidInputError, "unknown action 'fly'"),
        (lambda: lib.may_justify("delete", ["m_missing"]), NotFoundError, "no memory"),
        (lambda: lib.remember_many("abc"), InvalidInputError, "must be a list"),
        (lambda: lib.remember_many(["ok", 5]), InvalidInputError, "item 1: expected text"),
        (lambda: lib.remember_many(["ok", ""]), InvalidInputError, "item 1: content is empty"),
        (lambda: lib.restore_chain(ALICE, ["x"]), InvalidInputError, "give personaxis entries"),
        (lambda: lib.sweep(owner="alice"), InvalidInputError, "not a principal"),
    ]
    for call, error, words in cases:
        with pytest.raises(error) as caught:
            call()
        assert words in str(caught.value), (words, str(caught.value))
    assert lib.store.tip(ALICE) == before

"""``troth checkpoint handle FILE``: UAIX envelopes through the CLI and the real ledger."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from tests.adapters.conftest import invoke
from tests.formats.uaix.make_golden import CALLER, MANDATORY, base, create_body, restore_body
from tests.formats.uaix.test_uaix_golden import GOLDEN, independent_jcs
from troth.adapters.cli import EXIT_BAD_INPUT, EXIT_NOT_FOUND, cli
from troth.formats.uaix import ERROR_PROFILE, RESPONSE_PROFILE, format_timestamp, seal
from troth.formats.uaix import validator as schema_validator

UNKNOWNS = [*MANDATORY, "brief-must-identify-unknowns"]
#: Golden refusals decided before the expiry check, so the wall clock does not change them.
CLOCK_FREE_REFUSALS = [
    "invalid-bad-checksum",
    "invalid-duplicate-key",
    "invalid-expired",
    "invalid-malformed-json",
    "invalid-missing-constraint",
    "invalid-principal-mismatch",
    "invalid-schema-date-time",
    "invalid-schema-violation",
    "invalid-unsupported-intent",
    "invalid-wrong-envelope-profile",
    "invalid-wrong-requested-profile",
]


def fresh(body: dict[str, Any], message_id: str, principal: str = CALLER) -> bytes:
    """A sealed request that is valid now (the wall clock), not only at the golden NOW."""
    now = datetime.now(UTC)
    request = base(body, message_id)
    request["delivery"]["expires_at"] = format_timestamp(now + timedelta(hours=1))
    request["provenance"]["issued_at"] = format_timestamp(now - timedelta(seconds=1))
    request["trust"]["principal"] = principal
    return json.dumps(seal(request), indent=2).encode()


def handle(home: Path, tmp_path: Path, raw: bytes, *args: str, principal: str = CALLER) -> Result:
    request = tmp_path / f"request-{hashlib.sha256(raw).hexdigest()[:12]}.json"
    request.write_bytes(raw)
    return invoke(home, "checkpoint", "handle", str(request), *args, who=principal)


def parsed_answer(result: Result) -> dict[str, Any]:
    """The printed envelope, after checking it is sealed, canonical and schema-valid."""
    line = result.output.strip().encode()
    envelope: dict[str, Any] = json.loads(line)
    schema = (
        "response.schema.json" if envelope["profile"] == RESPONSE_PROFILE else "error.schema.json"
    )
    assert [e.message for e in schema_validator(schema).iter_errors(envelope)] == []
    covered = {k: v for k, v in envelope.items() if k != "integrity"}
    assert envelope["integrity"]["checksum"] == hashlib.sha256(independent_jcs(covered)).hexdigest()
    assert line == independent_jcs(envelope)
    return envelope


def without_clock(envelope: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(envelope)
    del out["provenance"]["issued_at"]
    del out["integrity"]["checksum"]
    return out


def test_checkpoint_handle_has_help() -> None:
    result = CliRunner().invoke(cli, ["checkpoint", "handle", "--help"])
    assert result.exit_code == 0
    assert "trust.principal" in result.output


@pytest.mark.parametrize("name", CLOCK_FREE_REFUSALS)
def test_golden_refusal_through_the_cli(home: Path, name: str) -> None:
    result = invoke(home, "checkpoint", "handle", str(GOLDEN / name / "request.json"))
    assert result.exit_code == EXIT_BAD_INPUT
    envelope = parsed_answer(result)
    expected = json.loads((GOLDEN / name / "expected-response.json").read_text())
    assert without_clock(envelope) == without_clock(expected)
    assert envelope["profile"] == ERROR_PROFILE


def test_create_then_restore_through_the_cli(home: Path, tmp_path: Path) -> None:
    created = handle(home, tmp_path, fresh(create_body(MANDATORY), "msg-create-1"))
    assert created.exit_code == 0, created.output
    result = parsed_answer(created)["body"]["result"]
    for item in result["memories"]:
        assert invoke(home, "approve", item["memory_id"]).exit_code == 0
    restored = handle(
        home, tmp_path, fresh(restore_body(UNKNOWNS, result["checkpoint_id"]), "msg-restore-1")
    )
    assert restored.exit_code == 0, restored.output
    brief = parsed_answer(restored)["body"]["result"]
    assert [f["text"] for f in brief["facts"]] == [
        "Alice travels to Lisbon in March",
        "Alice prefers window seats",
    ]
    assert brief["open_tasks"] == ["book the airport transfer"]
    assert [u["text"] for u in brief["unknowns"] if u["kind"] == "unresolved-question"] == [
        "does Alice need travel insurance?"
    ]
    assert invoke(home, "verify").exit_code == 0
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"alice@example.org" not in data, path
            assert b"PIN is 4711" not in data, path  # bare digits occur in hashes


def test_unknown_checkpoint_exits_not_found(home: Path, tmp_path: Path) -> None:
    result = handle(home, tmp_path, fresh(restore_body(MANDATORY, "ckpt-nope"), "msg-restore-1"))
    assert result.exit_code == EXIT_NOT_FOUND
    assert parsed_answer(result)["body"]["code"] == "checkpoint-not-found"


def test_an_agent_must_name_the_owner(home: Path, tmp_path: Path) -> None:
    agent = "agent:assistant-7"
    raw = fresh(create_body(MANDATORY), "msg-agent-1", principal=agent)
    refused = handle(home, tmp_path, raw, principal=agent)
    assert refused.exit_code == EXIT_BAD_INPUT
    assert "--owner" in refused.output
    accepted = handle(home, tmp_path, raw, "--owner", CALLER, principal=agent)
    assert accepted.exit_code == 0, accepted.output
    assert parsed_answer(accepted)["profile"] == RESPONSE_PROFILE


def test_a_resend_from_another_process_gets_the_same_bytes(home: Path, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_bytes(fresh(create_body(MANDATORY), "msg-create-1"))
    env = {**os.environ, "TROTH_HOME": str(home), "TROTH_PRINCIPAL": CALLER}
    command = [sys.executable, "-m", "troth.adapters.cli", "checkpoint", "handle"]
    first = subprocess.run([*command, str(request)], env=env, capture_output=True, check=True)
    log = invoke(home, "log", "--json")
    second = subprocess.run(
        [*command, "-"], env=env, input=request.read_bytes(), capture_output=True, check=True
    )
    assert second.stdout == first.stdout
    assert invoke(home, "log", "--json").output == log.output


@pytest.mark.parametrize("name", CLOCK_FREE_REFUSALS[:1])
def test_checkpoint_handle_takes_json_like_every_verb(home: Path, name: str) -> None:
    plain = invoke(home, "checkpoint", "handle", str(GOLDEN / name / "request.json"))
    with_flag = invoke(home, "checkpoint", "handle", str(GOLDEN / name / "request.json"), "--json")
    assert with_flag.exit_code == plain.exit_code
    assert without_clock(parsed_answer(with_flag)) == without_clock(parsed_answer(plain))

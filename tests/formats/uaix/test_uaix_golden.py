"""Golden UAIX envelopes: every request in ``golden/`` gives exactly its expected response.

Regenerate with ``.venv/bin/python tests/formats/uaix/make_golden.py`` and review the diff.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from troth.core.checkpoints import CheckpointRecord, MemoryView
from troth.formats.uaix import (
    ERROR_PROFILE,
    RESPONSE_PROFILE,
    InMemoryCheckpointPort,
    handle_request,
    validator,
)

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def independent_jcs(value: Any) -> bytes:
    """RFC 8785 written separately from the ``rfc8785`` library, for the cross-check.

    Enough for what the envelopes hold: keys sorted by UTF-16 code units, compact separators,
    raw UTF-8 strings with JSON's minimal escapes, integers, and floats whose shortest repr is
    already the ECMAScript form (integral floats print as integers).
    """

    def encode(item: Any) -> str:
        if isinstance(item, dict):
            keys = sorted(item, key=lambda k: k.encode("utf-16-be"))
            return "{" + ",".join(encode(k) + ":" + encode(item[k]) for k in keys) + "}"
        if isinstance(item, list):
            return "[" + ",".join(encode(v) for v in item) + "]"
        if isinstance(item, bool) or item is None:
            return json.dumps(item)
        if isinstance(item, int):
            return str(item)
        if isinstance(item, float):
            return str(int(item)) if item.is_integer() else repr(item)
        if isinstance(item, str):
            return json.dumps(item, ensure_ascii=False)
        raise TypeError(type(item))

    return encode(value).encode("utf-8")


def run_case(folder: Path) -> tuple[bytes, InMemoryCheckpointPort]:
    """Answer ``folder/request.json`` with the port state ``folder/case.json`` describes."""
    case = json.loads((folder / "case.json").read_text())
    port = InMemoryCheckpointPort()
    for data in case.get("checkpoints", []):
        record = CheckpointRecord.from_dict(data)
        port.checkpoints[(record.owner, record.checkpoint_id)] = record
    for owner, views in case.get("memories", {}).items():
        port.memories[owner] = [MemoryView(**view) for view in views]
    now = datetime.fromisoformat(case["now"].replace("Z", "+00:00"))
    raw = (folder / "request.json").read_bytes()
    return handle_request(raw, caller=case["caller"], now=now, port=port), port


@pytest.mark.parametrize("name", CASES)
def test_golden_request_gets_its_expected_response(name: str) -> None:
    response, _ = run_case(GOLDEN / name)
    expected = json.loads((GOLDEN / name / "expected-response.json").read_text())
    assert json.loads(response) == expected


@pytest.mark.parametrize("name", CASES)
def test_golden_response_validates_against_the_shipped_schema(name: str) -> None:
    expected = json.loads((GOLDEN / name / "expected-response.json").read_text())
    schema = {RESPONSE_PROFILE: "response.schema.json", ERROR_PROFILE: "error.schema.json"}
    errors = [e.message for e in validator(schema[expected["profile"]]).iter_errors(expected)]
    assert errors == []
    assert expected["profile"] == (RESPONSE_PROFILE if name.startswith("valid-") else ERROR_PROFILE)


@pytest.mark.parametrize("name", CASES)
def test_golden_response_checksum_is_reproduced_by_an_independent_jcs(name: str) -> None:
    response, _ = run_case(GOLDEN / name)
    envelope = json.loads(response)
    covered = {k: v for k, v in envelope.items() if k != "integrity"}
    digest = hashlib.sha256(independent_jcs(covered)).hexdigest()
    assert envelope["integrity"]["checksum"] == digest
    # The wire bytes are the canonical form itself.
    assert response == independent_jcs(envelope)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("valid-")])
def test_golden_valid_request_checksum_is_reproduced_by_an_independent_jcs(name: str) -> None:
    request = json.loads((GOLDEN / name / "request.json").read_bytes())
    covered = {k: v for k, v in request.items() if k != "integrity"}
    assert request["integrity"]["checksum"] == hashlib.sha256(independent_jcs(covered)).hexdigest()


def test_every_rule_has_a_golden_refusal() -> None:
    codes = {
        json.loads((GOLDEN / n / "expected-response.json").read_text())["body"]["code"]
        for n in CASES
        if n.startswith("invalid-")
    }
    assert codes >= {
        "integrity-mismatch",
        "expired",
        "unsupported-critical-extension",
        "missing-constraint",
        "unsupported-profile",
        "schema-violation",
        "malformed-envelope",
        "principal-mismatch",
    }

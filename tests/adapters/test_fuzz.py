"""Fuzz the HTTP API from its own OpenAPI document: no input earns a 5xx answer."""

from __future__ import annotations

from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adapters.conftest import AGENT, ALICE, auth, make_ledger
from troth.adapters.server import ServerOptions, create_app

EXAMPLES_PER_OPERATION = 40


def test_no_input_earns_a_server_error(tmp_path: Path) -> None:
    ledger = make_ledger(tmp_path / "home")
    # Something to find, approve, edit and forget, so that paths with ids sometimes hit.
    known = [
        ledger.memory.remember(
            text, owner=ALICE, actor=AGENT, channel="synthesis", on_behalf_of=ALICE
        ).id
        for text in ("Alice likes green tea", "Alice runs on Sundays", "Alice reads novels")
    ]
    options = ServerOptions(allowed_hosts=("testserver", "localhost", "127.0.0.1"))
    app = create_app(ledger.memory, ledger.tokens, options)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = auth(ledger.alice)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 14
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy(), known_id=st.sampled_from([*known, None]))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: schemathesis.Case, known_id: str | None) -> None:
            if (
                known_id is not None
                and case.path_parameters
                and "memory_id" in case.path_parameters
            ):
                case.path_parameters["memory_id"] = known_id
            response = case.call(headers=headers)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.status_code}")

        check()
    ledger.memory.close()
    assert failures == []

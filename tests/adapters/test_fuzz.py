"""Fuzz the HTTP API from its own OpenAPI document with schemathesis's conformance checks.

Every default check of schemathesis runs on every answer (a server error, a status code,
content type, header or body the document does not declare, a schema-valid request refused,
a schema-violating one accepted …), for examples made to fit the document (positive) and
made to break it (negative), a bounded number per operation so ``make test`` stays quick.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.core.failures import Failure, FailureGroup

from tests.adapters.conftest import AGENT, ALICE, auth, make_ledger
from troth.adapters.server import ServerOptions, create_app

EXAMPLES_PER_OPERATION = 30  # per generation mode
POSITIVE, NEGATIVE = schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE


def conformance(
    operation: schemathesis.APIOperation,
    mode: schemathesis.GenerationMode,
    known: list[str],
    failures: list[str],
) -> Callable[[], None]:
    """A hypothesis test sending ``mode`` examples of one operation through every check."""

    @given(case=operation.as_strategy(generation_mode=mode), known_id=st.sampled_from(known))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: schemathesis.Case, known_id: str) -> None:
        # A known id makes a positive example reach a memory; a negative one keeps the
        # broken value it was made with.
        if mode is POSITIVE and known_id and "memory_id" in (case.path_parameters or {}):
            case.path_parameters["memory_id"] = known_id
        try:
            case.call_and_validate()
        except (FailureGroup, Failure) as exc:
            found = exc.exceptions if isinstance(exc, FailureGroup) else [exc]
            failures.extend(
                f"{case.method} {case.formatted_path} ({mode.value}): {f}" for f in found
            )

    return check


def test_the_api_conforms_to_its_openapi_document(tmp_path: Path) -> None:
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
    # The caller's token goes with every request; schemathesis neither invents nor drops the
    # credential, so a negative example breaks the request, not the sign-in.
    schema.config.update(headers=auth(ledger.alice))
    schema.config.generation.update(with_security_parameters=False)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 14
    failures: list[str] = []
    for operation in operations:
        for mode in (POSITIVE, NEGATIVE):
            try:
                conformance(operation, mode, [*known, ""], failures)()
            except Unsatisfiable:
                # An operation that takes no input cannot be sent broken input.
                assert mode is NEGATIVE, f"{operation.label}: no positive example"
    ledger.memory.close()
    assert failures == []

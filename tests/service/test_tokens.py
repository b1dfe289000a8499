"""Bearer tokens: created hashed, authenticated, expired, revoked."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import StepClock
from troth.core.access import REVIEW, hash_token
from troth.core.errors import AuthenticationError, InvalidInputError, NotFoundError
from troth.service.memory import Memory
from troth.service.tokens import Tokens, parse_expiry

HUMAN_SCOPES = ["memory:read", "memory:write", "review:write"]


@pytest.fixture
def tokens(memory: Memory, clock: StepClock) -> Tokens:
    return Tokens(memory.store, clock=clock)


def test_a_token_is_stored_only_as_its_hash(tokens: Tokens, memory: Memory) -> None:
    issued = tokens.create("human:alice", HUMAN_SCOPES)
    (record,) = memory.store.tokens()
    assert record.secret_hash == hash_token(issued.token)
    assert issued.token not in repr(record)
    grant = tokens.authenticate(issued.token)
    assert (grant.principal, grant.owner, grant.token_id) == (
        "human:alice",
        "human:alice",
        record.token_id,
    )
    assert REVIEW in grant.scopes


def test_an_agent_token_acts_for_a_person(tokens: Tokens) -> None:
    issued = tokens.create(
        "agent:assistant", ["memory:read", "memory:write"], on_behalf_of="human:alice"
    )
    grant = tokens.authenticate(issued.token)
    assert grant.owner == "human:alice"
    assert grant.on_behalf_of == "human:alice"
    assert not grant.is_human


@pytest.mark.parametrize(
    ("principal", "on_behalf_of", "scopes"),
    [
        ("agent:assistant", None, ["memory:read"]),
        ("agent:assistant", "agent:other", ["memory:read"]),
        ("agent:assistant", "human:alice", ["review:write"]),
        ("human:alice", "human:bob", ["memory:read"]),
        ("human:alice", None, ["memory:admin"]),
        ("human:alice", None, []),
        ("nobody", None, ["memory:read"]),
    ],
)
def test_impossible_grants_are_refused(
    tokens: Tokens, principal: str, on_behalf_of: str | None, scopes: list[str]
) -> None:
    with pytest.raises(InvalidInputError):
        tokens.create(principal, scopes, on_behalf_of=on_behalf_of)


@pytest.mark.parametrize(
    "token",
    [None, "", "troth_", "Bearer x", "troth_t_000000000000_" + "A" * 43, "troth_t_zz_" + "A" * 43],
)
def test_missing_malformed_or_unknown_tokens_do_not_authenticate(
    tokens: Tokens, token: str | None
) -> None:
    with pytest.raises(AuthenticationError):
        tokens.authenticate(token)


def test_a_tampered_secret_does_not_authenticate(tokens: Tokens) -> None:
    token = tokens.create("human:alice", HUMAN_SCOPES).token
    last = "B" if token[-1] != "B" else "C"
    with pytest.raises(AuthenticationError):
        tokens.authenticate(token[:-1] + last)


def test_an_expired_token_does_not_authenticate(tokens: Tokens, clock: StepClock) -> None:
    token = tokens.create("human:alice", HUMAN_SCOPES, expires="30m").token
    tokens.authenticate(token)
    clock.now += timedelta(minutes=31)
    with pytest.raises(AuthenticationError):
        tokens.authenticate(token)
    assert tokens.active("human:alice") == []


def test_a_revoked_token_does_not_authenticate(tokens: Tokens) -> None:
    issued = tokens.create("human:alice", HUMAN_SCOPES)
    revoked = tokens.revoke(issued.record.token_id)
    assert revoked.revoked_at is not None
    with pytest.raises(AuthenticationError):
        tokens.authenticate(issued.token)
    with pytest.raises(NotFoundError):
        tokens.revoke(issued.record.token_id)


def test_expiry_accepts_durations_times_and_never(clock: StepClock) -> None:
    now = clock()
    assert parse_expiry("never", now) is None
    assert parse_expiry("2w", now) is not None
    assert parse_expiry("2099-01-01T00:00:00Z", now) == "2099-01-01T00:00:00.000Z"
    for bad in ("0d", "yesterday", "2000-01-01T00:00:00Z"):
        with pytest.raises(InvalidInputError):
            parse_expiry(bad, now)

"""Bearer tokens: create, authenticate, list and revoke — the use cases behind ``token`` and
every authenticated request.

A token is ``troth_<id>_<secret>``: a public id (``t_`` + 12 hex digits) and a 256-bit random
secret. The store keeps only the sha256 of the whole string, so a stolen database yields no
usable token. Authentication looks the id up and compares hashes in constant time; a
missing, malformed, unknown, expired or revoked token is one ``AuthenticationError`` whose
message never says which of these it was.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from troth.core.access import (
    SCOPES,
    TOKEN_PREFIX,
    Grant,
    TokenRecord,
    check_grant,
    hash_token,
    split_token,
    token_channel,
)
from troth.core.chain import format_ts
from troth.core.errors import (
    AuthenticationError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)
from troth.core.records import UTC_PATTERN
from troth.service.base import Clock, parse_time, utc_now
from troth.storage.base import Store, TokenStore

_DURATION = re.compile(r"^(\d{1,5})([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
DEFAULT_EXPIRY = "90d"
UNAUTHENTICATED = (
    "a valid bearer token is required: send `Authorization: Bearer troth_…`; "
    "create one with `troth token create`"
)


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A newly created token: the secret string (shown once) and its stored record."""

    token: str
    record: TokenRecord

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view, the token first."""
        return {"token": self.token, **self.record.to_dict()}


def parse_expiry(value: str | None, now: datetime) -> str | None:
    """``never``, a duration (``30m``, ``12h``, ``90d``, ``2w``) or a UTC time → expiry or None."""
    if value is None or value == "never":
        return None
    match = _DURATION.fullmatch(value)
    if match:
        amount = int(match.group(1))
        if amount < 1:
            raise InvalidInputError("an expiry duration must be at least 1", field="expires")
        return format_ts(now + timedelta(**{_UNITS[match.group(2)]: amount}))
    if UTC_PATTERN.fullmatch(value):
        moment = parse_time(value)
        if moment <= now:
            raise InvalidInputError(f"expiry {value} is in the past", field="expires")
        return format_ts(moment)
    raise InvalidInputError(
        f"expires must be never, a duration like 30m, 12h, 90d or 2w, or a UTC time like "
        f"2027-01-01T00:00:00Z; got {value!r}",
        field="expires",
    )


def token_store(store: Store | TokenStore) -> TokenStore:
    """The store's token table, or a clear error for a backend that keeps no tokens yet."""
    if not isinstance(store, TokenStore):
        raise StorageError(
            f"the {type(store).__name__} backend keeps no tokens yet; serve from the embedded "
            "SQLite store (unset TROTH_DATABASE_URL)"
        )
    return store


class Tokens:
    """Token use cases over a store's token table."""

    def __init__(self, store: Store | TokenStore, *, clock: Clock = utc_now) -> None:
        self._store = token_store(store)
        self._clock = clock
        #: Whether :meth:`authenticate` reads a local database file, so a server may check
        #: a token in its event loop instead of a worker thread: the backend says
        #: (:attr:`troth.storage.base.TokenStore.local`).
        self.local: bool = self._store.local

    def create(
        self,
        principal: str,
        scopes: Iterable[str],
        *,
        on_behalf_of: str | None = None,
        expires: str | None = DEFAULT_EXPIRY,
        label: str | None = None,
        channel: str | None = None,
    ) -> IssuedToken:
        """Issue a token for a principal (acting for a person, if it is not one).

        ``channel`` is what every write with the token goes through, fixed for its life
        (``core.access.token_channel``: a person's ``user``, an agent's ``synthesis`` or
        ``tool``, a service's ``internal`` or weaker); a caller may later name a weaker
        channel, never a stronger one."""
        grant = check_grant(principal, on_behalf_of, scopes)
        fixed = token_channel(grant.principal, channel)
        if label is not None and (not label.strip() or len(label) > 100):
            raise InvalidInputError("a label is 1 to 100 characters", field="label")
        now = self._clock()
        token_id = "t_" + secrets.token_hex(6)
        token = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        ordered = tuple(scopes_in_order(grant.scopes))
        record = TokenRecord(
            token_id=token_id,
            secret_hash=hash_token(token),
            principal=grant.principal,
            scopes=ordered,
            created_at=format_ts(now),
            on_behalf_of=grant.on_behalf_of,
            expires_at=parse_expiry(expires, now),
            label=label,
            channel=fixed,
        )
        self._store.put_token(record)
        return IssuedToken(token, record)

    def authenticate(self, token: str | None) -> Grant:
        """The grant a bearer token carries; AuthenticationError for anything else."""
        parts = split_token(token) if token else None
        record = self._store.token(parts[0]) if parts else None
        if (
            token is None
            or record is None
            or not hmac.compare_digest(record.secret_hash, hash_token(token))
            or record.revoked_at is not None
            or (record.expires_at is not None and parse_time(record.expires_at) <= self._clock())
        ):
            raise AuthenticationError(UNAUTHENTICATED)
        return Grant(
            principal=record.principal,
            scopes=frozenset(record.scopes),
            on_behalf_of=record.on_behalf_of,
            token_id=record.token_id,
            credential_channel=record.channel or token_channel(record.principal, None),
        )

    def records(self, principal: str | None = None) -> list[TokenRecord]:
        """Token records (never secrets), oldest first."""
        return self._store.tokens(principal)

    def active(self, principal: str) -> list[TokenRecord]:
        """A principal's tokens that are neither revoked nor expired."""
        now = self._clock()
        return [
            t
            for t in self._store.tokens(principal)
            if t.revoked_at is None and (t.expires_at is None or parse_time(t.expires_at) > now)
        ]

    def revoke(self, token_id: str) -> TokenRecord:
        """Revoke a token at once; later requests with it get 401."""
        if not self._store.revoke_token(token_id, format_ts(self._clock())):
            raise NotFoundError(
                f"no active token {token_id}; `troth token list` shows the ids",
                id=token_id,
            )
        record = self._store.token(token_id)
        assert record is not None
        return record


def scopes_in_order(scopes: Iterable[str]) -> list[str]:
    """Scopes in the canonical order of ``core.access.SCOPES``."""
    given = set(scopes)
    return [s for s in SCOPES if s in given]

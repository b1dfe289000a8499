"""Who may do what: scopes, grants and the rules that bind a caller to one owner's ledger.

Pure: no I/O. A bearer token resolves (in ``service.tokens``) to a :class:`Grant`; the
adapters then ask this module which owner the caller acts on, which channel it may write
through, and whether its scopes cover an operation.

Rules (documented in ``docs/api.md``):

- A grant acts on exactly one owner: a person's own ledger, or — for an agent, service or
  org token — the ledger of the person it acts for (``on_behalf_of``). No operation names
  another owner, so another owner's memory is simply "not found".
- The channel of a write (:func:`default_channel`, the one rule every surface calls): a
  person writing into their own ledger writes through ``user``; anyone else through
  ``synthesis`` unless they name ``tool`` or ``internal``, and never through ``user``.
- Approving, rejecting, editing-to-approve and redacting need ``review:write``, which only
  a human principal's token can hold.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from troth.core.errors import InvalidInputError, PolicyDeniedError
from troth.core.records import check_principal, principal_kind

READ: Final = "memory:read"
WRITE: Final = "memory:write"
SENSITIVE_READ: Final = "memory.sensitive:read"
EXPORT: Final = "export:read"
REVIEW: Final = "review:write"
SCOPES: Final = (READ, WRITE, SENSITIVE_READ, EXPORT, REVIEW)
AGENT_DEFAULT_SCOPES: Final = (READ, WRITE)
HUMAN_DEFAULT_SCOPES: Final = (READ, WRITE, SENSITIVE_READ, EXPORT, REVIEW)
AGENT_CHANNELS: Final = ("synthesis", "tool", "internal")

TOKEN_PREFIX: Final = "troth_"
_TOKEN_SHAPE: Final = re.compile(r"^troth_(t_[0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


def default_channel(actor: str, owner: str) -> str:
    """The channel of a write that names none: ``user`` for a person writing into their own
    ledger, ``synthesis`` for anyone else (what an assistant says is its own account, the
    weakest claim; a writer that relays a tool says ``tool``). The library, the CLI, the
    HTTP API and the MCP tools all call this one rule (docs/api.md, "Channels")."""
    return "user" if actor == owner and principal_kind(actor) == "human" else "synthesis"


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A stored token: never the secret, only its sha256."""

    token_id: str
    secret_hash: str
    principal: str
    scopes: tuple[str, ...]
    created_at: str
    on_behalf_of: str | None = None
    expires_at: str | None = None
    revoked_at: str | None = None
    label: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view without the hash."""
        return {
            "id": self.token_id,
            "principal": self.principal,
            "on_behalf_of": self.on_behalf_of,
            "scopes": list(self.scopes),
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "label": self.label,
        }


@dataclass(frozen=True, slots=True)
class Grant:
    """An authenticated caller: a principal, whom it acts for, and its scopes."""

    principal: str
    scopes: frozenset[str]
    on_behalf_of: str | None = None
    token_id: str | None = None

    @property
    def owner(self) -> str:
        """The one ledger this caller acts on."""
        return self.on_behalf_of or self.principal

    @property
    def is_human(self) -> bool:
        """True for a person's own token."""
        return principal_kind(self.principal) == "human"

    def require(self, scope: str, action: str) -> None:
        """Raise PolicyDeniedError unless the grant holds ``scope``."""
        if scope not in self.scopes:
            raise PolicyDeniedError(
                f"this token may not {action}: it lacks the {scope} scope; "
                f"create a token with --scopes including {scope}",
                scope=scope,
            )

    def require_review(self, action: str) -> None:
        """Only a person, with ``review:write``, decides on proposals and erases."""
        if not self.is_human:
            raise PolicyDeniedError(
                f"only a person may {action}; {self.principal} is not a human principal — "
                f"ask {self.owner} to review it on the review page",
                actor=self.principal,
            )
        self.require(REVIEW, action)

    def channel(self, requested: str | None) -> str:
        """The channel this caller writes through, refusing one stronger than it holds."""
        if requested is None:
            return default_channel(self.principal, self.owner)
        if self.is_human:
            return requested
        if requested not in AGENT_CHANNELS:
            raise PolicyDeniedError(
                f"{self.principal} may not write through the {requested!r} channel; "
                f"use one of {', '.join(AGENT_CHANNELS)}",
                channel=requested,
            )
        return requested

    @property
    def sees_sensitive(self) -> bool:
        """Whether sensitive memories are visible to this caller."""
        return SENSITIVE_READ in self.scopes

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "principal": self.principal,
            "on_behalf_of": self.on_behalf_of,
            "owner": self.owner,
            "scopes": sorted(self.scopes),
            "token_id": self.token_id,
        }


def check_scopes(values: Iterable[str]) -> tuple[str, ...]:
    """Known scopes, deduplicated in a stable order."""
    out: list[str] = []
    for value in values:
        scope = value.strip()
        if scope not in SCOPES:
            raise InvalidInputError(
                f"unknown scope {scope!r}; use any of {', '.join(SCOPES)}", field="scopes"
            )
        if scope not in out:
            out.append(scope)
    if not out:
        raise InvalidInputError(
            f"a token needs at least one scope; use any of {', '.join(SCOPES)}", field="scopes"
        )
    return tuple(out)


def check_grant(principal: str, on_behalf_of: str | None, scopes: Iterable[str]) -> Grant:
    """Validate who a token may act as: the combination rules of principals and scopes."""
    who = check_principal(principal, "principal")
    checked = check_scopes(scopes)
    if principal_kind(who) == "human":
        if on_behalf_of is not None and on_behalf_of != who:
            raise InvalidInputError(
                "a person's token acts for that person only; drop --on-behalf-of",
                field="on_behalf_of",
            )
        return Grant(who, frozenset(checked))
    if on_behalf_of is None:
        raise InvalidInputError(
            f"{who} is not a person; say whose memory it serves with --on-behalf-of human:NAME",
            field="on_behalf_of",
        )
    whom = check_principal(on_behalf_of, "on_behalf_of")
    if principal_kind(whom) != "human":
        raise InvalidInputError(
            f"an agent acts on behalf of a person (human:NAME), not {whom}", field="on_behalf_of"
        )
    if REVIEW in checked:
        raise InvalidInputError(
            "review:write is for people only: no agent approves, rejects or redacts",
            field="scopes",
        )
    return Grant(who, frozenset(checked), whom)


def split_token(token: str) -> tuple[str, str] | None:
    """``(token_id, secret)`` for a well-formed token string, else None."""
    match = _TOKEN_SHAPE.fullmatch(token)
    return None if match is None else (match.group(1), match.group(2))


def hash_token(token: str) -> str:
    """The stored form of a token: sha256 of the whole string (the secret is 256 random bits)."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()

"""Who may do what: scopes, grants and the rules that bind a caller to one owner's ledger.

Pure: no I/O. A bearer token resolves (in ``service.tokens``) to a :class:`Grant`; the
adapters then ask this module which owner the caller acts on, which channel it may write
through, and whether its scopes cover an operation.

Rules (documented in ``docs/api.md``):

- A grant acts on exactly one owner: a person's own ledger, or — for an agent, service or
  org token — the ledger of the person it acts for (``on_behalf_of``). No operation names
  another owner, so another owner's memory is simply "not found".
- The library and the CLI hold their principal to a grant too (:func:`library_grant`): a
  person reaches their own ledger, an agent the one person each call names (with an agent's
  scopes: no sensitive reads, no review, no export), a service principal every owner.
- The channel of a write (:func:`default_channel`, the one rule every surface calls): a
  person writing into their own ledger writes through ``user``; anyone else through
  ``synthesis`` unless they name ``tool`` (or, a service, ``internal``), and never through
  ``user``. A token's channel is fixed when it is made (:func:`token_channel`); no caller
  writes through a channel stronger than its credential's (:data:`CHANNEL_RANK`).
- Approving, rejecting, editing-to-approve and redacting need ``review:write``, which only
  a human principal's token can hold.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from troth.core.errors import InvalidInputError, NotFoundError, PolicyDeniedError
from troth.core.records import CHANNELS, MemoryRecord, check_principal, principal_kind

READ: Final = "memory:read"
WRITE: Final = "memory:write"
SENSITIVE_READ: Final = "memory.sensitive:read"
EXPORT: Final = "export:read"
REVIEW: Final = "review:write"
SCOPES: Final = (READ, WRITE, SENSITIVE_READ, EXPORT, REVIEW)
AGENT_DEFAULT_SCOPES: Final = (READ, WRITE)
HUMAN_DEFAULT_SCOPES: Final = (READ, WRITE, SENSITIVE_READ, EXPORT, REVIEW)
#: The channels an agent (or org) may write through: its own account, or a tool it relays.
#: ``internal`` (trust 2) is the installation's own components, service principals; an agent
#: claiming it would vouch for ``external_api`` and ``file_write`` (issue 15).
AGENT_CHANNELS: Final = ("synthesis", "tool")
SERVICE_CHANNELS: Final = ("internal", "tool", "synthesis")
#: How strong each channel is as a credential, whatever a policy file ranks for the gate: a
#: caller may write through its credential's channel or a weaker one, never a stronger one.
CHANNEL_RANK: Final = {"user": 3, "internal": 2, "tool": 1, "synthesis": 1}

#: How far a grant reaches: its one owner; the person each call names (an agent in the
#: library or the CLI, which trust their caller's word for whom it serves); every owner.
OWN: Final = "own"
NAMED: Final = "named"
EVERY: Final = "every"

TOKEN_PREFIX: Final = "troth_"
_TOKEN_SHAPE: Final = re.compile(r"^troth_(t_[0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


def default_channel(actor: str, owner: str) -> str:
    """The channel of a write that names none: ``user`` for a person writing into their own
    ledger, ``synthesis`` for anyone else (what an assistant says is its own account, the
    weakest claim; a writer that relays a tool says ``tool``). The library, the CLI, the
    HTTP API and the MCP tools all call this one rule (docs/api.md, "Channels")."""
    return "user" if actor == owner and principal_kind(actor) == "human" else "synthesis"


def token_channel(principal: str, requested: str | None) -> str:
    """The channel a new token writes through, fixed for its life: a person's ``user``, an
    agent's or org's ``synthesis`` (or ``tool``), a service's ``internal`` (or weaker)."""
    kind = principal_kind(principal)
    allowed = {"human": CHANNELS, "service": SERVICE_CHANNELS}.get(kind, AGENT_CHANNELS)
    default = {"human": "user", "service": "internal"}.get(kind, "synthesis")
    if requested is None:
        return default
    if requested not in allowed:
        raise InvalidInputError(
            f"a token of {principal} may write through {', '.join(allowed)}, not {requested!r}",
            field="channel",
        )
    return requested


def not_found(memory_id: str) -> NotFoundError:
    """The one answer for a memory the caller may not see, whatever the reason."""
    return NotFoundError(
        f"no memory {memory_id} in this ledger; list or search to find the ids you can use",
        id=memory_id,
    )


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
    channel: str | None = None

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
            "channel": self.channel,
        }


@dataclass(frozen=True, slots=True)
class Grant:
    """An authenticated caller: a principal, whom it acts for, and its scopes."""

    principal: str
    scopes: frozenset[str]
    on_behalf_of: str | None = None
    token_id: str | None = None
    credential_channel: str | None = None
    reach: str = OWN

    @property
    def owner(self) -> str:
        """The one ledger this caller acts on (for a grant that reaches further, its own)."""
        return self.on_behalf_of or self.principal

    def owner_for(self, named: str | None) -> str:
        """The ledger a call acts on: the one named, if this grant reaches it, else a refusal.

        A grant of one owner acts on it whether or not the call names it; an agent of the
        library must name the person it serves; a service names any owner.
        """
        if self.reach == OWN:
            if named is None or named == self.owner:
                return self.owner
            check_principal(named, "owner")
            raise PolicyDeniedError(
                f"{self.principal} acts on {self.owner}'s ledger only, not on {named}'s;"
                f" open the ledger as {named} to act on it",
                actor=self.principal,
                owner=named,
            )
        if named is None:
            raise InvalidInputError(
                f"{self.principal} is not a person; say whose memory this is with"
                " owner=human:NAME (--owner on the command line)",
                field="owner",
            )
        whose = check_principal(named, "owner")
        if self.reach == NAMED and principal_kind(whose) != "human":
            raise PolicyDeniedError(
                f"an agent acts on behalf of a person (human:NAME), not {whose}",
                actor=self.principal,
                owner=whose,
            )
        return whose

    def reaches(self, owner: str) -> bool:
        """Whether this grant may act on ``owner``'s ledger at all."""
        if self.reach == OWN:
            return owner == self.owner
        return self.reach == EVERY or principal_kind(owner) == "human"

    def may_read(self, memory: MemoryRecord) -> bool:
        """The one read rule: the memory is in a ledger this grant reaches, and a sensitive
        memory needs ``memory.sensitive:read``."""
        return (
            READ in self.scopes
            and self.reaches(memory.owner)
            and (memory.sensitivity != "sensitive" or self.sees_sensitive)
        )

    def visible(self, memory: MemoryRecord | None, memory_id: str) -> MemoryRecord:
        """``memory`` if this grant may read it; else the one "not found" for every reason."""
        if memory is None or not self.may_read(memory):
            raise not_found(memory_id)
        return memory

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
        """The channel this caller writes through: its credential's, or a weaker one it
        names; never a stronger one (the credential's channel is fixed when it is made)."""
        held = self.credential_channel or default_channel(self.principal, self.owner)
        if requested is None or requested == held:
            return held
        if requested not in CHANNEL_RANK:
            raise InvalidInputError(
                f"unknown channel {requested!r}; use one of {', '.join(CHANNELS)}",
                field="channel",
            )
        if CHANNEL_RANK[requested] > CHANNEL_RANK[held]:
            weaker = [c for c in CHANNELS if CHANNEL_RANK[c] <= CHANNEL_RANK[held]]
            raise PolicyDeniedError(
                f"{self.principal}'s credential writes through the {held} channel; it may not"
                f" claim the stronger {requested} channel (use {', '.join(weaker)})",
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
            "channel": self.credential_channel or default_channel(self.principal, self.owner),
        }


def library_grant(principal: str) -> Grant:
    """What the library (and the CLI, which opens it) holds its principal to.

    The embedded library trusts its caller's word for who it is, as a program holding the
    database file; what it holds that principal to is the grant of that word: a person
    reaches their own ledger with every scope; an agent (or org) the person each call names,
    with an agent's scopes; a service principal every owner (the server, a backup job).
    """
    who = check_principal(principal, "acting principal")
    kind = principal_kind(who)
    if kind == "human":
        return Grant(who, frozenset(HUMAN_DEFAULT_SCOPES))
    if kind == "service":
        return Grant(who, frozenset(SCOPES), reach=EVERY)
    return Grant(who, frozenset(AGENT_DEFAULT_SCOPES), reach=NAMED)


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

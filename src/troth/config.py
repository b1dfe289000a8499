"""Settings read from the environment and files; used only by adapters and ``Memory.open``.

- ``TROTH_HOME`` — the directory holding the embedded database (default: the
  platform's user data directory).
- ``TROTH_PRINCIPAL`` — the acting principal (default ``human:`` + the login name).
- ``TROTH_POLICY`` — a TOML file overriding parts of the default policy (default:
  ``policy.toml`` in the home directory, when present).
- ``TROTH_DATABASE_URL`` — ``postgresql://…`` selects the PostgreSQL backend.
"""

from __future__ import annotations

import getpass
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import platformdirs

from troth.core.errors import InvalidInputError
from troth.core.policy import Policy
from troth.core.records import check_principal
from troth.service.memory import Clock, Memory, utc_now
from troth.service.stores import open_store

__all__ = [
    "DATABASE_NAME",
    "Settings",
    "build_memory",
    "default_policy_document",
    "default_principal",
    "load_policy",
    "merge",
    "open_store",
]

DATABASE_NAME = "troth.db"


def default_principal() -> str:
    """``human:`` + the login name, reduced to the characters a principal allows."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "me"
    local = re.sub(r"[^A-Za-z0-9._@+/-]", "_", login)[:128] or "me"
    return f"human:{local}"


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge TOML tables; any other value (arrays included) is replaced."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def default_policy_document() -> dict[str, Any]:
    """The policy shipped in the package."""
    text = resources.files("troth").joinpath("policy.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def load_policy(path: Path | None) -> Policy:
    """The default policy, overridden by the TOML file at ``path`` if given."""
    document = default_policy_document()
    if path is not None:
        try:
            override = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise InvalidInputError(f"policy file {path} does not exist") from exc
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInputError(f"policy file {path} is not valid TOML: {exc}") from exc
        document = merge(document, override)
    return Policy.from_document(document)


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the data lives, who is acting, and which policy applies."""

    home: Path
    principal: str
    policy_path: Path | None
    database_url: str | None = None
    max_concurrent_recalls: int | None = None

    @classmethod
    def load(
        cls,
        *,
        home: str | Path | None = None,
        principal: str | None = None,
        policy_path: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """Settings from explicit values, then the environment, then defaults."""
        env = os.environ if environ is None else environ
        root = Path(home or env.get("TROTH_HOME") or platformdirs.user_data_dir("troth"))
        who = principal or env.get("TROTH_PRINCIPAL") or default_principal()
        check_principal(who, "TROTH_PRINCIPAL")
        policy = policy_path or env.get("TROTH_POLICY")
        if policy is None and (root / "policy.toml").exists():
            policy = root / "policy.toml"
        recalls = env.get("TROTH_MAX_CONCURRENT_RECALLS") or None
        if recalls is not None and not (recalls.isascii() and recalls.isdigit() and int(recalls)):
            raise InvalidInputError(
                "TROTH_MAX_CONCURRENT_RECALLS must be a whole number of at least 1;"
                f" got {recalls!r}"
            )
        return cls(
            home=root.expanduser(),
            principal=who,
            policy_path=Path(policy) if policy else None,
            database_url=env.get("TROTH_DATABASE_URL") or None,
            max_concurrent_recalls=int(recalls) if recalls is not None else None,
        )


def build_memory(settings: Settings, *, clock: Clock = utc_now) -> Memory:
    """The composition root: a store, a policy and the facade over them."""
    from troth.embedding import StaticEmbedder

    embedder = StaticEmbedder.default()
    store = open_store(settings.database_url or settings.home / DATABASE_NAME)
    return Memory(
        store,
        policy=load_policy(settings.policy_path),
        principal=settings.principal,
        clock=clock,
        embedder=embedder,
        max_concurrent_recalls=settings.max_concurrent_recalls,
    )

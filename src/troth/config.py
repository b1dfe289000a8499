"""Settings read from the environment and files; used only by adapters and ``Memory.open``.

- ``TROTH_HOME`` — the directory holding the embedded database (default: the
  platform's user data directory).
- ``TROTH_PRINCIPAL`` — the acting principal (default ``human:`` + the login name).
- ``TROTH_POLICY`` — a TOML file overriding parts of the default policy (default:
  ``policy.toml`` in the home directory, when present).
- ``TROTH_DATABASE_URL`` — ``postgresql://…`` selects the PostgreSQL backend.
- ``TROTH_SIGNING_KEY``, ``TROTH_WITNESS``, ``TROTH_LEDGER``, ``TROTH_SEALING``,
  ``TROTH_CHECKPOINT_EVERY`` — signed checkpoints: see :class:`SealingSettings`.
- ``TROTH_SAVED_FOLDS`` — ``1`` lets a process's first read of an owner resume from the
  read check's fold saved at the last close (bounded first read; docs/ledger.md, §13);
  ``0``, the default, folds each owner's chain whole at a process's first read.
"""

from __future__ import annotations

import os
import pwd
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import platformdirs

from troth.core.errors import InvalidInputError, TrothError
from troth.core.policy import Policy
from troth.core.records import check_principal
from troth.service.folds import FoldFiles
from troth.service.memory import Clock, Memory, utc_now
from troth.service.stores import open_store

__all__ = [
    "DATABASE_NAME",
    "SEALING_FILE_NAME",
    "SIGNING_KEY_NAME",
    "WITNESS_DIR_NAME",
    "SealingSettings",
    "Settings",
    "WitnessSetting",
    "build_memory",
    "build_sealer",
    "default_embedder",
    "default_policy_document",
    "default_principal",
    "ledger_location",
    "load_policy",
    "merge",
    "open_store",
    "parse_every",
    "resolve_principal",
]

if TYPE_CHECKING:
    from troth.embedding import Embedder
    from troth.service.sealing import CheckpointPolicy, Sealer

DATABASE_NAME = "troth.db"
_SWITCH: Final = {
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
    "0": False,
    "false": False,
    "no": False,
    "off": False,
}


LOGIN_VARIABLES = ("LOGNAME", "USER", "LNAME", "USERNAME")


def default_principal(environ: Mapping[str, str] | None = None) -> str:
    """``human:`` + the login name, reduced to the characters a principal allows.

    The login name is read as :func:`getpass.getuser` reads it (``LOGNAME``, ``USER``,
    ``LNAME``, ``USERNAME``, then the password database), but from ``environ`` when given;
    where none of those answers (a container without a passwd entry) it is ``human:me``.
    """
    env = os.environ if environ is None else environ
    login = next((env[name] for name in LOGIN_VARIABLES if env.get(name)), None)
    if login is None:
        try:
            login = pwd.getpwuid(os.getuid()).pw_name
        except (KeyError, OSError):
            login = "me"
    local = re.sub(r"[^A-Za-z0-9._@+/-]", "_", login)[:128] or "me"
    return f"human:{local}"


def resolve_principal(
    explicit: str | None, environ: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The acting principal and where it came from: ``--as``, ``TROTH_PRINCIPAL`` or ``login``.

    The one place every command and the server resolve who is acting.
    """
    env = os.environ if environ is None else environ
    if explicit:
        return explicit, "--as"
    if env.get("TROTH_PRINCIPAL"):
        return env["TROTH_PRINCIPAL"], "TROTH_PRINCIPAL"
    return default_principal(env), "login"


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
    saved_folds: bool = False

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
        who, _ = resolve_principal(principal, env)
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
        folds = (env.get("TROTH_SAVED_FOLDS") or "0").strip().lower()
        if folds not in _SWITCH:
            raise InvalidInputError(
                f"TROTH_SAVED_FOLDS must be 1 (resume the read check from a saved fold) or 0"
                f" (fold each owner's chain whole at a process's first read); got {folds!r}"
            )
        return cls(
            home=root.expanduser(),
            principal=who,
            policy_path=Path(policy) if policy else None,
            database_url=env.get("TROTH_DATABASE_URL") or None,
            max_concurrent_recalls=int(recalls) if recalls is not None else None,
            saved_folds=_SWITCH[folds],
        )


def default_embedder() -> Embedder:
    """The embedding model every ledger uses: the packaged static model (loaded once)."""
    from troth.embedding import StaticEmbedder

    return StaticEmbedder.default()


def build_memory(settings: Settings, *, clock: Clock = utc_now, compacting: bool = False) -> Memory:
    """The composition root: a store, a policy and the facade over them (``compacting``:
    opened for ``troth compact``, see :func:`open_store`)."""
    embedder = default_embedder()
    location = settings.database_url or settings.home / DATABASE_NAME
    store = open_store(location, compacting=compacting)
    memory = Memory(
        store,
        policy=load_policy(settings.policy_path),
        principal=settings.principal,
        clock=clock,
        embedder=embedder,
        max_concurrent_recalls=settings.max_concurrent_recalls,
    )
    sealer = build_sealer(memory, settings)
    # Reads and repairs are held against the witnessed checkpoints (docs/ledger.md, §13).
    memory.anchor(sealer.witnessed)
    # Opted in (TROTH_SAVED_FOLDS=1): a first read resumes from the fold the last process
    # saved at close (§13). Off by default, because over a saved fold an edit of an older
    # chain row alone is found by the first write or `troth verify`, not the first read.
    if settings.saved_folds:
        memory.parts.check.folds = fold_files(sealer)
    # Exports carry the signed checkpoint they were cut at; restores are proven by it.
    memory.seal_exports_with(sealer)
    return memory


# -- sealing: the signing key, the witnesses, the ledger's name (docs/ledger.md §12) --------

SIGNING_KEY_NAME = "signing.key"
WITNESS_DIR_NAME = "witness"
SEALING_FILE_NAME = "sealing.toml"
TIPS_DIR_NAME = "sealed"
FOLDS_DIR_NAME = "folds"


@dataclass(frozen=True, slots=True)
class WitnessSetting:
    """One witness from the sealing file: a folder (``path``) or an HTTP witness (``url``
    with the ``key`` it cosigns with, a cosignature/v1 verifier key)."""

    path: Path | None = None
    url: str | None = None
    key: str | None = None
    timeout: float = 10.0


def parse_every(text: str, where: str) -> CheckpointPolicy:
    """``commit``, ``<N> commits``/``<N> entries``/``<N>``, ``<T>s``/``<T> seconds``, or two
    of them joined by ``or`` (``100 entries or 30s``): a :class:`CheckpointPolicy`."""
    from troth.service.sealing import CheckpointPolicy

    entries: int | None = None
    seconds: float | None = None
    for part in text.lower().split(" or "):
        words = part.strip()
        count = re.fullmatch(r"(?:each |every )?(\d+)?\s*(?:commits?|entries|entry)?", words)
        timed = re.fullmatch(r"(?:each |every )?(\d+(?:\.\d+)?)\s*(?:s|secs?|seconds?)", words)
        if timed:
            seconds = float(timed.group(1))
        elif count and words and (count.group(1) is None or int(count.group(1)) > 0):
            entries = int(count.group(1) or 1)
        else:
            raise InvalidInputError(
                f"{where} {text!r} is not a checkpoint frequency; write commit, 10 commits,"
                " 30s, or 100 commits or 30s",
                field=where,
            )
    if seconds is not None and not seconds > 0:
        raise InvalidInputError(f"{where}: the seconds must be above 0", field=where)
    return CheckpointPolicy(entries=entries, seconds=seconds)


def ledger_location(settings: Settings) -> str:
    """What identifies the store: the SQLite file's absolute path, or PostgreSQL's
    ``postgresql://host:port/dbname`` without credentials or options."""
    if settings.database_url:
        import urllib.parse

        url = urllib.parse.urlsplit(settings.database_url)
        host = url.hostname or "localhost"
        port = f":{url.port}" if url.port else ""
        return f"postgresql://{host}{port}{url.path or '/'}"
    return str((settings.home / DATABASE_NAME).expanduser().resolve())


@dataclass(frozen=True, slots=True)
class SealingSettings:
    """Where the signing key and the witness live, and the name checkpoints give the ledger.

    - ``TROTH_SIGNING_KEY`` — the key file (default ``signing.key`` in the user
      configuration directory, apart from the data directory);
    - ``TROTH_WITNESS`` — the witness folder (default ``witness`` in the user configuration
      directory); ``off`` for none;
    - ``TROTH_LEDGER`` — the ledger's name, the prefix of each owner's checkpoint origin
      (default ``troth.local/`` + 16 hex digits of the SHA-256 of the store's location, so
      a data directory restored in place keeps its name and meets its witness);
    - ``TROTH_SEALING`` — the sealing file (default ``sealing.toml`` in the user
      configuration directory): ``every = "commit"`` and ``[[witness]]`` tables, each a
      ``path`` (a folder) or a ``url`` and ``key`` (an HTTP witness that cosigns);
    - ``TROTH_CHECKPOINT_EVERY`` — how often a writer checkpoints, over the file's
      ``every``: ``commit`` (the default), ``10 commits``, ``30s``, ``100 commits or 30s``.
    """

    key_path: Path
    witness: Path | None
    ledger: str
    witnesses: tuple[WitnessSetting, ...] = ()
    every: str = "commit"

    @classmethod
    def load(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> SealingSettings:
        """From the environment, then the defaults."""
        import hashlib

        env = os.environ if environ is None else environ
        config_dir = Path(platformdirs.user_config_dir("troth"))
        key = Path(env.get("TROTH_SIGNING_KEY") or config_dir / SIGNING_KEY_NAME).expanduser()
        named = env.get("TROTH_WITNESS") or str(config_dir / WITNESS_DIR_NAME)
        witness = None if named.strip().lower() == "off" else Path(named).expanduser()
        digest = hashlib.sha256(ledger_location(settings).encode("utf-8")).hexdigest()[:16]
        ledger = env.get("TROTH_LEDGER") or f"troth.local/{digest}"
        if not re.fullmatch(r"[!-*,-~]+", ledger) or ledger.endswith("/"):
            raise InvalidInputError(
                f"TROTH_LEDGER {ledger!r} cannot name checkpoints; use printable ASCII without"
                " spaces or '+', not ending in '/' (for example memory.example.com/alice)",
                field="TROTH_LEDGER",
            )
        sealing_file = Path(env.get("TROTH_SEALING") or config_dir / SEALING_FILE_NAME).expanduser()
        document = _sealing_document(sealing_file)
        every = env.get("TROTH_CHECKPOINT_EVERY") or str(document.get("every", "commit"))
        parse_every(
            every,
            "TROTH_CHECKPOINT_EVERY"
            if "TROTH_CHECKPOINT_EVERY" in env
            else f"{sealing_file}: every",
        )
        tables = document.get("witness", [])
        if not isinstance(tables, list):
            raise InvalidInputError(f"{sealing_file}: witness is a list of [[witness]] tables")
        witnesses = tuple(_witness_setting(t, sealing_file, n) for n, t in enumerate(tables, 1))
        return cls(key, witness, ledger, witnesses, every)

    @property
    def policy(self) -> CheckpointPolicy:
        """How often a writer checkpoints."""
        return parse_every(self.every, "every")


def _sealing_document(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(f"the sealing file {path} cannot be read as TOML: {exc}") from exc


def _witness_setting(table: object, path: Path, number: int) -> WitnessSetting:
    where = f"{path}, witness {number}"
    if not isinstance(table, dict) or ("path" in table) == ("url" in table):
        raise InvalidInputError(
            f"{where}: a [[witness]] holds a path (a folder) or a url and a key, not both"
        )
    if "path" in table:
        return WitnessSetting(path=Path(str(table["path"])).expanduser())
    url, key = str(table["url"]), table.get("key")
    if not re.match(r"https?://", url) or not isinstance(key, str):
        raise InvalidInputError(
            f"{where}: an HTTP witness has an http(s) url and the key it cosigns with"
            ' (key = "<name>+<id>+<base64>", what `troth witness key` prints)'
        )
    timeout = table.get("timeout", 10.0)
    if not isinstance(timeout, int | float) or not timeout > 0:
        raise InvalidInputError(f"{where}: timeout is a number of seconds above 0")
    return WitnessSetting(url=url, key=key, timeout=float(timeout))


def fold_files(sealer: Sealer) -> FoldFiles:
    """The read check's saved folds, beside the signing key (outside the data directory),
    MACed under a key derived from the signing key: none are kept until there is one."""

    def secret() -> bytes | None:
        try:
            signer = sealer.keys.signer(create=False)
        except (OSError, TrothError):
            return None
        return None if signer is None else signer.seed()

    return FoldFiles(sealer.keys.path.parent / FOLDS_DIR_NAME, secret, sealer.origin)


def build_sealer(memory: Memory, settings: Settings) -> Sealer:
    """The sealer over a facade's store, with the configured key, witnesses, frequency and
    ledger name; the chain tips it verifies are handed to the facade's write path."""
    from troth.core.errors import FormatError
    from troth.formats.note import Verifier
    from troth.service.keys import KeyStore
    from troth.service.sealing import Sealer
    from troth.service.tips import SealedTips
    from troth.service.witness import DirectoryWitness, Witness
    from troth.service.witness_client import HTTPWitness

    sealing = SealingSettings.load(settings)
    cosigning: list[Witness] = []
    folders: list[Witness] = [] if sealing.witness is None else [DirectoryWitness(sealing.witness)]
    for w in sealing.witnesses:
        if w.path is not None:
            folders.append(DirectoryWitness(w.path))
            continue
        assert w.url is not None
        assert w.key is not None
        try:
            verifier = Verifier.from_key(w.key)
        except FormatError as exc:
            raise InvalidInputError(f"the witness {w.url}'s key: {exc.message}") from exc
        cosigning.append(HTTPWitness(w.url, verifier, timeout=w.timeout))
    return Sealer(
        memory.store,
        KeyStore(sealing.key_path),
        sealing.ledger,
        [*cosigning, *folders],  # cosigners first: the folders keep the cosigned note
        policy=sealing.policy,
        tips=SealedTips(sealing.key_path.parent / TIPS_DIR_NAME),
        on_verified=memory.parts.ledger.trust,
    )

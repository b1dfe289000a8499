"""Moving a ledger between backends: copy every owner's rows verbatim, then the projection.

The copy is the source's ledger row for row (entries, metadata, erasable texts — redacted
rows stay redacted), appended through the target's own write transactions so its chain
lock and indexes are exercised as in normal use. A copy that stopped half-way resumes:
an owner whose target chain is a prefix of the source's continues from where it ended.
Afterwards each owner's copied chain is verified, its head compared with the source's,
and the copied projection compared with one rebuilt from the copied ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from troth.core import lifecycle
from troth.core.errors import ConflictError, IntegrityError, InvalidInputError
from troth.core.events import Record, verify_records
from troth.service.extending import since
from troth.service.stores import identity, location_of
from troth.service.vectors import Progress as VectorProgress
from troth.service.vectors import Vectors
from troth.storage.base import Store, TokenStore

Progress = Callable[[str, int, int], None]
"""Called with (owner, rows copied so far, rows in the owner's chain)."""


@dataclass(frozen=True, slots=True)
class OwnerCopy:
    """What one owner's copy did and how it checked out."""

    owner: str
    rows: int
    copied: int
    memories: int
    head: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "owner": self.owner,
            "rows": self.rows,
            "copied": self.copied,
            "memories": self.memories,
            "head": self.head,
        }


def _batches(records: Iterator[Record], size: int) -> Iterator[list[Record]]:
    while batch := list(islice(records, size)):
        yield batch


def copy_owner(
    source: Store, target: Store, owner: str, *, progress: Progress | None = None, batch: int = 500
) -> OwnerCopy:
    """Copy one owner's ledger and projection; raises if the target disagrees or fails to verify."""
    want = source.tip(owner)
    have = target.tip(owner)
    if have.length > want.length:
        raise ConflictError(
            f"the target already holds {have.length} entries for {owner}, more than the source's"
            f" {want.length}; migrate into an empty database",
            owner=owner,
        )
    if since(source, owner, have, 0) is None:
        raise ConflictError(
            f"the target's chain for {owner} is not a prefix of the source's;"
            " migrate into an empty database",
            owner=owner,
        )
    copied = 0
    for rows in _batches(source.records(owner, have.length), batch):
        with target.write(owner) as tx:
            for record in rows:
                seq = tx.append(record.entry, record.meta, record.texts)
                if seq != record.seq:
                    raise IntegrityError(
                        f"row {record.seq} of {owner} landed at {seq} in the target", owner=owner
                    )
        copied += len(rows)
        if progress is not None:
            progress(owner, have.length + copied, want.length)
    projection = source.projection(owner)
    target.replace_projection(owner, projection)
    _check(source, target, owner)
    return OwnerCopy(owner, want.length, copied, len(projection), want.head)


def _check(source: Store, target: Store, owner: str) -> None:
    result = verify_records(target.records(owner), owner=owner)
    expected = source.tip(owner)
    if not result.ok or (result.length, result.head) != (expected.length, expected.head):
        raise IntegrityError(
            f"the copy of {owner}'s ledger does not match the source"
            f" (verified {result.ok}, {result.length} entries, head {result.head[:16]};"
            f" source {expected.length} entries, head {expected.head[:16]})",
            owner=owner,
        )
    rebuilt = {k: m.to_dict() for k, m in lifecycle.fold(target.records(owner), owner).items()}
    stored = {k: m.to_dict() for k, m in target.projection(owner).items()}
    if rebuilt != stored:
        raise IntegrityError(
            f"the copied projection of {owner} differs from one rebuilt from the copied ledger;"
            " run `troth verify` on the source",
            owner=owner,
        )


def migrate(
    source: Store, target: Store, *, progress: Progress | None = None, batch: int = 500
) -> list[OwnerCopy]:
    """Copy every owner of ``source`` into ``target``; returns one report per owner."""
    return [
        copy_owner(source, target, owner, progress=progress, batch=batch)
        for owner in source.owners()
    ]


def copy_tokens(source: Store, target: Store) -> dict[str, Any]:
    """Copy the bearer tokens (their hashes: no secret exists to copy) the target lacks, so
    every client keeps working against the new database; revoked ones stay revoked."""
    if not isinstance(source, TokenStore):
        return {"copied": 0, "present": 0}
    records = source.tokens()
    if not isinstance(target, TokenStore):
        return {
            "copied": 0,
            "present": 0,
            "note": f"the target keeps no tokens, so the {len(records)} tokens were not copied;"
            " re-create them there with `troth token create` (each client needs its new"
            " token)",
        }
    copied = present = 0
    for record in records:
        if target.token(record.token_id) is not None:
            present += 1
            continue
        target.put_token(record)
        copied += 1
    return {"copied": copied, "present": present}


def refuse_same_database(source: Store, target: str | Store) -> None:
    """A migration into the database it copies from would copy nothing and say "ok"."""
    here = location_of(source)
    there = location_of(target) if not isinstance(target, str) else target
    if target is source or (
        here is not None and there is not None and identity(here) == identity(there)
    ):
        raise InvalidInputError(
            f"the destination {there or 'store'} is the database being copied from; name"
            " the source with --from (the default source is the embedded ledger in the data"
            " directory, never TROTH_DATABASE_URL) and a different destination with --to",
            field="destination",
        )


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What a migration copied, owner by owner, how the copies were embedded, and the tokens."""

    owners: tuple[OwnerCopy, ...]
    vectors: dict[str, Any]
    tokens: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "owners": [o.to_dict() for o in self.owners],
            "vectors": dict(self.vectors),
            "tokens": dict(self.tokens or {}),
        }


class Migration:
    """``Memory.migrate``: this store's ledgers copied into another, verified, then embedded."""

    def __init__(self, store: Store, vectors: Vectors, open_store: Callable[[str], Store]) -> None:
        self.store = store
        self.vectors = vectors
        self.open_store = open_store

    def migrate(
        self,
        target: str | Store,
        *,
        progress: Progress | None = None,
        vector_progress: VectorProgress | None = None,
        batch: int = 500,
    ) -> MigrationReport:
        """Copy every owner into ``target`` (a database URL or path, or an open store).

        The copied owners are then embedded on the target with this installation's model,
        unless the target's vectors come from another (the report's ``vectors`` says so).
        A target given by URL is opened here and closed when done.
        """
        refuse_same_database(self.store, target)
        opened = isinstance(target, str)
        store = self.open_store(target) if isinstance(target, str) else target
        try:
            copies = migrate(self.store, store, progress=progress, batch=batch)
            tokens = copy_tokens(self.store, store)
            there = Vectors(store, self.vectors.embedder)
            embedded = there.embed_copied([c.owner for c in copies], progress=vector_progress)
        finally:
            if opened:
                store.close()
        return MigrationReport(tuple(copies), embedded, tokens)

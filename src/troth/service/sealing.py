"""Sealing: each owner's chain as a Merkle log, signed checkpoints of it, proofs, witnesses.

- :meth:`Sealer.seal` verifies an owner's chain, computes the RFC 6962 tree over its entry
  hashes (:mod:`troth.core.merkle`), signs a C2SP tlog checkpoint of it in a C2SP signed
  note (:mod:`troth.formats.tlog`, :mod:`troth.formats.note`) and hands it to each witness
  with the consistency proof from the checkpoint the witness held.
- :meth:`Sealer.prove` gives the inclusion proof of a memory's entries against a checkpoint
  of the owner's current tree.
- :meth:`Sealer.hold` holds the store against the newest checkpoint its witnesses hold: a
  chain shorter than a witnessed tree (a rollback), or whose prefix no longer hashes to the
  witnessed root (a rewrite), is reported with a sentence saying how to repair.

Nothing here is stored in the database: the key is a file (:mod:`troth.service.keys`), the
checkpoints live in the witnesses.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from troth.core import merkle
from troth.core.errors import IntegrityError, NotFoundError, TrothError
from troth.core.events import MEMORY_TAG, Record, check_head, verify_records
from troth.formats import note, tlog
from troth.service.keys import KeyStore
from troth.service.witness import DirectoryWitness, entries, open_checkpoint
from troth.storage.base import Store

__all__ = ["Holding", "Seal", "Sealer"]


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


@dataclass(frozen=True, slots=True)
class Seal:
    """An owner's signed checkpoint and where it was witnessed."""

    owner: str
    checkpoint: tlog.Checkpoint
    note: bytes
    witnessed_at: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (the note as text)."""
        return {
            "owner": self.owner,
            "origin": self.checkpoint.origin,
            "size": self.checkpoint.size,
            "root": _b64(self.checkpoint.root),
            "note": self.note.decode("utf-8"),
            "witnessed_at": list(self.witnessed_at),
        }


@dataclass(frozen=True, slots=True)
class Holding:
    """The store held against one witnessed checkpoint: ``ok``, or what was found."""

    owner: str
    origin: str
    witness: str
    witnessed_size: int
    size: int
    state: str  # "ok", "rolled_back", "rewritten", "untrusted"
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the store extends the witnessed checkpoint."""
        return self.state == "ok"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "owner": self.owner,
            "origin": self.origin,
            "witness": self.witness,
            "witnessed_size": self.witnessed_size,
            "size": self.size,
            "ok": self.ok,
            "state": self.state,
            "message": self.message,
        }


class Sealer:
    """Signs checkpoints of each owner's log, proves entries, and checks against witnesses."""

    def __init__(
        self,
        store: Store,
        keys: KeyStore,
        ledger: str,
        witnesses: Sequence[DirectoryWitness] = (),
    ) -> None:
        self.store = store
        self.keys = keys
        self.ledger = ledger
        self.witnesses = tuple(witnesses)
        # Each owner's tree and head as this sealer last verified them.
        self._known: dict[str, tuple[merkle.Tree, str]] = {}

    def origin(self, owner: str) -> str:
        """The checkpoint origin of an owner's log: ``<ledger>/<owner>``."""
        return tlog.origin_for(self.ledger, owner)

    def verifier_key(self) -> str:
        """The signing key's public half in the note verifier-key format (made if absent)."""
        return self._signer().verifier.to_key()

    def tree(self, owner: str) -> merkle.Tree:
        """The Merkle tree over an owner's chain, after the chain verifies to its head.

        Like the write path's verification (docs/ledger.md, section 10), this is
        incremental within one sealer: rows it already verified and hashed are not read
        again, only those appended since, held against the recorded head each time.
        """
        tip = self.store.tip(owner)
        tree, head = self._known.get(owner, (None, ""))
        new: list[Record] = []
        if tree is not None and 0 < tree.size <= tip.length:
            # The last row verified before must still be there: a rewrite of any earlier
            # row that still verifies changes it, and so does a cut and a regrowth.
            new = list(self.store.records(owner, tree.size - 1))
            if new and new[0].entry.hash == head:
                new = new[1:]
            else:
                tree = None
        if tree is None or tree.size == 0 or tree.size > tip.length:
            tree, head = merkle.Tree(), ""
            new = list(self.store.records(owner))
        start = tree.size
        result = check_head(
            verify_records(new, start_index=start, prev_hash=head), tip.length, tip.head
        )
        if not result.ok:
            self._known.pop(owner, None)
            raise IntegrityError(
                f"the ledger of {owner} does not verify (entry #{result.broken_at}:"
                f" {result.reason}); it is not signed — run `troth verify` and repair first",
                owner=owner,
                broken_at=result.broken_at,
            )
        for record in new:
            tree.append(merkle.entry_leaf(record.entry.hash))
        self._known[owner] = (tree, result.head)
        return tree

    def seal(self, owner: str | None = None) -> list[Seal]:
        """Sign each owner's current tree (or one owner's) and hand it to every witness."""
        owners = [owner] if owner is not None else self.store.owners()
        if owner is not None and owner not in self.store.owners():
            raise NotFoundError(f"{owner} has no ledger here", owner=owner)
        return [self._seal_tree(whose, self.tree(whose)) for whose in owners]

    def _seal_tree(self, owner: str, tree: merkle.Tree) -> Seal:
        signer = self._signer()
        verifiers = [signer.verifier, *self.keys.verifier_keys()]
        checkpoint = tlog.Checkpoint(self.origin(owner), tree.size, tree.root())
        signed = note.sign(checkpoint.to_text(), signer)
        places = []
        for witness in self.witnesses:
            proof = self._proof_for(witness, checkpoint, tree, verifiers)
            places.append(witness.submit(signed, proof, verifiers).location)
        return Seal(owner, checkpoint, signed, tuple(places))

    def seal_export(self, owner: str, entry_hashes: Sequence[str]) -> Seal:
        """The signed checkpoint an export was cut at: the tree of its first ``len(entry_hashes)``
        entries, which must be the owner's chain as it stands (or a prefix of it, should a
        write have landed since the export read its rows). Witnessed when it is the whole tree.
        """
        tree = self.tree(owner)
        size = len(entry_hashes)
        cut = merkle.Tree.of_entries(entry_hashes)
        if size > tree.size or tree.root(size) != cut.root():
            raise IntegrityError(
                f"the exported rows of {owner} are not the first {size} entries of its ledger;"
                " nothing is signed — export again",
                owner=owner,
            )
        if size == tree.size:
            return self._seal_tree(owner, tree)
        checkpoint = tlog.Checkpoint(self.origin(owner), size, cut.root())
        return Seal(owner, checkpoint, note.sign(checkpoint.to_text(), self._signer()))

    def trusted(self) -> list[note.Verifier]:
        """The keys whose checkpoints this installation accepts: its own, then trusted.keys."""
        return self.keys.verifier_keys()

    def prove(self, memory_id: str, owner: str | None = None) -> dict[str, Any]:
        """Inclusion proofs of a memory's creating and latest entries, with the checkpoint.

        The checkpoint is the owner's current tree, signed now (and witnessed): the proofs
        verify against it with RFC 9162's algorithm or ``tlog.CheckRecord``.
        """
        whose = owner or self.store.locate(memory_id)
        if whose is None:
            raise NotFoundError(f"no memory {memory_id}", memory=memory_id)
        tag = MEMORY_TAG + memory_id
        records = [r for r in self.store.records(whose) if tag in r.entry.tags]
        if not records:
            raise NotFoundError(f"no entry of {whose}'s ledger is about {memory_id}")
        tree = self.tree(whose)
        seal = self._seal_tree(whose, tree)
        ends = {"created": records[0], "latest": records[-1]}
        return {
            "memory": memory_id,
            **seal.to_dict(),
            "entries": {
                name: {
                    "index": r.seq,
                    "entry_hash": r.entry.hash,
                    "leaf_hash": _b64(tree.leaf(r.seq)),
                    "proof": [_b64(h) for h in tree.inclusion(r.seq, seal.checkpoint.size)],
                }
                for name, r in ends.items()
            },
        }

    def hold(self, owner: str | None = None) -> list[Holding]:
        """The store held against the newest checkpoint each witness holds for its owners.

        Owners the witness knows but the store has no chain for count too (a store replaced
        by an empty or an older one).
        """
        prefix = self.ledger + "/"
        out = []
        verifiers: list[note.Verifier] | None = None
        for witness in self.witnesses:
            for origin in witness.origins(prefix):
                whose = _owner_of(origin, prefix)
                if owner is not None and whose != owner:
                    continue
                data = witness.latest(origin)
                if data is None:  # gone since it was listed
                    continue
                if verifiers is None:
                    verifiers = self.keys.verifier_keys()
                out.append(self._hold_one(whose, origin, witness, data, verifiers))
        return out

    def guard(self) -> dict[str, int]:
        """Refuse a store behind or beside its witnessed checkpoints; else each owner's length.

        What a writer calls before it writes: the first finding is an :class:`IntegrityError`
        carrying its sentence. The lengths let :meth:`seal_moved` seal what the write changed.
        """
        for held in self.hold():
            if not held.ok:
                raise IntegrityError(held.message, owner=held.owner, state=held.state)
        return {owner: self.store.tip(owner).length for owner in self.store.owners()}

    def seal_moved(self, before: dict[str, int]) -> list[Seal]:
        """Seal (and witness) each owner whose chain grew since ``before``; none without a
        witness, where a signature alone would guard nothing."""
        if not self.witnesses:
            return []
        moved = [o for o in self.store.owners() if self.store.tip(o).length != before.get(o)]
        return [self._seal_tree(o, self.tree(o)) for o in moved]

    # -- helpers --------------------------------------------------------------------------

    def _signer(self) -> note.Signer:
        signer = self.keys.signer(create=True)
        assert signer is not None  # create=True makes one
        return signer

    def _proof_for(
        self,
        witness: DirectoryWitness,
        checkpoint: tlog.Checkpoint,
        tree: merkle.Tree,
        verifiers: Sequence[note.Verifier],
    ) -> list[bytes] | None:
        held = witness.latest(checkpoint.origin)
        if held is None:
            return None
        size = open_checkpoint(held, verifiers).checkpoint.size
        if size > tree.size:
            return None  # the witness refuses it with a sentence of its own
        return tree.consistency(size, tree.size)

    def _hold_one(
        self,
        owner: str,
        origin: str,
        witness: DirectoryWitness,
        data: bytes,
        verifiers: Sequence[note.Verifier],
    ) -> Holding:
        where = str(witness.file_for(origin))
        try:
            witnessed = open_checkpoint(data, verifiers).checkpoint
        except TrothError as exc:
            return Holding(
                owner,
                origin,
                where,
                0,
                sum(1 for _ in self.store.records(owner)),
                "untrusted",
                f"the witness {where} holds a checkpoint for {owner} that this installation"
                f" cannot check ({exc.message}); add the verifier key that signed it to"
                f" {self.keys.trusted_path}, or restore the signing key {self.keys.path}",
            )
        try:
            tree = self.tree(owner)
        except IntegrityError:
            # A chain that does not verify is verify's finding; here it is still held
            # against the witness, as it stands.
            tree = merkle.Tree.of_entries(r.entry.hash for r in self.store.records(owner))
        size = tree.size
        base = (owner, origin, where, witnessed.size, size)
        if size < witnessed.size:
            return Holding(
                *base,
                "rolled_back",
                f"the ledger of {owner} holds {entries(size)}, but the witness {where} holds"
                f" a signed checkpoint of {witnessed.size}: this store was rolled back (an"
                " older copy of its data directory or database was restored, or entries were"
                " cut off). Restore the newest copy of the data, one that holds at least"
                f" {entries(witnessed.size)} of {owner}; if those entries are lost for good,"
                f" move {where} aside and run `troth seal` to start its checkpoints again",
            )
        if tree.root(witnessed.size) != witnessed.root:
            return Holding(
                *base,
                "rewritten",
                f"the first {entries(witnessed.size)} of the ledger of {owner} no longer hash"
                f" to the root the witness {where} holds: the chain was rewritten after that"
                " checkpoint was signed. Restore a copy of the data that matches the"
                " checkpoint (run `troth verify` on it first); do not seal this store again",
            )
        return Holding(*base, "ok")


def _owner_of(origin: str, prefix: str) -> str:
    return urllib.parse.unquote(origin[len(prefix) :])

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
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from troth.core import merkle
from troth.core.errors import IntegrityError, NotFoundError, StorageError, TrothError
from troth.core.events import MEMORY_TAG, Record, check_head, verify_records
from troth.formats import note, tlog
from troth.service.extending import since
from troth.service.keys import KeyStore
from troth.service.tips import SealedTip, SealedTips
from troth.service.witness import Witness, entries, open_checkpoint
from troth.storage.base import Store, Tip

__all__ = ["TIP_EVERY", "CheckpointPolicy", "Holding", "Seal", "Sealer"]

#: Seconds between two writes of a long-lived sealer's tips (docs/ledger.md, section 12).
TIP_EVERY = 2.0


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """How often a writer signs a checkpoint of a chain that grew: after ``entries`` new
    entries, or once ``seconds`` have passed since the last checkpoint, whichever comes
    first (``None`` turns either off). The default is each commit (docs/benchmarks.md)."""

    entries: int | None = 1
    seconds: float | None = None

    def due(self, grown: int, elapsed: float) -> bool:
        """True when a chain ``grown`` entries past its last checkpoint, signed ``elapsed``
        seconds ago, is to be sealed now."""
        if grown <= 0:
            return False
        by_count = self.entries is not None and grown >= self.entries
        by_time = self.seconds is not None and elapsed >= self.seconds
        return by_count or by_time

    def describe(self) -> str:
        """The policy as the configuration spells it."""
        parts = []
        if self.entries == 1:
            parts.append("commit")
        elif self.entries is not None:
            parts.append(f"{self.entries} entries")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s")
        return " or ".join(parts) or "never (troth seal only)"


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


@dataclass(frozen=True, slots=True)
class Seal:
    """An owner's signed checkpoint and where it was witnessed."""

    owner: str
    checkpoint: tlog.Checkpoint
    note: bytes
    witnessed_at: tuple[str, ...] = ()
    #: A sentence per witness that could not be reached (the others still hold the note).
    missed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (the note as text, its cosignatures included)."""
        return {
            "owner": self.owner,
            "origin": self.checkpoint.origin,
            "size": self.checkpoint.size,
            "root": _b64(self.checkpoint.root),
            "note": self.note.decode("utf-8"),
            "witnessed_at": list(self.witnessed_at),
            "missed": list(self.missed),
        }


@dataclass(frozen=True, slots=True)
class Holding:
    """The store held against one witnessed checkpoint: ``ok``, or what was found."""

    owner: str
    origin: str
    witness: str
    witnessed_size: int
    size: int
    state: str  # "ok", "rolled_back", "rewritten", "untrusted", "unreachable"
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the store extends the witnessed checkpoint."""
        return self.state == "ok"

    @property
    def finding(self) -> bool:
        """True when what was found refuses the store. A witness that cannot be reached is
        not a finding: the others still hold the store, and writes and ``troth verify`` say
        it was missed."""
        return not self.ok and self.state != "unreachable"

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
        witnesses: Sequence[Witness] = (),
        *,
        policy: CheckpointPolicy | None = None,
        tips: SealedTips | None = None,
        on_verified: Callable[[str, Tip], None] | None = None,
    ) -> None:
        """``witnesses`` in the order they are asked: cosigning ones first, so the folders
        after them keep the cosigned note. ``tips`` lets a new sealer start from the last
        sealed tree (:mod:`troth.service.tips`); ``on_verified`` is told each chain tip
        this sealer verified (the facade's write path then need not verify it again)."""
        self.store = store
        self.keys = keys
        self.ledger = ledger
        self.witnesses = tuple(witnesses)
        self.policy = policy or CheckpointPolicy()
        self.tips = tips
        self.on_verified = on_verified
        # Each owner's tree and head as this sealer last verified them.
        self._known: dict[str, tuple[merkle.Tree, str]] = {}
        self._sealed: dict[str, SealedTip | None] = {}
        self._whole: set[str] = set()  # owners whose tree must start from the first entry
        self._unsaved: set[str] = set()  # owners sealed since the tips were last written
        self._tips_saved_at = float("-inf")

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
        if owner not in self._known and owner not in self._whole:
            sealed = self._sealed_tip(owner)
            if sealed is not None and sealed.checkpoint.size:
                self._known[owner] = (sealed.tree(), sealed.head)
        tree, head = self._known.get(owner, (None, ""))
        new: list[Record] = []
        if tree is not None and 0 < tree.size <= tip.length:
            # The last row verified before must still be there: a rewrite of any earlier
            # row that still verifies changes it, and so does a cut and a regrowth.
            extended = since(self.store, owner, Tip(tree.size, head))
            if extended is None:
                tree = None
            else:
                new = extended
        if tree is None or tree.size == 0 or tree.size > tip.length:
            tree, head = merkle.Tree(), ""
            new = list(self.store.records(owner))
        start = tree.size
        result = check_head(
            verify_records(new, start_index=start, prev_hash=head, owner=owner),
            tip.length,
            tip.head,
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
        if self.on_verified is not None:
            self.on_verified(owner, Tip(result.length, result.head))
        return tree

    def full_tree(self, owner: str) -> merkle.Tree:
        """The tree over every leaf of the chain, verified from its first entry (what
        proofs of any entry, and ``verify``, need)."""
        known = self._known.get(owner)
        if known is not None and known[0].first:
            del self._known[owner]
        self._whole.add(owner)
        return self.tree(owner)

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
        last = self._sealed_tip(owner)
        hint = None if last is None else last.checkpoint.size

        def prove(held: int) -> list[bytes] | None:
            if held > tree.size:
                return None  # the witness refuses it with a sentence of its own
            try:
                return tree.consistency(held, tree.size)
            except ValueError:  # a witness at a size below the compact range we started from
                return self.full_tree(owner).consistency(held, tree.size)

        places, missed = [], []
        for witness in self.witnesses:
            try:
                taken = witness.take(signed, prove, verifiers, hint)
            except StorageError as exc:
                # An unreachable witness must not cost the others the checkpoint; the
                # sentence goes back to the caller (a CLI write prints it as a warning).
                missed.append(exc.message)
                continue
            signed = taken.note  # with the cosignatures of the witnesses so far
            places.append(taken.location)
        if not missed:
            head = self._known[owner][1] if owner in self._known else ""
            nodes = tuple(tree.compact_range(checkpoint.size))
            self._sealed[owner] = SealedTip(checkpoint, signed, nodes, head, time.time())
            self._unsaved.add(owner)
            # A long-lived sealer writes its tips at most every TIP_EVERY seconds (and
            # when it is flushed); a CLI command's sealer writes its one seal at once.
            if time.monotonic() - self._tips_saved_at >= TIP_EVERY:
                self.flush()
        return Seal(owner, checkpoint, signed, tuple(places), tuple(missed))

    def distrust(self, owner: str) -> None:
        """Forget what this sealer and the sealed tips know of an owner's chain (``verify``
        found it broken): every later process verifies it from its first entry, and so
        refuses to write to it until it is repaired."""
        self._known.pop(owner, None)
        self._sealed.pop(owner, None)
        self._unsaved.discard(owner)
        self._whole.add(owner)
        if self.tips is not None:
            self.tips.drop(self.origin(owner))

    def flush(self) -> None:
        """Write the sealed tips not written yet (what the next process starts from)."""
        if self.tips is not None:
            for owner in sorted(self._unsaved):
                tip = self._sealed.get(owner)
                if tip is not None:
                    self.tips.save(tip)
        self._unsaved.clear()
        self._tips_saved_at = time.monotonic()

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
        tree = self.full_tree(whose)
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

    def hold(self, owner: str | None = None, *, full: bool = False) -> list[Holding]:
        """The store held against the newest checkpoint each witness holds for its owners.

        Owners a witness folder knows but the store has no chain for count too (a store
        replaced by an empty or an older one); an HTTP witness is asked about the owners
        the store and the folders know. ``full`` verifies each chain from its first entry
        (``verify``); else from the last sealed tip (a writer's check before it writes).
        """
        prefix = self.ledger + "/"
        # Every origin any witness folder, the sealed tips or the store knows: an HTTP
        # witness cannot list its origins, and a store emptied must still meet it.
        listed = {o for w in self.witnesses for o in w.origins(prefix)}
        listed |= {self.origin(o) for o in self.store.owners()}
        if self.tips is not None:
            listed |= set(self.tips.origins(prefix))
        out = []
        verifiers: list[note.Verifier] | None = None
        for witness in self.witnesses:
            for origin in sorted(listed):
                whose = _owner_of(origin, prefix)
                if owner is not None and whose != owner:
                    continue
                try:
                    data = witness.latest(origin)
                except StorageError as exc:
                    out.append(
                        Holding(
                            whose, origin, witness.where(origin), 0, 0, "unreachable", exc.message
                        )
                    )
                    continue
                except IntegrityError as exc:  # a served note without the witness's cosignature
                    out.append(
                        Holding(
                            whose, origin, witness.where(origin), 0, 0, "untrusted", exc.message
                        )
                    )
                    continue
                if data is None:  # nothing witnessed for it yet
                    continue
                if verifiers is None:
                    verifiers = self.keys.verifier_keys()
                out.append(self._hold_one(whose, origin, witness, data, verifiers, full))
        return out

    def witnessed(self, owner: str) -> int | None:
        """The size of the newest checkpoint a witness holds for ``owner`` that the store
        extends (None: no witness holds one); an :class:`IntegrityError` with the
        sentence of the first finding otherwise. The read path's anchor (readcheck.Anchor).
        """
        sizes = []
        for held in self.hold(owner):
            if held.finding:
                raise IntegrityError(held.message, owner=held.owner, state=held.state)
            if held.ok:
                sizes.append(held.witnessed_size)
        return max(sizes, default=None)

    def guard(self) -> dict[str, int]:
        """Refuse a store behind or beside its witnessed checkpoints; else each owner's length.

        What a writer calls before it writes: the first finding is an :class:`IntegrityError`
        carrying its sentence (:attr:`Holding.finding`). The lengths let :meth:`seal_moved`
        seal what the write changed.
        """
        for held in self.hold():
            if held.finding:
                raise IntegrityError(held.message, owner=held.owner, state=held.state)
        return {owner: self.store.tip(owner).length for owner in self.store.owners()}

    def seal_moved(self, before: dict[str, int]) -> list[Seal]:
        """Seal (and witness) each owner whose chain grew since ``before`` and is due by the
        policy; none without a witness, where a signature alone would guard nothing."""
        moved = [o for o in self.store.owners() if self.store.tip(o).length != before.get(o)]
        return self.seal_due(moved)

    def seal_due(
        self, owners: Sequence[str] | None = None, *, all_grown: bool = False
    ) -> list[Seal]:
        """Seal each owner (default: every owner) whose chain grew past its last checkpoint
        as far, or as long ago, as the policy says (``all_grown``: however little)."""
        if not self.witnesses:
            return []
        out = []
        now = time.time()
        for whose in self.store.owners() if owners is None else owners:
            last = self._sealed_tip(whose)
            length = self.store.tip(whose).length
            size = 0 if last is None else last.checkpoint.size
            elapsed = float("inf") if last is None else now - last.sealed_at
            grown = length - size
            if self.policy.due(grown, elapsed) or (grown > 0 and (all_grown or last is None)):
                out.append(self._seal_tree(whose, self.tree(whose)))
        return out

    # -- helpers --------------------------------------------------------------------------

    def _signer(self) -> note.Signer:
        signer = self.keys.signer(create=True)
        assert signer is not None  # create=True makes one
        return signer

    def _sealed_tip(self, owner: str) -> SealedTip | None:
        """The owner's last sealed tip, read once per sealer (None without one)."""
        if self.tips is None:
            return None
        if owner not in self._sealed:
            self._sealed[owner] = self.tips.load(self.origin(owner), self.keys.verifier_keys())
        return self._sealed[owner]

    def _hold_one(
        self,
        owner: str,
        origin: str,
        witness: Witness,
        data: bytes,
        verifiers: Sequence[note.Verifier],
        full: bool,
    ) -> Holding:
        where = witness.where(origin)
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
            tree = self.full_tree(owner) if full else self.tree(owner)
            if tree.first > witnessed.size:  # begun from a later sealed tip than this one
                tree = self.full_tree(owner)
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

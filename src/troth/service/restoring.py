"""Restore a ledger's rows exactly, and idempotently, into the ledger they came from.

The restore copy an export carries (:mod:`troth.formats.ledger_copy`) is the owner's chain:
the same memory ids, times, statuses, provenance and audit follow from it by the one fold
that builds every projection. Restoring it compares it with the chain already there:

- the ledger is empty: every row is written, verbatim;
- the ledger holds a prefix of the copy: the rest is appended (and an erasure the copy
  records for a row the ledger still holds in full is carried out, the sanctioned rewrite);
- the copy is a prefix of the ledger, or equal to it: nothing changes;
- the two part ways: a :class:`ConflictError` naming the first entry where they differ,
  and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from troth.core import lifecycle
from troth.core.errors import ConflictError
from troth.service.base import Parties
from troth.service.ledger import Ledger
from troth.service.proofs import VerifiedCopy
from troth.service.vectors import Vectors


@dataclass
class Restored:
    """What a restore changed: the memories it created, the ones already there, the rows."""

    created: list[str] = field(default_factory=list)
    unchanged: int = 0
    appended: int = 0
    erased: int = 0


class Restorer:
    """Writes a verified chain into an owner's ledger: all of what is missing, or nothing."""

    def __init__(self, parties: Parties, ledger: Ledger, vectors: Vectors) -> None:
        self.parties = parties
        self.store = parties.store
        self.ledger = ledger
        self.vectors = vectors

    def restore(self, copy: VerifiedCopy) -> Restored:
        """Bring its owner's ledger up to ``copy`` (see the module's cases).

        The copy was verified and folded once, for its owner, when its origin was proven
        (:func:`troth.service.proofs.verify_copy`); it is not checked again here.
        """
        owner, rows, projection = copy.owner, list(copy.rows), copy.projection
        out = Restored()
        with self.store.write(owner) as tx:
            held = list(tx.records(0))
            before = {m for m in projection if tx.get(m) is not None} if held else set()
            for index, (mine, theirs) in enumerate(zip(held, rows, strict=False)):
                erased = mine.entry.redacted or theirs.entry.redacted
                if (
                    mine.entry.hash != theirs.entry.hash
                    or mine.meta != theirs.meta
                    or (mine.entry.content != theirs.entry.content and not erased)
                ):
                    raise ConflictError(
                        f"the ledger of {owner} and the restore copy part at entry #{index}"
                        f" ({mine.entry.hash[:12]} here, {theirs.entry.hash[:12]} in the copy);"
                        " nothing was restored. Restore it into an empty ledger, or bring"
                        " its memories in with --mode import",
                        owner=owner,
                        entry=index,
                    )
                if theirs.entry.redacted and not mine.entry.redacted:
                    tx.erase(index, theirs.entry, theirs.texts)
                    self.ledger.erasing(tx)
                    out.erased += 1
            for record in rows[len(held) :]:
                tx.append(record.entry, record.meta, record.texts)
                out.appended += 1
            if out.appended or out.erased:
                # The whole chain is now the copy's rows (and those after them, if any).
                merged = rows + held[len(rows) :]
                now = lifecycle.fold(merged, owner) if len(held) > len(rows) else projection
                for memory in lifecycle.in_ledger_order(now.values()):
                    tx.put(memory)
            tip = tx.tip()
        out.created = sorted(set(projection) - before)
        out.unchanged = len(set(projection) & before)
        if out.appended or out.erased:
            self.ledger.trust(owner, tip)
            self.vectors.refresh(owner)
        if out.erased:  # as the ledger does after an erasure of its own (Ledger.writing)
            self.ledger.erasure_committed()
        return out

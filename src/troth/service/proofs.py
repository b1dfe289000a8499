"""Exports carry their proof: the signed checkpoint an export was cut at, and its check.

Every troth export carries a restore copy of the owner's ledger rows
(:mod:`troth.formats.ledger_copy`) and the signed checkpoint (a C2SP signed note over a C2SP
tlog checkpoint, :mod:`troth.service.sealing`) of the tree those rows make. :class:`Proofs`
signs that checkpoint when an export is made, and checks an export's origin when it comes
back: the note must verify under this installation's key or a key the operator trusts
(``trusted.keys``), it must name the owner the copy belongs to, and the copy's rows must hash
to its tree size and root. Only an export whose origin is proven this way is restored
verbatim; anything else comes in as an import (docs/formats.md, "Restore and its proof").
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass
from types import MappingProxyType
from typing import Final

from troth.core import lifecycle, merkle
from troth.core.errors import FormatError, IntegrityError
from troth.core.events import Record, chain_problem
from troth.core.records import MemoryRecord
from troth.formats import note, tlog
from troth.formats.ledger_copy import LedgerCopy
from troth.service.sealing import Sealer

# What only :func:`verify_copy` hands :class:`VerifiedCopy`: a copy made any other way is
# refused as it is made, since ``Restorer.restore`` writes its rows without checking them.
_VERIFIED: Final = object()


@dataclass(frozen=True)
class VerifiedCopy:
    """A restore copy's rows, numbered from 0, once they verify, and the memories they fold to.

    Made only by :func:`verify_copy` (any other construction raises TypeError, and
    ``dataclasses.replace`` ValueError, as it is not handed the token), so a restore
    verifies and folds its copy once: the check of the export's view and the restore's
    writes both take it from here.
    """

    owner: str
    rows: tuple[Record, ...]
    projection: Mapping[str, MemoryRecord]
    made_by: InitVar[object]

    def __post_init__(self, made_by: object) -> None:
        if made_by is not _VERIFIED:
            raise TypeError(
                "a VerifiedCopy is made by verify_copy, which verifies its rows; call that"
            )

    def in_order(self) -> list[MemoryRecord]:
        """The memories in ledger order: what every export is a view of."""
        return lifecycle.in_ledger_order(self.projection.values())


def verify_copy(records: Sequence[Record], owner: str) -> VerifiedCopy:
    """``owner``'s rows renumbered from 0, once the chain and every row's metadata verify,
    with their fold.

    An IntegrityError (``broken_at``, ``reason``) names the first row that does not verify;
    an InvalidInputError says the chain verifies but its events do not replay.
    """
    rows = tuple(Record(i, r.entry, r.meta, dict(r.texts)) for i, r in enumerate(records))
    problem = chain_problem(rows)
    if problem is not None:
        at, why = problem
        raise IntegrityError(
            f"entry #{at} of the restore copy does not verify ({why}); nothing was restored",
            broken_at=at,
            reason=why,
        )
    refusal = "the restore copy verifies but its events do not replay"
    projection = MappingProxyType(lifecycle.replay(rows, owner, refusal=refusal))
    return VerifiedCopy(owner, rows, projection, _VERIFIED)


@dataclass(frozen=True)
class Origin:
    """Whether an export's origin is proven, and the sentence that says why (or why not);
    a proven one carries its copy, verified and folded."""

    proven: bool
    reason: str
    checkpoint: tlog.Checkpoint | None = None
    signed_by: tuple[str, ...] = ()
    copy: VerifiedCopy | None = None


def origin_owner(origin: str) -> str:
    """The owner a checkpoint origin (``<ledger>/<owner, percent-encoded>``) names."""
    return urllib.parse.unquote(origin.rsplit("/", 1)[-1])


def check_entries(
    checkpoint: tlog.Checkpoint, entry_hashes: Sequence[str], *, where: str
) -> str | None:
    """Why entries are not the tree a checkpoint signs (None when they are).

    A file whose last entries were cut off holds fewer entries than the checkpoint's size;
    one edited after it was signed hashes to another root.
    """
    size = len(entry_hashes)
    if size < checkpoint.size:
        missing = checkpoint.size - size
        return (
            f"{where} holds {size} entries but its checkpoint was signed at {checkpoint.size}:"
            f" the last {missing} {'was' if missing == 1 else 'were'} cut off"
        )
    if size > checkpoint.size:
        return (
            f"{where} holds {size} entries but its checkpoint was signed at {checkpoint.size}:"
            " entries were added after it was signed"
        )
    if merkle.Tree.of_entries(entry_hashes).root() != checkpoint.root:
        return (
            f"the {size} entries of {where} do not hash to the root its checkpoint signs:"
            " the file was changed after it was signed"
        )
    return None


class Proofs:
    """Signs the checkpoint of an export, and checks one an export carries."""

    def __init__(self, sealer: Sealer | None = None) -> None:
        self.sealer = sealer

    def sign(self, owner: str, records: Sequence[Record]) -> bytes | None:
        """The signed note of the tree of ``records`` (None when no sealer is configured)."""
        if self.sealer is None:
            return None
        return self.sealer.seal_export(owner, [r.entry.hash for r in records]).note

    def open(self, data: bytes, *, where: str) -> tlog.Checkpoint:
        """A checkpoint note, once a key this installation trusts has verified it."""
        known = self.sealer.trusted() if self.sealer is not None else []
        if not known:
            raise IntegrityError(
                f"{where}: no signing key is configured here, so no checkpoint can be checked;"
                " set TROTH_SIGNING_KEY or add the signer's key to trusted.keys"
            )
        opened, _by = note.open_note(data, known)
        return tlog.decode(opened.text)

    def origin(
        self, copy: LedgerCopy | None, checkpoint: bytes | None, *, owner: str, where: str
    ) -> Origin:
        """Whether an export's restore copy is proven to be ``owner``'s ledger as signed.

        A copy whose chain verifies but whose events do not replay is refused with an
        InvalidInputError: it is signed, so it is no import either.
        """
        if copy is None:
            return Origin(False, f"{where} carries no restore copy of a troth ledger")
        if checkpoint is None:
            return Origin(False, f"{where} carries no signed checkpoint")
        try:
            opened = self.open(checkpoint, where=where)
        except (IntegrityError, FormatError) as exc:
            return Origin(False, f"its checkpoint cannot be trusted here: {exc.message}")
        claimed = origin_owner(opened.origin)
        if claimed != copy.owner:
            return Origin(
                False,
                f"its checkpoint is of {claimed}'s ledger but its restore copy says {copy.owner}",
                opened,
            )
        if copy.owner != owner:
            return Origin(
                False,
                f"it is {copy.owner}'s ledger, not {owner}'s; restore it as {copy.owner}",
                opened,
            )
        problem = check_entries(opened, [r.entry.hash for r in copy.records], where=where)
        if problem is not None:
            return Origin(False, problem, opened)
        # The root commits to each entry's content_hash: the texts and metadata must match too.
        try:
            verified = verify_copy(copy.records, owner)
        except IntegrityError as exc:
            at, why = exc.details["broken_at"], exc.details["reason"]
            return Origin(
                False, f"the restore copy in {where} does not verify at entry #{at} ({why})", opened
            )
        reason = f"signed checkpoint of {opened.size} entries verifies"
        return Origin(True, reason, opened, copy=verified)

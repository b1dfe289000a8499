"""Integrity: verify each chain and its projection, rebuild, reindex, restore and re-anchor.

The ledger is the source of truth and everything else is derived from it; these use cases
check that derivation, redo it, or write a whole chain in from elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from troth.core import lifecycle
from troth.core.chain import Entry, Verification
from troth.core.chain import reanchor as reanchor_chain
from troth.core.errors import (
    ConflictError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    PolicyDeniedError,
)
from troth.core.events import Record, check_head, meta_problem, verify_records
from troth.core.records import MemoryRecord, check_principal, principal_kind
from troth.service.base import Parties
from troth.service.ledger import Ledger
from troth.service.readcheck import ReadCheck
from troth.service.vectors import Vectors
from troth.storage.base import Store, Tip


@dataclass(frozen=True, slots=True)
class OwnerReport:
    """Verification of one owner: the chain, then the projection against a rebuild."""

    owner: str
    chain: Verification
    projection_ok: bool
    mismatch: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when both the chain and the projection verify."""
        return self.chain.ok and self.projection_ok

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "owner": self.owner,
            "ok": self.ok,
            **self.chain.to_dict(),
            "projection_ok": self.projection_ok,
            "mismatch": self.mismatch,
        }


class Integrity:
    """The use cases that check, rebuild or rewrite what is derived from the ledger."""

    def __init__(
        self,
        parties: Parties,
        ledger: Ledger,
        vectors: Vectors,
        store: Store,
        check: ReadCheck,
    ) -> None:
        self.parties = parties
        self.store = store  # the backend itself: this reports on what the read path refuses
        self.ledger = ledger
        self.vectors = vectors
        self.check = check

    def verify(self, owner: str | None = None) -> list[OwnerReport]:
        """Verify each chain and compare each stored projection with a rebuild."""
        reports = []
        for whose in self.parties.owners(owner):
            chain = self._verify_chain(whose)
            projection_ok, mismatch = True, None
            if chain.ok:
                projection_ok, mismatch = self._compare_projection(whose)
            reports.append(OwnerReport(whose, chain, projection_ok, mismatch))
        return reports

    def _verify_chain(self, owner: str) -> Verification:
        """The chain by personaxis and troth rules, held against its recorded head."""
        tip = self.store.tip(owner)
        return check_head(
            verify_records(self.store.records(owner), owner=owner), tip.length, tip.head
        )

    def _compare_projection(self, owner: str) -> tuple[bool, dict[str, Any] | None]:
        try:
            rebuilt = lifecycle.fold(self.store.records(owner), owner)
        except (NotFoundError, InvalidInputError, ConflictError) as exc:
            return False, {"error": exc.message}
        return self._compare_with(owner, rebuilt)

    def _compare_with(
        self, owner: str, rebuilt: Mapping[str, MemoryRecord]
    ) -> tuple[bool, dict[str, Any] | None]:
        """Whether the stored projection equals ``rebuilt``, else the first field that differs."""
        try:
            stored = self.store.projection(owner)
        except IntegrityError as exc:
            return False, {**exc.details, "error": exc.message}
        for memory_id in sorted(set(rebuilt) | set(stored)):
            left, right = rebuilt.get(memory_id), stored.get(memory_id)
            if left is None or right is None:
                return False, {"memory": memory_id, "field": "existence"}
            if left == right:
                continue
            a, b = left.to_dict(), right.to_dict()
            for name in a:
                if a[name] != b.get(name):
                    return False, {
                        "memory": memory_id,
                        "field": name,
                        "stored": b.get(name),
                        "ledger": a[name],
                    }
        return True, None

    def rebuild(self, owner: str | None = None) -> list[dict[str, Any]]:
        """Repair: recompute each projection from its ledger, once the ledger is trusted.

        The chain must verify (owner and redaction rules included) and, where the facade
        is anchored to witnesses, extend the newest checkpoint a witness holds — a rewritten
        chain, a cut tail or a silent redaction is refused, and nothing is written. Reports
        whether each rebuilt projection equalled the stored one; the read path then forgets
        what it had found, and serves (and takes writes) again.
        """
        out = []
        for whose in self.parties.owners(owner):
            chain = self._verify_chain(whose)
            if not chain.ok:
                raise IntegrityError(
                    f"the ledger of {whose} is broken at entry #{chain.broken_at} ({chain.reason});"
                    " a projection cannot be rebuilt from it. Restore the data from a good copy"
                    " (one `troth verify` passes)",
                    owner=whose,
                    broken_at=chain.broken_at,
                )
            self._witnessed(whose)
            rebuilt = lifecycle.fold(self.store.records(whose), whose)
            equal, mismatch = self._compare_with(whose, rebuilt)
            self.store.replace_projection(whose, rebuilt)
            self.vectors.refresh(whose)
            self.check.rewritten(whose)
            out.append(
                {"owner": whose, "memories": len(rebuilt), "equal": equal, "mismatch": mismatch}
            )
        return out

    def _witnessed(self, owner: str) -> None:
        """Refuse to rebuild from a chain no witnessed checkpoint vouches for (when anchored)."""
        anchor = self.check.anchor
        if anchor is None:
            return  # a library facade without witnesses: the chain alone (docs/ledger.md)
        try:
            size = anchor(owner)
        except IntegrityError as exc:
            details = {k: v for k, v in exc.details.items() if k != "owner"}
            raise IntegrityError(
                f"{exc.message}; nothing was rebuilt", owner=owner, **details
            ) from exc
        if size is None:
            raise IntegrityError(
                f"no witness holds a checkpoint of {owner}'s ledger, so nothing outside the"
                " store vouches for its chain; nothing was rebuilt. If you trust the chain as"
                f" it stands, sign and witness it with `troth seal --owner {owner}`, then"
                " rebuild",
                owner=owner,
                state="unwitnessed",
            )

    # -- restore and re-anchor ------------------------------------------------------------

    def _may_rewrite(self, owner: str, actor: str | None, verb: str) -> tuple[str, str]:
        who = self.parties.actor(actor)
        whose = check_principal(owner, "owner")
        if who != whose and principal_kind(who) != "service":
            raise PolicyDeniedError(
                f"only {whose} (or a service principal) may {verb} {whose}'s ledger; {who} may not",
                actor=who,
                owner=whose,
            )
        return who, whose

    def restore_chain(
        self, owner: str, entries: Iterable[Entry | Record], *, actor: str | None = None
    ) -> Verification:
        """Write a personaxis chain verbatim into an empty ledger and project it.

        ``entries`` are personaxis entries (e.g. ``formats.personaxis.decode`` of an
        ``episodic.jsonl``), or stored rows with their metadata and texts (a troth
        ledger moved between stores). Rows are kept byte for byte — exporting the ledger
        gives the same file back. Plain entries become "foreign" memories (active, their
        tombstones forget them). The chain must verify and the ledger must be empty;
        otherwise nothing is written. Only the owner, or a service principal, may restore.
        """
        _who, whose = self._may_rewrite(owner, actor, "restore")
        records: list[Record] = []
        for index, item in enumerate(entries):
            if isinstance(item, Record):
                records.append(Record(index, item.entry, item.meta, dict(item.texts)))
            elif isinstance(item, Entry):
                records.append(Record(index, item))
            else:
                raise InvalidInputError(
                    f"entry #{index} is a {type(item).__name__}; give personaxis entries"
                    " (formats.personaxis.decode) or ledger records",
                    index=index,
                )
        result = verify_records(records, owner=whose)
        broken = next((r.seq for r in records if meta_problem(r) is not None), None)
        if not result.ok or broken is not None:
            at = result.broken_at if not result.ok else broken
            why = result.reason if not result.ok else meta_problem(records[at or 0])
            raise IntegrityError(
                f"entry #{at} does not verify ({why}); nothing was restored."
                " Restore the file as it was exported, or re-anchor a legacy log first",
                broken_at=at,
                reason=why,
            )
        refusal = "the chain verifies but its troth events do not replay"
        projection = lifecycle.replay(records, whose, refusal=refusal)
        with self.store.write(whose) as tx:
            tip = tx.tip()
            if tip.length:
                raise ConflictError(
                    f"the ledger of {whose} already has {tip.length} entries; restore only"
                    " into an empty ledger (a new owner)",
                    owner=whose,
                    length=tip.length,
                )
            for record in records:
                tx.append(record.entry, record.meta, record.texts)
            for memory in lifecycle.in_ledger_order(projection.values()):
                tx.put(memory)
        self.ledger.trust(whose, Tip(result.length, result.head))
        self.vectors.refresh(whose)
        self.check.rewritten(whose)
        return result

    def reanchor(self, owner: str | None = None, *, actor: str | None = None) -> dict[str, str]:
        """Re-anchor a ledger holding legacy (≤0.10) lines into v1.0 form.

        Every hash from the first legacy line on changes (``migrateMemoryChain``);
        ``target:`` tags follow. Returns old hash → new hash for every entry ({} when there
        is no legacy line). Ids of foreign memories derive from entry hashes, so they change
        too; the projection is rebuilt.
        """
        _who, whose = self._may_rewrite(owner or self.parties.principal, actor, "re-anchor")
        with self.ledger.writing(whose) as tx:
            records = list(tx.records(0))
            if not any(r.entry.is_legacy for r in records):
                return {}
            migrated, remapped = reanchor_chain([r.entry for r in records])
            for record, entry in zip(records, migrated, strict=True):
                if entry != record.entry:
                    tx.rewrite(record.seq, entry)
            renewed = [
                Record(r.seq, e, r.meta, r.texts) for r, e in zip(records, migrated, strict=True)
            ]
        self.store.replace_projection(whose, lifecycle.fold(renewed, whose))
        self.vectors.refresh(whose)
        self.check.rewritten(whose)  # a sanctioned rewrite: the read path verifies it afresh
        return {old: new for old, new in remapped.items() if old != new}

"""Export and import: PCP archives, personaxis logs, HUX records and other tools' memories.

Two ways in:

- **restore** — the same ledger coming back. The facade's restore (``service/returns.py``)
  writes an export's restore copy verbatim once its signed checkpoint proves its origin;
  here, ``mode="restore"`` is the page-level primitive for a PCP archive or page: every key
  is kept, server-stamped ones included, and no ``x_import`` is added;
- **import** — memories from elsewhere: each gets ``x_import`` (format, import instant,
  source id, path and sha256, the source's ``recorded_at``, ``source`` and ``review``, and
  the source values PCP has no key for); ``recorded_at`` becomes the import instant and
  what an agent or a tool made comes in ``proposed``.

Every export a surface hands out carries its proof (docs/formats.md): the restore copy of
the rows it was made from (``formats/ledger_copy.py``) and, with a sealer attached, the
signed checkpoint of those rows. ``service/exports.py`` makes those exports (the bare bytes,
for a library caller, too) from the views here.

A run reads and checks its whole input first: any defect (bad JSON or YAML, a broken chain,
a path that climbs out, a bomb, a checksum) is a FormatError naming the file and line, and
nothing is written. Then each memory is written in its own transaction: the ones the ledger
refuses (policy, limits) are reported with the reason and the rest are kept. A memory whose
idempotency key — (source path or id, sha256 of the source bytes) — is already in the
owner's projection is left alone, so importing the same input twice changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from troth.core import lifecycle
from troth.core.chain import format_ts
from troth.core.errors import (
    ConflictError,
    FormatError,
    InvalidInputError,
    NotFoundError,
    PolicyDeniedError,
)
from troth.core.events import Event, Record
from troth.core.records import MemoryRecord, check_principal
from troth.core.versions import VERSION
from troth.formats import archive, hux, ledger_copy, pcp, registry
from troth.formats.registry import Item, Refusal
from troth.service import validation as check
from troth.service.admission import Admission, check_admitted_status, refuse_unstored
from troth.service.base import Parties, steward_channel
from troth.service.drafts import CreationPlan, Draft
from troth.service.integrity import Integrity
from troth.service.ledger import Ledger
from troth.service.proofs import Proofs
from troth.service.provenance import imported

MODES: Final = ("import", "restore")
EXPORT_FORMATS: Final = ("pcp", "personaxis", "hux")
RESTORABLE: Final = ("pcp", "pcp-page", "personaxis", "hux")
MAX_FILE_BYTES: Final = archive.DEFAULT_LIMITS.max_file_bytes
MAX_DIRECTORY_FILES: Final = archive.DEFAULT_LIMITS.max_members
BATCH: Final = 500  # memories written per transaction on import and restore
_DRAFT_FIELDS: Final = frozenset(f.name for f in fields(Draft))

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: its format, bytes, how many memories, and what it left out."""

    format: str
    data: bytes
    items: int
    omitted: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (without the bytes)."""
        return {
            "format": self.format,
            "items": self.items,
            "bytes": len(self.data),
            "omitted": [dict(o) for o in self.omitted],
        }


@dataclass
class ImportReport:
    """The outcome of one import run: created ids, unchanged items, refusals with reasons."""

    format: str
    mode: str
    owner: str
    created: list[str] = field(default_factory=list)
    unchanged: int = 0
    refused: list[Refusal] = field(default_factory=list)
    # Why a restore came in as an import (its origin is not proven), when it did.
    as_import: str | None = None
    approved: list[str] = field(default_factory=list)
    held: list[Refusal] = field(default_factory=list)  # kept out of a batch approval, and why

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        out: dict[str, Any] = {
            "format": self.format,
            "mode": self.mode,
            "owner": self.owner,
            "created": len(self.created),
            "unchanged": self.unchanged,
            "refused": [{"where": r.where, "reason": r.reason} for r in self.refused],
            "ids": list(self.created),
        }
        if self.as_import is not None:
            out["as_import"] = self.as_import
        if self.approved or self.held:
            out["approved"] = list(self.approved)
            out["held"] = [{"id": r.where, "reason": r.reason} for r in self.held]
        return out


# -- export ------------------------------------------------------------------------------------


def _stamp(at: datetime | None) -> str:
    return format_ts(at or datetime.now(UTC))


_OMISSIONS: Final = {
    "forgotten": ("unsupported", "forgotten at the owner's request; the ledger keeps the trail"),
    "expired": ("retention_expired", "retention ran out and the text was erased"),
    "no_store": ("unsupported", "the policy never stored their content"),
    "redacted": ("unsupported", "erased at the owner's request; the ledger keeps the trail"),
}


def _omission(memory: MemoryRecord) -> str | None:
    if memory.redacted:
        return "redacted"
    if memory.status not in pcp.EXPORTED_STATUSES or not memory.content:
        return memory.status
    return None


def pages_of(memories: Sequence[MemoryRecord]) -> dict[str, tuple[MemoryRecord, bytes]]:
    """The PCP page of each exportable memory by its path (ledger order decides clashes)."""
    pages: dict[str, tuple[MemoryRecord, bytes]] = {}
    for item in memories:
        if _omission(item) is not None:
            continue
        path = item.path or pcp.default_path(item)
        if path in pages:
            path = pcp.default_path(item)
        page = pcp.memory_to_page(item)
        pcp.validate_frontmatter(page.frontmatter, where=f"memory/{path}.md")
        pages[path] = (item, pcp.encode_page(page))
    return pages


def in_order(records: Sequence[Record], owner: str) -> list[MemoryRecord]:
    """The memories ``records`` make, in ledger order: what every export is a view of."""
    return lifecycle.in_ledger_order(lifecycle.fold(records, owner).values())


def hux_bytes(memories: Sequence[MemoryRecord], *, lines: bool) -> bytes:
    return hux.encode(memories, lines=lines)


# -- import ------------------------------------------------------------------------------------


def read_sources(path: Path) -> list[tuple[str, bytes]]:
    """(name, bytes) for a file, or for every ``.md`` file under a directory."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*.md") if p.is_file() or p.is_symlink())
        for note in found:
            _refuse_link(note, folder=path)
        if len(found) > MAX_DIRECTORY_FILES:
            raise FormatError(f"{path}: more than {MAX_DIRECTORY_FILES} notes; import fewer")
        return [(str(p.relative_to(path.parent)), _bytes(p)) for p in found]
    if not path.is_file():
        raise NotFoundError(f"{path} does not exist", path=str(path))
    return [(path.name, _bytes(path))]


def _refuse_link(note: Path, *, folder: Path) -> None:
    """A note in a folder must be a plain file of that folder, not a way out of it.

    A symbolic link, or a hard link (a file with more than one name: the other name may be
    anywhere on the disk), would import a file the person never put in the folder.
    """
    if note.is_symlink():
        raise FormatError(
            f"{note}: is a symbolic link; copy the note into {folder} to import it",
            file=str(note),
        )
    links = note.stat().st_nlink
    if links > 1:
        raise FormatError(
            f"{note}: is a hard link (a file with {links} names, the others perhaps outside"
            f" {folder}); copy the note into the folder to import it",
            file=str(note),
        )


def _bytes(path: Path) -> bytes:
    limit = archive.DEFAULT_LIMITS.max_total_bytes
    size = path.stat().st_size
    is_archive = path.suffix in (".tar", ".zip", ".tgz", ".gz")
    if size > (limit if is_archive else MAX_FILE_BYTES):
        raise FormatError(
            f"{path}: {size} bytes is over the limit of"
            f" {limit if is_archive else MAX_FILE_BYTES} for one file",
            file=str(path),
        )
    return path.read_bytes()


def _draft(item: Item, *, restore: bool, instant: str) -> Draft:
    values = {k: v for k, v in item.fields.items() if k in _DRAFT_FIELDS}
    unknown = sorted(set(item.fields) - _DRAFT_FIELDS)
    if unknown:
        raise InvalidInputError(f"no memory field {unknown[0]!r}")
    extra = dict(values.pop("extra", None) or {})
    if not restore:
        values["recorded_at"] = instant
        if item.x_import is not None and "x_import" not in extra:
            extra["x_import"] = {**item.x_import, "at": instant}
    return Draft(**values, extra=extra, stamps=dict(item.stamps))


# NotFoundError: the memory an item supersedes was refused when its batch was retried.
_REFUSALS: Final = (InvalidInputError, PolicyDeniedError, ConflictError, NotFoundError)
HIDDEN_NOTE: Final = "hidden in the restored archive"


@dataclass(frozen=True)
class _Planned:
    """A planned item, and the memories to forget once it is written: (id, note) pairs."""

    item: Item
    plan: CreationPlan
    retire: tuple[tuple[str, str], ...] = ()


def _retire(
    item: Item,
    memory_id: str,
    prior: str | None,
    *,
    fresh: set[str],
    successor_known: str | None,
) -> tuple[tuple[str, str], ...]:
    """The memories to forget once ``item`` is written as ``memory_id``.

    A version an item supersedes that this same run wrote is history in its source, so it
    leaves review as soon as its successor is written (one already in the ledger follows the
    edit rule: it leaves retrieval when the person approves the new version). A version
    whose successor is already in the ledger is history at once; a version the source
    deleted (``item.forget``) is forgotten with the source's note.
    """
    out: list[tuple[str, str]] = []
    if prior is not None and prior in fresh:
        out.append((prior, f"superseded by {memory_id} in the imported history"))
    if successor_known is not None:
        out.append((memory_id, f"superseded by {successor_known} in the imported history"))
    elif item.forget is not None:
        out.append((memory_id, item.forget))
    return tuple(out)


def not_held(
    held: Mapping[str, MemoryRecord], items: list[Item], report: ImportReport
) -> list[Item]:
    """The items that are not a memory the ledger holds already (same id, same text): those
    are counted unchanged, so importing an export into its own ledger adds nothing."""
    out = []
    for item in items:
        same = held.get(str((item.x_import or {}).get("id")))
        if same is not None and same.content == item.content:
            report.unchanged += 1
        else:
            out.append(item)
    return out


class Portability:
    """Export and import over the facade's collaborators: every write takes the ledger's path."""

    def __init__(
        self,
        parties: Parties,
        admission: Admission,
        ledger: Ledger,
        integrity: Integrity,
    ) -> None:
        self.parties = parties
        self.store = parties.store
        self.admission = admission
        self.ledger = ledger
        self.integrity = integrity
        # Signs what is exported and checks what comes back; without a sealer (a library
        # facade nobody attached one to) exports carry no checkpoint and restores are imports.
        self.proofs = Proofs()

    def _owner(self, owner: str | None) -> str:
        return check_principal(owner, "owner") if owner is not None else self.parties.principal

    def pcp_files(
        self, *, owner: str | None = None, at: datetime | None = None, proof: bool = True
    ) -> tuple[dict[str, bytes], tuple[str, ...], tuple[dict[str, Any], ...]]:
        """The files of an owner's PCP archive, the ids of the exported memories, the omissions.

        With ``proof`` the archive also carries its restore copy (``troth/ledger.jsonl``) and,
        when a sealer is attached, the signed checkpoint it was cut at
        (``troth/checkpoint.note``); pages and copy are made from the same rows.
        """
        whose = self._owner(owner)
        exported_at = _stamp(at)
        records = list(self.store.records(whose))
        everything = in_order(records, whose)
        left_out: dict[str, int] = {}
        for item in everything:
            why = _omission(item)
            if why is not None:
                left_out[why] = left_out.get(why, 0) + 1
        pages = pages_of(everything)
        audit_lines: list[bytes] = []
        moments: list[str] = []
        for path in sorted(pages):
            item, _ = pages[path]
            seen = pcp.view(item)
            for entry in seen.audit:
                line = {"path": path, "id": seen.id, **entry}
                audit_lines.append(
                    (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
                )
                moments.append(entry["at"])
        omitted = tuple(
            {
                "what": f"{count} {status} memor{'y' if count == 1 else 'ies'}",
                "reason": _OMISSIONS.get(status, ("unsupported", ""))[0],
                "detail": _OMISSIONS.get(status, ("", status))[1],
            }
            for status, count in sorted(left_out.items())
        )
        extra: dict[str, bytes] = {}
        if proof:
            extra[ledger_copy.ARCHIVE_LEDGER] = ledger_copy.encode(whose, records)
            note = self.proofs.sign(whose, records)
            if note is not None:
                extra[ledger_copy.ARCHIVE_CHECKPOINT] = note
        files = archive.build(
            [(path, data) for path, (_, data) in pages.items()],
            audit_lines,
            owner=whose,
            exported_at=exported_at,
            version=VERSION,
            sensitive_pages=sum(1 for m, _ in pages.values() if m.sensitivity == "sensitive"),
            omitted=omitted,
            audit_range=(min(moments), max(moments)) if moments else None,
            extra=extra,
        )
        ids = tuple(item.id for item, _ in pages.values())
        return files, ids, omitted

    def record_export(
        self,
        result: ExportResult,
        *,
        owner: str,
        memory_ids: Sequence[str],
        actor: str | None = None,
    ) -> None:
        """Append the ``export`` event for bytes already made: who exported what, and its sha256.

        Each listed memory gets an ``exported`` audit item (no new revision). The event comes after
        the bytes, so an export never contains its own export event. The actor is ``actor`` or
        the facade's principal; the adapters refuse a caller without the right before exporting.
        """
        digest = hashlib.sha256(result.data).hexdigest()
        who = actor or self.parties.principal
        event = Event(
            "export",
            f"export_{digest[:24]}",
            who,
            fields={
                "format": result.format,
                "sha256": digest,
                "bytes": len(result.data),
                "items": result.items,
            },
            memories=tuple(memory_ids),
        )
        with self.ledger.writing(owner) as tx:
            self.ledger.commit(
                tx,
                event,
                content=f"[exported {len(memory_ids)} memories as {result.format}]",
                channel=steward_channel(who, owner),
            )

    def archive_bytes(
        self, whose: str, at: datetime | None, container: str
    ) -> tuple[ExportResult, tuple[str, ...], dict[str, bytes]]:
        """An owner's PCP archive (not audited), the ids it speaks for, and its members."""
        if container not in ("tar", "zip"):
            raise InvalidInputError(
                f"an archive is tar or zip; got {container!r}", field="container"
            )
        files, ids, omitted = self.pcp_files(owner=whose, at=at)
        exported_at = json.loads(files[archive.MANIFEST])["exported_at"]
        writer = archive.write_zip if container == "zip" else archive.write_tar
        return ExportResult("pcp", writer(files, exported_at), len(ids), omitted), ids, files

    def export_archive(
        self,
        *,
        owner: str | None = None,
        at: datetime | None = None,
        container: str = "tar",
    ) -> ExportResult:
        """An owner's memories as a PCP archive (``tar`` or ``zip``), reproducible given ``at``.

        The export is audited: once the bytes are made, one ``export`` event is appended.
        """
        whose = self._owner(owner)
        result, ids, _files = self.archive_bytes(whose, at, container)
        self.record_export(result, owner=whose, memory_ids=ids)
        return result

    def _keys(self, owner: str) -> set[tuple[str, str]]:
        """The idempotency keys already in an owner's projection."""
        return set(self._ids(owner))

    def _ids(self, owner: str) -> dict[tuple[str, str], str]:
        """The memory id of each idempotency key already in an owner's projection."""
        out = {}
        for item in self.store.projection(owner).values():
            key = item.stamps.get("key")
            if isinstance(key, list) and len(key) == 2:
                out[(str(key[0]), str(key[1]))] = item.id
        return out

    def _plan(
        self,
        item: Item,
        *,
        owner: str,
        restore: bool,
        instant: str,
        supersedes: str | None = None,
    ) -> CreationPlan:
        """Validate one item and let the policy decide it, as ``Memory.admit`` does; no write.

        With ``supersedes`` (the memory id an item's ``supersedes`` key names) it is an edit.
        """
        check_admitted_status(item.status)
        if item.forget is not None:
            check.note(item.forget, "forget")
        plan = self.admission.plan(
            item.content,
            owner=owner,
            actor=item.actor if restore else None,
            channel=item.channel,
            on_behalf_of=item.on_behalf_of if restore else None,
            draft=_draft(item, restore=restore, instant=instant),
            details={},
            status=item.status,
            supersedes=supersedes,
        )
        refuse_unstored(plan.decision)
        if not restore:
            # The writer the source named (this import's provenance, or an earlier one's).
            carried = item.x_import or (item.fields.get("extra") or {}).get("x_import") or {}
            source = carried.get("source") if isinstance(carried, Mapping) else None
            if isinstance(source, Mapping):
                plan = imported(plan, source.get("principal"))
        return plan

    def _write_batch(self, owner: str, planned: Sequence[_Planned]) -> list[str]:
        """Write planned items in one transaction: each is its entries (its hide, the forgets
        it makes due) or nothing."""
        created: list[str] = []
        # Embedded in one batch before the chain is held, as remember_many does.
        vectors = self.admission.plan_vectors([p.plan for p in planned])
        principal = self.parties.principal
        steward = steward_channel(principal, owner)
        with self.ledger.writing(owner) as tx:
            for write in planned:
                result = self.ledger.write_plan(tx, write.plan, vectors)
                if write.item.hidden:
                    hide = Event("hide", result.id, principal, texts={"note": HIDDEN_NOTE})
                    self.ledger.commit(tx, hide, content=f"[hidden {result.id}]", channel=steward)
                for memory_id, note in write.retire:
                    current = self.parties.load(tx, memory_id)
                    if current.status in ("proposed", "active"):  # not already superseded
                        self.ledger.append_change(
                            tx,
                            current,
                            "forget",
                            actor=principal,
                            texts={"note": note},
                            channel=steward,
                        )
                created.append(result.id)
        return created

    def write_items(
        self,
        items: Sequence[Item],
        *,
        owner: str,
        restore: bool,
        report: ImportReport,
        at: datetime | None = None,
        progress: Progress | None = None,
        batch: int = BATCH,
        known: set[tuple[str, str]] | None = None,
    ) -> ImportReport:
        """Write decoded items ``batch`` at a time: skip known keys, report refusals, keep the rest.

        Every item of a batch is validated and decided by the policy first (as ``Memory.admit``
        does); the ones refused are reported and the rest are written in one transaction, each
        as its own entries (a hidden page's ``hide`` with it). Should the store refuse a batch
        anyway, it is rolled back whole and written again item by item, so a refusal is still
        reported for its item alone and nothing is ever half-written.
        """
        if batch < 1:
            raise InvalidInputError("batch must be at least 1", field="batch")
        self.admission.may_admit(owner)
        instant = _stamp(at)
        if known is None:
            known = self._keys(owner)
        # Version chains (Item.supersedes): memory ids by key, of the ledger and of this run.
        chains = any(i.supersedes for i in items)
        ids = self._ids(owner) if chains else {}
        successors = {i.supersedes: i.key for i in items if i.supersedes}
        fresh: set[str] = set()
        done = 0
        for start in range(0, len(items), batch):
            planned: list[_Planned] = []
            for item in items[start : start + batch]:
                if item.key in known:
                    report.unchanged += 1
                    continue
                prior = ids.get(item.supersedes) if item.supersedes else None
                try:
                    plan = self._plan(
                        item, owner=owner, restore=restore, instant=instant, supersedes=prior
                    )
                except _REFUSALS as exc:
                    report.refused.append(Refusal(item.where, exc.message))
                else:
                    new_id = plan.event.memory
                    after = successors.get(item.key)
                    later = ids.get(after) if after in known else None
                    retire = _retire(item, new_id, prior, fresh=fresh, successor_known=later)
                    planned.append(_Planned(item, plan, retire))
                    known.add(item.key)  # a repeated key within one input is written once
                    if chains:
                        ids[item.key] = new_id
                        fresh.add(new_id)
            try:
                report.created.extend(self._write_batch(owner, planned))
            except _REFUSALS:
                for write in planned:
                    try:
                        report.created.extend(self._write_batch(owner, [write]))
                    except _REFUSALS as exc:
                        report.refused.append(Refusal(write.item.where, exc.message))
                        known.discard(write.item.key)
            done = min(start + batch, len(items))
            if progress is not None:
                progress(done, len(items))
        return report

    def import_bytes(
        self,
        data: bytes,
        *,
        name: str,
        fmt: str | None = None,
        mode: str = "import",
        owner: str | None = None,
        reanchor: bool = False,
        at: datetime | None = None,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import (or restore) one file's bytes into an owner's ledger."""
        return self.import_files(
            [(name, data)],
            fmt=fmt,
            mode=mode,
            owner=owner,
            reanchor=reanchor,
            at=at,
            progress=progress,
        )

    def import_files(
        self,
        sources: Sequence[tuple[str, bytes]],
        *,
        fmt: str | None = None,
        mode: str = "import",
        owner: str | None = None,
        reanchor: bool = False,
        at: datetime | None = None,
        progress: Progress | None = None,
        hold: bool = False,
    ) -> ImportReport:
        """Decode and check every source first (all or nothing), then write item by item.

        ``hold``: every item comes in ``proposed``, whatever its source says (what a restore
        whose origin is not proven becomes: an import that waits for review)."""
        if mode not in MODES:
            raise InvalidInputError(f"mode is import or restore; got {mode!r}", field="mode")
        whose = self._owner(owner)
        restore = mode == "restore"
        self.admission.may_admit(whose)
        known = self._keys(whose)
        items: list[Item] = []
        refused: list[Refusal] = []
        names: list[str] = []
        for name, data in sources:
            codec = registry.get(fmt) if fmt else registry.detect(data, name)
            names.append(codec.name)
            if restore and codec.name not in RESTORABLE:
                raise InvalidInputError(
                    f"{name}: restore brings back troth's own exports (PCP or personaxis);"
                    f" {codec.name} comes in with --mode import",
                    field="mode",
                )
            if restore and codec.name in ("personaxis", "hux"):
                raise InvalidInputError(
                    f"{name}: a {codec.name} export restores through Memory.import_path, with"
                    " its restore copy and checkpoint (or Memory.restore_chain for a chain)",
                    field="mode",
                )
            found, skipped = codec.decode(
                data, name=name, restore=restore, reanchor=reanchor, known=known
            )
            items.extend(found)
            refused.extend(skipped)
        for used in dict.fromkeys(names):  # references across files (basic-memory's links)
            items = registry.get(used).link(items)
        if hold:
            items = [replace(i, status="proposed") for i in items]
        label = names[0] if len(set(names)) == 1 else "mixed"
        report = ImportReport(label, mode, whose, refused=refused)
        if not restore:  # an export coming back into the ledger it came from: already here
            items = not_held(self.store.projection(whose), items, report)
        return self.write_items(
            items,
            owner=whose,
            restore=restore,
            report=report,
            at=at,
            progress=progress,
            known=known,
        )

    def import_path(
        self,
        path: Path,
        *,
        fmt: str | None = None,
        mode: str = "import",
        owner: str | None = None,
        reanchor: bool = False,
        at: datetime | None = None,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import a file, an archive, or a directory of markdown notes."""
        return self.import_files(
            read_sources(path),
            fmt=fmt,
            mode=mode,
            owner=owner,
            reanchor=reanchor,
            at=at,
            progress=progress,
        )

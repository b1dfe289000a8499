"""What comes back: restore by proof, import otherwise, batch approval, and checking an export.

- :meth:`Returns.import_path` is the facade's import verb. ``--mode restore`` restores
  verbatim — the same ids, times, statuses, provenance and audit, idempotently — only an
  export whose origin is proven (:mod:`troth.service.proofs`: its signed checkpoint verifies
  under this installation's key or a trusted one, names the owner, and its restore copy and
  its pages, lines or records match it). Anything else comes in as an import, with
  ``x_import`` provenance, every memory ``proposed``, and the report says why.
- ``approve``: the person importing their own export approves the batch in the same run;
  the policy keeps some memories for one-by-one review (``[batch_approval]``).
- :meth:`Returns.verify_against` checks an exported file, or the ledger, against a
  checkpoint, from the file and its checkpoint alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from troth.core.errors import FormatError, InvalidInputError, PolicyDeniedError
from troth.core.events import Record
from troth.core.policy import Policy
from troth.core.records import MemoryRecord, check_principal
from troth.formats import archive, ledger_copy, note, personaxis, registry, tlog
from troth.formats.ledger_copy import LedgerCopy
from troth.formats.registry import Refusal
from troth.service.changes import Changes
from troth.service.portability import (
    MODES,
    RESTORABLE,
    ImportReport,
    Portability,
    Progress,
    hux_bytes,
    in_order,
    pages_of,
    read_sources,
)
from troth.service.proofs import Origin, check_entries, origin_owner
from troth.service.restoring import Restorer


@dataclass(frozen=True)
class Carried:
    """What an export file carries for its proof: its format, copy and checkpoint."""

    format: str
    data: bytes
    copy: LedgerCopy | None
    note: bytes | None
    files: Mapping[str, bytes] | None = None  # an archive's members
    member: str | None = None  # a bundle's export, by name

    def sources(self, name: str) -> list[tuple[str, bytes]]:
        """What an import reads of the file ``name``: a bundle's export, else the file."""
        if self.member is None:
            return [(name, self.data)]
        return [(f"{name}:{self.member}", self.data)]


def _copy(data: bytes | None, where: str) -> LedgerCopy | None:
    return None if data is None else ledger_copy.decode(data, name=where)


def _optional(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _flat_format(fmt: str | None, data: bytes, name: str, beside: LedgerCopy | None) -> str:
    if fmt is None and data.strip() in (b"", b"[]") and beside is not None:
        # An export without a record has nothing to be recognised by: a personaxis log is
        # empty only when its ledger is; otherwise it is HUX of a ledger with no memories.
        fmt = "personaxis" if not beside.records and not data.strip() else "hux"
    return registry.get(fmt).name if fmt else registry.detect(data, name).name


def carried(
    path: Path,
    data: bytes,
    fmt: str | None = None,
    *,
    files: Mapping[str, bytes] | None = None,
) -> Carried:
    """The format of ``data`` (read from ``path``) and the proof it carries or has beside it:
    inside a PCP archive or a bundle (a zip of a flat export and its two files), or beside
    a personaxis or HUX file. ``files``: the members of ``data``, when it was unzipped
    already."""
    if fmt in (None, "pcp", "personaxis", "hux") and data.startswith(archive.ZIP_MAGIC):
        if files is None:
            files = archive.read(data, where=path.name)
        held = None if fmt == "pcp" else ledger_copy.unbundle(files)
        if held is not None:
            where = f"{path.name}:{held.name}"
            copy = _copy(held.copy, where + ledger_copy.LEDGER_SUFFIX)
            kind = _flat_format(fmt, held.data, held.name, copy)
            return Carried(kind, held.data, copy, held.note, member=held.name)
        if fmt in (None, "pcp"):
            return _archived(path, data, files)
    copy_path, note_path = ledger_copy.sidecars(path)
    beside = _copy(_optional(copy_path), copy_path.name)
    kind = _flat_format(fmt, data, path.name, beside)
    if kind == "pcp":
        return _archived(path, data, archive.read(data, where=path.name))
    return Carried(kind, data, beside, _optional(note_path))


def _archived(path: Path, data: bytes, files: Mapping[str, bytes]) -> Carried:
    archive.verify(files, where=path.name)
    copy = _copy(files.get(ledger_copy.ARCHIVE_LEDGER), f"{path.name}:troth/ledger.jsonl")
    return Carried("pcp", data, copy, files.get(ledger_copy.ARCHIVE_CHECKPOINT), files)


def _same_view(
    found: Carried, records: Sequence[Record], memories: Sequence[MemoryRecord]
) -> str | None:
    """Why the file is not the view its restore copy (``records``, which fold to
    ``memories`` in ledger order) makes; None when it is."""
    if found.format == "personaxis":
        lines = personaxis.decode(found.data)
        if [e.to_line() for e in lines] != [r.entry.to_line() for r in records]:
            return "its lines are not the entries of its restore copy"
        return None
    if found.format == "hux":
        if found.data not in (hux_bytes(memories, lines=False), hux_bytes(memories, lines=True)):
            return "its HUX records are not the memories its restore copy makes"
        return None
    if found.format == "pcp" and found.files is not None:
        pages = {f"{archive.PAGES}{p}.md": data for p, (_, data) in pages_of(memories).items()}
        held = {n: d for n, d in found.files.items() if n.startswith(archive.PAGES)}
        for name in sorted(set(pages) | set(held)):
            if pages.get(name) != held.get(name):
                return f"its page {name} is not the one its restore copy makes"
        return None
    return f"a {found.format} file is never restored verbatim"


# What a creating entry's metadata says about its memory that an import carries over (the
# status, review and provenance are the importing ledger's to decide).
CARRIED_FIELDS = (
    "kind",
    "topic",
    "title",
    "ttl",
    "confidence",
    "importance",
    "valid_from",
    "valid_until",
    "path",
    "page_type",
    "partition",
)


def _created_fields(meta: str | None) -> dict[str, Any]:
    if meta is None:
        return {}
    document = json.loads(meta)
    if document.get("event") != "propose":
        return {}
    given = document.get("fields", {})
    return {k: given[k] for k in CARRIED_FIELDS if given.get(k) is not None}


def batch_refusal(policy: Policy, memory: MemoryRecord) -> str | None:
    """Why the policy keeps a memory out of a batch approval (None: it may be approved).

    Instruction-shaped text is never approved in bulk; nor, by default, are the sensitive
    topics; the policy's ``[batch_approval] refuse_topics`` names others (or none).
    """
    if memory.flagged:
        return "it reads as an instruction to the assistant; review it on its own"
    table = policy.source.get("batch_approval", {})
    topics = table.get("refuse_topics", sorted(policy.sensitive_topics))
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise InvalidInputError(
            "policy batch_approval.refuse_topics must be a list of topic names",
            field="batch_approval.refuse_topics",
        )
    if memory.topic in topics:
        return f"the policy keeps {memory.topic} memories for one-by-one review"
    return None


class Returns:
    """Import and restore through the facade: proof first, then the ledger's write paths."""

    def __init__(
        self, portability: Portability, restorer: Restorer, changes: Changes, policy: Policy
    ) -> None:
        self.portability = portability
        self.parties = portability.parties
        self.restorer = restorer
        self.changes = changes
        self.policy = policy

    def origin(self, found: Carried, *, owner: str, where: str) -> Origin:
        """Whether ``found`` is proven to be ``owner``'s ledger, its view included."""
        proven = self.portability.proofs.origin(found.copy, found.note, owner=owner, where=where)
        if not proven.proven or proven.copy is None:
            return proven
        differs = _same_view(found, proven.copy.rows, proven.copy.in_order())
        if differs is not None:
            return Origin(False, f"{where}: {differs}", proven.checkpoint)
        return proven

    def import_path(
        self,
        path: Path,
        *,
        fmt: str | None = None,
        mode: str = "import",
        owner: str | None = None,
        reanchor: bool = False,
        progress: Progress | None = None,
        approve: bool = False,
    ) -> ImportReport:
        """Import a file, an archive or a folder; restore one whose origin is proven."""
        if mode not in MODES:
            raise InvalidInputError(f"mode is import or restore; got {mode!r}", field="mode")
        whose = check_principal(owner, "owner") if owner else self.parties.principal
        if approve and self.parties.principal != whose:
            raise PolicyDeniedError(
                f"only {whose} may approve what comes into {whose}'s ledger;"
                f" {self.parties.principal} may not (import without --approve)",
                owner=whose,
            )
        if mode == "restore":
            report = self._restore(path, fmt=fmt, owner=whose, reanchor=reanchor, progress=progress)
        elif reanchor:
            report = self.portability.import_path(
                path, fmt=fmt, mode=mode, owner=whose, reanchor=reanchor, progress=progress
            )
        else:
            sources, found = _with_copy(path, fmt)
            if found is not None:
                [(name, _data)] = sources
                report = self._import_with_copy(name, found, owner=whose, progress=progress)
            else:  # a plain import, of the bytes already read when there are any
                report = self.portability.import_files(
                    sources or read_sources(path),
                    fmt=fmt,
                    mode=mode,
                    owner=whose,
                    progress=progress,
                )
        if approve:
            self._approve(report, note=f"approved with the import of {path.name}")
        return report

    def _restore(
        self,
        path: Path,
        *,
        fmt: str | None,
        owner: str,
        reanchor: bool,
        progress: Progress | None,
    ) -> ImportReport:
        self.portability.admission.may_admit(owner)
        sources = read_sources(path)
        why = f"{path.name} is a folder, not one export"
        if len(sources) == 1:
            name, data = sources[0]
            found = carried(path, data, fmt)
            if found.format not in RESTORABLE:
                raise InvalidInputError(
                    f"{name}: restore brings back troth's own exports (PCP, personaxis, HUX);"
                    f" {found.format} comes in with --mode import",
                    field="mode",
                )
            proven = self.origin(found, owner=owner, where=name)
            if proven.proven and proven.copy is not None:
                done = self.restorer.restore(proven.copy)
                report = ImportReport(found.format, "restore", owner, created=done.created)
                report.unchanged = done.unchanged
                return report
            why = proven.reason
            fmt = found.format
            sources = found.sources(name)
        report = self.portability.import_files(
            sources,
            fmt=fmt,
            mode="import",
            owner=owner,
            reanchor=reanchor,
            progress=progress,
            hold=True,
        )
        report.as_import = (
            f"not restored verbatim: {why}; its memories came in as an import, with x_import"
            " provenance, and wait for review"
        )
        return report

    def _import_with_copy(
        self, name: str, found: Carried, *, owner: str, progress: Progress | None
    ) -> ImportReport:
        """A troth personaxis export (the file ``name``) imported plainly: each memory keeps
        the kind, topic and other fields its creating entry's metadata (in the copy beside
        it, or in its bundle) records. A bundle's HUX export is imported as HUX."""
        if found.format != "personaxis" or found.copy is None:
            return self.portability.import_files(
                found.sources(name), fmt=found.format, owner=owner, progress=progress
            )
        [(name, _data)] = found.sources(name)
        items, refused = personaxis.items(found.data, name=name)
        fields = {r.entry.hash: _created_fields(r.meta) for r in found.copy.records}
        items = [replace(i, fields={**fields.get(i.key[0], {}), **i.fields}) for i in items]
        report = ImportReport("personaxis", "import", owner, refused=refused)
        return self.portability.write_items(
            items, owner=owner, restore=False, report=report, progress=progress
        )

    def _approve(self, report: ImportReport, *, note: str) -> None:
        """Approve what the run proposed, each approval audited with the same note."""
        for memory_id in report.created:
            memory = self.parties.store.get(report.owner, memory_id)
            if memory is None or memory.status != "proposed":
                continue
            refusal = batch_refusal(self.policy, memory)
            if refusal is not None:
                report.held.append(Refusal(memory_id, refusal))
                continue
            self.changes.approve(memory_id, owner=report.owner, note=note)
            report.approved.append(memory_id)

    # -- verify --against -----------------------------------------------------------------

    def verify_against(
        self,
        path: Path,
        *,
        owner: str | None = None,
        may_read: Callable[[str], str] | None = None,
    ) -> dict[str, Any]:
        """Check ``path`` against a checkpoint: an export against the one it carries, or a
        checkpoint note (``troth seal -o``) against the ledger it names. ``may_read``: the
        caller's access check of an owner (it returns the owner, or refuses), applied to
        the owner a note names before that ledger is read."""
        if not path.is_file():
            raise InvalidInputError(f"{path} is not a file", path=str(path))
        data = path.read_bytes()
        proofs = self.portability.proofs
        if _looks_like_note(data):
            checkpoint = proofs.open(data, where=path.name)
            whose = owner or origin_owner(checkpoint.origin)
            if owner is None and may_read is not None:
                whose = may_read(whose)
            hashes = [r.entry.hash for r in self.parties.store.records(whose)]
            problem = check_entries(
                checkpoint, hashes[: checkpoint.size], where=f"the ledger of {whose}"
            )
            return _finding(path, "ledger", whose, checkpoint, len(hashes), problem)
        try:
            found = carried(path, data)
        except FormatError as exc:
            return {"ok": False, "file": str(path), "message": exc.message}
        if found.note is None:
            return {
                "ok": False,
                "file": str(path),
                "message": f"{path.name} carries no signed checkpoint (an archive's"
                f" {ledger_copy.ARCHIVE_CHECKPOINT}, a bundle's"
                f" {found.member or 'FILE'}{ledger_copy.CHECKPOINT_SUFFIX}, or"
                f" {path.name}{ledger_copy.CHECKPOINT_SUFFIX} beside it); export it again with"
                " troth export",
            }
        checkpoint = proofs.open(found.note, where=path.name)
        whose = origin_owner(checkpoint.origin)
        return self._check_export(path, found, checkpoint, whose)

    def _check_export(
        self, path: Path, found: Carried, checkpoint: tlog.Checkpoint, whose: str
    ) -> dict[str, Any]:
        if found.format == "personaxis":
            try:
                hashes = [e.hash for e in personaxis.decode(found.data, name=path.name)]
            except FormatError as exc:
                return _finding(path, "export", whose, checkpoint, 0, exc.message)
            problem = check_entries(checkpoint, hashes, where=path.name)
            return _finding(path, "export", whose, checkpoint, len(hashes), problem)
        if found.copy is None:
            message = f"{path.name} carries no restore copy to hold against its checkpoint"
            return _finding(path, "export", whose, checkpoint, 0, message)
        rows = found.copy.records
        problem = check_entries(checkpoint, [r.entry.hash for r in rows], where=path.name)
        if problem is None:
            differs = _same_view(found, rows, in_order(rows, whose))
            problem = None if differs is None else f"{path.name}: {differs}"
        return _finding(path, "export", whose, checkpoint, len(rows), problem)


def _with_copy(path: Path, fmt: str | None) -> tuple[list[tuple[str, bytes]], Carried | None]:
    """What was read of ``path`` (nothing, for a folder or a file that is neither of these)
    and, when it is a flat export with its restore copy beside it or a bundle, what it
    carries (else None: the plain import follows). The file is read and unzipped once,
    here, and what the import needs is passed along."""
    if not path.is_file():
        return [], None
    if ledger_copy.sidecars(path)[0].is_file():
        sources = read_sources(path)  # the size limits of every import
        [(_name, data)] = sources
        return sources, carried(path, data, fmt)
    if path.suffix != ".zip":
        return [], None
    try:
        sources = read_sources(path)
        [(_name, data)] = sources
        files = archive.read(data, where=path.name)
    except FormatError:  # the import that follows says what is wrong with it
        return [], None
    if ledger_copy.unbundle(files) is None:
        return sources, None
    return sources, carried(path, data, fmt, files=files)


def _looks_like_note(data: bytes) -> bool:
    """A C2SP signed note holding a tlog checkpoint (what ``troth seal -o`` writes)."""
    if len(data) > 65536 or b"\x00" in data:
        return False
    try:
        tlog.decode(note.decode(data).text)
    except (FormatError, UnicodeDecodeError, ValueError):
        return False
    return True


def _finding(
    path: Path,
    kind: str,
    owner: str,
    checkpoint: tlog.Checkpoint,
    entries: int,
    problem: str | None,
) -> dict[str, Any]:
    return {
        "ok": problem is None,
        "file": str(path),
        "against": kind,
        "owner": owner,
        "origin": checkpoint.origin,
        "checkpoint_size": checkpoint.size,
        "entries": entries,
        "message": problem
        or f"{path.name} holds the {checkpoint.size} entries its signed checkpoint covers",
    }

"""What every surface hands out when it exports: one verb makes the bytes, names and proof.

An export (docs/formats.md, "Exports carry their proof") is cut from one read of an owner's
rows, with the proof it carries. Its view is the fold of those rows (a HUX export's records,
a PCP archive's pages), never the stored projection: the rows are what the checkpoint signs
and what a restore folds again to check the view (``service/returns.py``), and one read
makes the bytes, the copy and the memories the ``export`` event lists agree:

- ``pcp``: the archive, its restore copy and signed checkpoint inside it (``troth/…``);
- ``personaxis``, ``hux``: the file, with its restore copy and checkpoint beside it
  (``FILE.ledger.jsonl``, ``FILE.checkpoint``); handed out as one file, the three travel
  in a zip, a *bundle* (:func:`troth.formats.ledger_copy.bundle`).

:meth:`Exports.export_to` writes an export to a path (``troth export``); a ``.zip`` path
for a personaxis or HUX export gets its bundle. :meth:`Exports.export_bytes` is the same
personaxis or HUX file as bytes, without its proof (``Memory.export``; no checkpoint is
signed for it). :meth:`Exports.hand_out` is what
``GET /api/export`` and the review page's download serve: the same bytes ``troth export -o
NAME.zip`` writes for the same format and owner at the same tip (a PCP archive's export
instant aside: the moment it is made, unless ``at`` names one). Each is audited by one
``export`` event, appended after the bytes are made and before they are handed over; the
event's sha256 is of the export file itself (a bundle's export member).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Final

from troth.core.chain import format_ts, parse_utc
from troth.core.errors import InvalidInputError, NotFoundError
from troth.core.events import Record
from troth.formats import ledger_copy, personaxis
from troth.service.portability import (
    EXPORT_FORMATS,
    ExportResult,
    Portability,
    hux_bytes,
    in_order,
)

#: The type of every export handed out as one file: a PCP archive or a bundle, both zips.
MEDIA_TYPE: Final = "application/zip"
#: The time a bundle's members carry when the ledger has no entry to date them by.
_ZIP_EPOCH: Final = "1980-01-01T00:00:00Z"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Cut:
    """One export as made: the file itself, the memories it speaks for, its proof."""

    result: ExportResult
    ids: tuple[str, ...]
    note: bytes | None  # the signed checkpoint (None without a sealer)
    copy: bytes | None = None  # a flat export's restore copy (an archive holds its own)
    stamp: str = _ZIP_EPOCH  # when its tip entry was written: a bundle's member time


@dataclass(frozen=True)
class ExportFile:
    """An export as one file, as the HTTP API and the review page hand it out (always a
    zip: :data:`MEDIA_TYPE`)."""

    format: str
    name: str
    data: bytes
    items: int
    note: bytes | None


def export_name(fmt: str, owner: str) -> str:
    """The name an export is handed out under, e.g. ``troth-human-alice.personaxis.zip``."""
    return f"troth-{_UNSAFE.sub('-', owner)}.{fmt}.zip"


def member_name(fmt: str, owner: str) -> str:
    """The name of the export inside its bundle, e.g. ``troth-human-alice.hux.json``."""
    return f"troth-{_UNSAFE.sub('-', owner)}.{fmt}.{'jsonl' if fmt == 'personaxis' else 'json'}"


def _stamp(entry_ts: str | None) -> str:
    """A member time from an entry's time (a ledger restored from elsewhere may hold a time
    written another way: the zip's epoch then)."""
    if entry_ts is None:
        return _ZIP_EPOCH
    try:
        return format_ts(parse_utc(entry_ts))
    except (ValueError, InvalidInputError):  # no time, or one without its zone
        return _ZIP_EPOCH


def _write(path: Path, data: bytes | None) -> None:
    if data is None:
        path.unlink(missing_ok=True)
        return
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise InvalidInputError(f"cannot write {path}: {exc.strerror}", path=str(path)) from exc


def _view(
    fmt: str, records: list[Record], whose: str, *, lines: bool
) -> tuple[ExportResult, tuple[str, ...]]:
    """A personaxis or HUX export's bytes from one read of the rows, and the ids of the
    memories it carries (the fold of those rows, never the projection)."""
    memories = in_order(records, whose)
    if fmt == "personaxis":
        data, count = personaxis.encode(r.entry for r in records), len(records)
    else:
        data, count = hux_bytes(memories, lines=lines), len(memories)
    return ExportResult(fmt, data, count), tuple(sorted(m.id for m in memories))


def _kind(fmt: str) -> tuple[str, bool]:
    """The format an export format's name is made in, and whether it asks for JSON Lines:
    ``hux-jsonl`` is HUX as JSON Lines; every other name is its own format."""
    return ("hux", True) if fmt == "hux-jsonl" else (fmt, False)


def beside(fmt: str, output: Path) -> tuple[Path, ...]:
    """The files :meth:`Exports.export_to` writes beside ``output`` for ``fmt``: a flat
    export's restore copy and checkpoint; none for a PCP archive or a bundle (``.zip``),
    which hold their proof inside."""
    return () if fmt == "pcp" or output.suffix == ".zip" else ledger_copy.sidecars(output)


class Exports:
    """Cuts an owner's export with its proof, writes it to a file or hands it out."""

    def __init__(self, portability: Portability) -> None:
        self.portability = portability
        self.store = portability.store

    def cut(
        self,
        fmt: str,
        whose: str,
        *,
        lines: bool = False,
        at: datetime | None = None,
        container: str = "zip",
    ) -> Cut:
        """An export of ``whose`` in ``fmt`` (HUX as JSON Lines with ``lines``; a PCP archive
        as ``container``, dated ``at``), its restore copy and checkpoint from the same rows;
        not audited."""
        if fmt == "pcp":
            result, ids, files = self.portability.archive_bytes(whose, at, container)
            return Cut(result, ids, files.get(ledger_copy.ARCHIVE_CHECKPOINT))
        if fmt not in ("personaxis", "hux"):
            raise InvalidInputError(
                f"unknown export format {fmt!r}; use {', '.join(EXPORT_FORMATS)}", field="format"
            )
        records = list(self.store.records(whose))
        result, ids = _view(fmt, records, whose, lines=lines)
        return Cut(
            result,
            ids,
            self.portability.proofs.sign(whose, records),
            ledger_copy.encode(whose, records),
            _stamp(records[-1].entry.ts if records else None),
        )

    def export_bytes(self, fmt: str, *, owner: str, actor: str | None = None) -> ExportResult:
        """``owner``'s ledger as personaxis JSONL, or its memories as HUX (``hux-jsonl``: as
        JSON Lines), the bytes alone, without their proof: the file :meth:`export_to` writes
        for the same format at the same tip. Audited (the ``export`` event by ``actor``)
        before the bytes are returned."""
        kind, lines = _kind(fmt)
        if kind not in ("personaxis", "hux"):
            raise InvalidInputError(
                f"unknown export format {fmt!r}; use personaxis or hux", field="format"
            )
        # The view alone: no checkpoint is signed (nor sent to the witnesses) for a proof
        # these bytes do not carry.
        view, ids = _view(kind, list(self.store.records(owner)), owner, lines=lines)
        result = replace(view, format=fmt)
        self.portability.record_export(result, owner=owner, memory_ids=ids, actor=actor)
        return result

    def one_file(self, cut: Cut, whose: str) -> ExportFile:
        """A cut as one file: a PCP archive as it is, a flat export as its bundle."""
        fmt = cut.result.format
        data = cut.result.data
        if cut.copy is not None:
            name = member_name(fmt, whose)
            data = ledger_copy.bundle(name, data, cut.copy, cut.note, stamp=cut.stamp)
        return ExportFile(fmt, export_name(fmt, whose), data, cut.result.items, cut.note)

    def hand_out(
        self, fmt: str, *, owner: str, actor: str | None = None, at: datetime | None = None
    ) -> ExportFile:
        """``owner``'s export in ``fmt`` as one file with its proof, audited (the ``export``
        event by ``actor``) before it is returned."""
        cut = self.cut(fmt, owner, at=at)
        handed = self.one_file(cut, owner)
        self.portability.record_export(cut.result, owner=owner, memory_ids=cut.ids, actor=actor)
        return handed

    def export_to(
        self, fmt: str, output: Path, *, owner: str, at: datetime | None = None
    ) -> ExportResult:
        """Export in ``fmt`` to a file: a PCP archive is a zip when the name ends in ``.zip``,
        else a tar; a personaxis or HUX export gets its restore copy and checkpoint beside
        it, or is their bundle when the name ends in ``.zip`` (HUX is JSON Lines in a file
        ending in ``.jsonl``, and a JSON array in a bundle).

        The bytes are made, written, then the export is audited; should the ledger refuse the
        event (it does not verify), the files are removed again: no export leaves without its
        event, and the file never holds its own export event.
        """
        if not output.parent.is_dir():
            raise NotFoundError(
                f"{output.parent} is not a folder; create it or write elsewhere", path=str(output)
            )
        zipped = output.suffix == ".zip"
        kind, jsonl = _kind(fmt)
        lines = not zipped and (jsonl or output.suffix == ".jsonl")
        cut = self.cut(kind, owner, lines=lines, at=at, container="zip" if zipped else "tar")
        files: list[tuple[Path, bytes | None]] = [(output, cut.result.data)]
        if cut.copy is not None and zipped:
            files = [(output, self.one_file(cut, owner).data)]
        elif cut.copy is not None:
            files += zip(beside(kind, output), (cut.copy, cut.note), strict=True)
        try:
            for path, data in files:
                _write(path, data)
            self.portability.record_export(cut.result, owner=owner, memory_ids=cut.ids)
        except BaseException:
            for path, _ in files:
                path.unlink(missing_ok=True)
            raise
        return cut.result


__all__ = [
    "MEDIA_TYPE",
    "Cut",
    "ExportFile",
    "Exports",
    "beside",
    "export_name",
    "member_name",
]

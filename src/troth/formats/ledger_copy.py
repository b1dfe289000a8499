"""The restore copy every troth export carries: the owner's ledger rows, and where they travel.

An export in any format (a PCP archive, a personaxis log, HUX records) is a *view* of a
ledger. To restore the ledger itself — the same memory ids, times, statuses, provenance and
audit — a restore needs the rows the view was made from: each personaxis entry together with
the troth metadata its ``lm:meta:`` tag commits to and its erasable texts. This module is
that copy, as JSON Lines (docs/formats.md, "The restore copy")::

    {"troth_ledger":1,"owner":"human:alice","entries":3}
    {"entry":{…personaxis entry…},"meta":"{…}","texts":{"reason":"…"}}
    …

The header's ``entries`` count makes a copy whose last lines were cut off a defect of the
copy itself; the signed checkpoint beside it (:data:`ARCHIVE_CHECKPOINT`,
:data:`CHECKPOINT_SUFFIX`) proves where it came from. A personaxis or HUX export handed out
as one file (``GET /api/export``, ``troth export -o NAME.zip``) is a *bundle*: a zip of the
export and the two files written beside it (:func:`bundle`, :func:`unbundle`). Pure: bytes
in, records out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from troth.core.chain import entry_from_json
from troth.core.errors import FormatError
from troth.core.events import Record
from troth.formats import archive, jsontext

VERSION: Final = 1
#: The members a PCP archive troth writes carries beside its pages.
ARCHIVE_LEDGER: Final = "troth/ledger.jsonl"
ARCHIVE_CHECKPOINT: Final = "troth/checkpoint.note"
#: The files written beside a personaxis or HUX export ``FILE``.
LEDGER_SUFFIX: Final = ".ledger.jsonl"
CHECKPOINT_SUFFIX: Final = ".checkpoint"


@dataclass(frozen=True)
class LedgerCopy:
    """An owner's ledger rows as an export carried them."""

    owner: str
    records: tuple[Record, ...]


def sidecars(path: Path) -> tuple[Path, Path]:
    """The restore copy and the checkpoint written beside a flat export ``path``."""
    return path.with_name(path.name + LEDGER_SUFFIX), path.with_name(path.name + CHECKPOINT_SUFFIX)


@dataclass(frozen=True)
class Bundle:
    """A flat export and what travels beside it, as one zip holds them."""

    name: str
    data: bytes
    copy: bytes
    note: bytes | None


def bundle(name: str, data: bytes, copy: bytes, note: bytes | None, *, stamp: str) -> bytes:
    """A deterministic zip of the export ``name`` and its restore copy and checkpoint, under
    the names ``troth export -o name`` gives them; ``stamp`` (UTC) dates every member."""
    files = {name: data, name + LEDGER_SUFFIX: copy}
    if note is not None:
        files[name + CHECKPOINT_SUFFIX] = note
    return archive.write_zip(files, stamp)


def unbundle(files: Mapping[str, bytes]) -> Bundle | None:
    """The bundle an archive's members make (None: they are not one, e.g. a PCP archive)."""
    beside = (LEDGER_SUFFIX, CHECKPOINT_SUFFIX)
    exports = [n for n in files if not n.endswith(beside)]
    if len(exports) != 1 or any("/" in n for n in files):
        return None
    name = exports[0]
    copy = files.get(name + LEDGER_SUFFIX)
    if copy is None or not set(files) <= {name, *(name + suffix for suffix in beside)}:
        return None
    return Bundle(name, files[name], copy, files.get(name + CHECKPOINT_SUFFIX))


def _line(document: object) -> bytes:
    return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def encode(owner: str, records: Iterable[Record]) -> bytes:
    """The copy's bytes: the header, then one row a line in chain order."""
    rows = [
        _line({"entry": r.entry.to_json(), "meta": r.meta, "texts": dict(r.texts)}) for r in records
    ]
    header = _line({"troth_ledger": VERSION, "owner": owner, "entries": len(rows)})
    return header + b"".join(rows)


def _texts(value: object, where: str) -> Mapping[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise FormatError(f"{where}: 'texts' must be an object of strings")
    return value


def decode(data: bytes, *, name: str) -> LedgerCopy:
    """The rows of a copy; a FormatError names the line of the first defect.

    A copy holding fewer rows than its header counts (its end was cut off) is refused.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name}: not UTF-8 text (byte {exc.start})", file=name) from exc
    lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if not lines:
        raise FormatError(f"{name}: empty; a restore copy starts with its header", file=name)
    header = jsontext.loads(lines[0][1], name=name, line=lines[0][0])
    if (
        not isinstance(header, dict)
        or header.get("troth_ledger") != VERSION
        or not isinstance(header.get("owner"), str)
        or not isinstance(header.get("entries"), int)
    ):
        raise FormatError(
            f"{name}:{lines[0][0]}: not a troth restore copy (version {VERSION}): the first line"
            ' must be {"troth_ledger":1,"owner":…,"entries":N}',
            file=name,
        )
    records: list[Record] = []
    for seq, (number, line) in enumerate(lines[1:]):
        where = f"{name}:{number}"
        row = jsontext.loads(line, name=name, line=number)
        if not isinstance(row, dict) or set(row) != {"entry", "meta", "texts"}:
            raise FormatError(f"{where}: a row is an object of entry, meta and texts", file=name)
        meta = row["meta"]
        if meta is not None and not isinstance(meta, str):
            raise FormatError(f"{where}: 'meta' must be a string or null", file=name)
        entry = entry_from_json(row["entry"], where=where)
        records.append(Record(seq, entry, meta, dict(_texts(row["texts"], where))))
    if len(records) != header["entries"]:
        raise FormatError(
            f"{name}: holds {len(records)} of the {header['entries']} rows its header counts;"
            " the copy was cut off — export the ledger again",
            file=name,
            rows=len(records),
            expected=header["entries"],
        )
    return LedgerCopy(header["owner"], tuple(records))

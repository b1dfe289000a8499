"""PCP export archives (tar or zip): manifest, checksums, limits, pages in and out.

Layout::

    manifest.json        the PCP export manifest (pcp_version "0.3"; see docs/formats.md)
    profile/core.json    the core profile: {"pcp_version": "0.1", "name": <owner>}
    memory/<path>.md     one page per exported memory
    audit/log.jsonl      each exported memory's audit trail, one item a line
    troth/ledger.jsonl   troth's restore copy of the owner's ledger rows (ledger_copy.py)
    troth/checkpoint.note  the signed checkpoint the export was cut at (a C2SP signed note)

Writing is deterministic: the same files and export instant give the same archive bytes
(fixed member order, times, owners and modes). Reading refuses, before anything is written
to a ledger, any archive past the limits below, any member path that is absolute, climbs
with ``..`` or is not a plain file, any file missing from the manifest or listed but absent,
and any checksum, size or page count that does not match.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import zipfile
import zlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import jsonschema

from troth.core.chain import parse_utc
from troth.core.errors import FormatError
from troth.formats import jsontext, pcp
from troth.formats.registry import Decoded, FunctionCodec, Item, Refusal, register

NAME: Final = "pcp"
MANIFEST: Final = "manifest.json"
PROFILE: Final = "profile/core.json"
AUDIT: Final = "audit/log.jsonl"
PAGES: Final = "memory/"
ZIP_MAGIC: Final = b"PK\x03\x04"  # how a zip's first member begins


@dataclass(frozen=True)
class Limits:
    """What an archive may hold before it is refused unread (docs/formats.md)."""

    max_members: int = 100_000
    max_file_bytes: int = 64 << 20
    max_total_bytes: int = 1 << 30
    max_ratio: int = 100
    ratio_floor: int = 1 << 20  # the ratio is checked only past this many uncompressed bytes


DEFAULT_LIMITS: Final = Limits()
_DRIVE = re.compile(r"^[A-Za-z]:")


@cache
def manifest_validator() -> jsonschema.Draft202012Validator:
    """The v0.2 manifest schema as troth ships it (``pcp_version`` "0.3" allowed)."""
    return jsonschema.Draft202012Validator(pcp.load_schema("pcp.export.manifest.schema.json"))


@cache
def profile_validator() -> jsonschema.Draft202012Validator:
    """The core profile schema."""
    return jsonschema.Draft202012Validator(pcp.load_schema("pcp.profile.core.schema.json"))


def check_member(name: str, *, where: str) -> str:
    """A relative member path that stays inside the archive."""
    parts = name.split("/")
    if (
        not name
        or name.startswith("/")
        or "\\" in name
        or _DRIVE.match(name)
        or any(p in ("", ".", "..") for p in parts)
        or "\x00" in name
    ):
        raise FormatError(
            f"{where}: member {name!r} is absolute, climbs out with '..' or is not a clean"
            " relative path; refusing the archive",
            member=name,
        )
    return name


# -- writing ---------------------------------------------------------------------------------


def build(
    pages: Sequence[tuple[str, bytes]],
    audit_lines: Sequence[bytes],
    *,
    owner: str,
    exported_at: str,
    version: str,
    sensitive_pages: int,
    omitted: Sequence[Mapping[str, Any]] = (),
    audit_range: tuple[str, str] | None = None,
    extra: Mapping[str, bytes] | None = None,
) -> dict[str, bytes]:
    """Every file of an archive, ``manifest.json`` first, in archive order.

    ``extra`` members (troth's restore copy and checkpoint, under ``troth/``) are listed in
    the manifest with their checksums like every file; PCP readers ignore them.
    """
    profile = {"pcp_version": "0.1", "name": owner}
    files: dict[str, bytes] = {
        PROFILE: (json.dumps(profile, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    }
    for path, data in sorted(pages):
        files[f"{PAGES}{path}.md"] = data
    files[AUDIT] = b"".join(audit_lines)
    for name, data in sorted((extra or {}).items()):
        files[check_member(name, where="archive")] = data
    audit: dict[str, Any] = {"path": AUDIT, "entries": len(audit_lines)}
    if audit_range is not None:
        audit["from"], audit["to"] = audit_range
    audit["truncated"] = False
    manifest: dict[str, Any] = {
        "pcp_version": pcp.PCP_VERSION,
        "manifest_version": "1",
        "exported_at": exported_at,
        "exporter": {"name": "troth", "version": version},
        "context": {"handle": owner},
        "profile": {"core": PROFILE},
        "memory": {
            "path": PAGES,
            "page_count": len(pages),
            "sensitive_page_count": sensitive_pages,
            "index_included": False,
        },
        "audit": audit,
        "files": [
            {"path": path, "sha256": pcp.sha256_bytes(data), "bytes": len(data)}
            for path, data in sorted(files.items())
        ],
    }
    if omitted:
        manifest["omitted"] = [dict(o) for o in omitted]
    errors = list(manifest_validator().iter_errors(manifest))
    if errors:  # a bug, not bad input: refuse to write a non-conforming archive
        raise FormatError(f"the manifest troth built does not validate: {errors[0].message}")
    text = json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"
    return {MANIFEST: text.encode("utf-8"), **files}


def _epoch(exported_at: str) -> int:
    return int(parse_utc(exported_at).timestamp())


def write_tar(files: Mapping[str, bytes], exported_at: str) -> bytes:
    """A deterministic tar (GNU format; fixed times, owners and modes)."""
    buffer = io.BytesIO()
    mtime = _epoch(exported_at)
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write_zip(files: Mapping[str, bytes], exported_at: str) -> bytes:
    """A deterministic zip (deflated; fixed times, modes and system)."""
    moment = parse_utc(exported_at)
    stamp = (
        max(moment.year, 1980),
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3
            archive.writestr(info, data)
    return buffer.getvalue()


# -- reading ---------------------------------------------------------------------------------


class _Budget:
    def __init__(self, limits: Limits, where: str) -> None:
        self.limits = limits
        self.where = where
        self.members = 0
        self.total = 0

    def member(self, name: str, size: int, compressed: int | None = None) -> None:
        limits = self.limits
        self.members += 1
        if self.members > limits.max_members:
            raise FormatError(
                f"{self.where}: more than {limits.max_members} members; refusing the archive",
                limit="max_members",
            )
        if size > limits.max_file_bytes:
            raise FormatError(
                f"{self.where}: {name} is {size} bytes; the per-file limit is"
                f" {limits.max_file_bytes}",
                member=name,
                limit="max_file_bytes",
            )
        self.total += size
        if self.total > limits.max_total_bytes:
            raise FormatError(
                f"{self.where}: more than {limits.max_total_bytes} bytes uncompressed;"
                " refusing the archive",
                limit="max_total_bytes",
            )
        ratio_checked = compressed is not None and size > limits.ratio_floor
        if ratio_checked and size > limits.max_ratio * max(compressed or 0, 1):
            raise FormatError(
                f"{self.where}: {name} expands {size // max(compressed or 0, 1)}:1; the limit is"
                f" {limits.max_ratio}:1 (a zip bomb?)",
                member=name,
                limit="max_ratio",
            )


def _read_zip(data: bytes, where: str, limits: Limits) -> dict[str, bytes]:
    budget = _Budget(limits, where)
    files: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if info.is_dir():
                    check_member(info.filename.rstrip("/"), where=where)
                    continue
                name = check_member(info.filename, where=where)
                if (info.external_attr >> 16) & 0o170000 not in (0, 0o100000):
                    raise FormatError(f"{where}: member {name} is not a regular file")
                budget.member(name, info.file_size, info.compress_size)
                with archive.open(info) as stream:
                    content = stream.read(limits.max_file_bytes + 1)
                if len(content) != info.file_size:
                    raise FormatError(f"{where}: {name} is not the size its header says")
                if name in files:
                    raise FormatError(f"{where}: member {name} appears twice")
                files[name] = content
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        raise FormatError(f"{where}: not a readable zip archive ({exc})", file=where) from exc
    return files


def _read_tar(data: bytes, where: str, limits: Limits) -> dict[str, bytes]:
    budget = _Budget(limits, where)
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive:
                name = check_member(member.name.rstrip("/"), where=where)
                if member.isdir():
                    continue
                if not member.isreg():
                    raise FormatError(
                        f"{where}: member {name} is a link or a device, not a file; refusing",
                        member=name,
                    )
                budget.member(name, member.size)
                if budget.total > limits.ratio_floor and budget.total > limits.max_ratio * len(
                    data
                ):
                    raise FormatError(
                        f"{where}: expands past {limits.max_ratio}:1 (a compression bomb?)",
                        limit="max_ratio",
                    )
                stream = archive.extractfile(member)
                content = stream.read() if stream is not None else b""
                if len(content) != member.size:
                    raise FormatError(f"{where}: {name} is truncated")
                if name in files:
                    raise FormatError(f"{where}: member {name} appears twice")
                files[name] = content
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise FormatError(f"{where}: not a readable tar archive ({exc})", file=where) from exc
    return files


def read(data: bytes, *, where: str, limits: Limits = DEFAULT_LIMITS) -> dict[str, bytes]:
    """The files of an archive, after every limit and path check."""
    if len(data) > limits.max_total_bytes:
        raise FormatError(f"{where}: the archive is larger than {limits.max_total_bytes} bytes")
    if data.startswith(b"PK"):
        return _read_zip(data, where, limits)
    return _read_tar(data, where, limits)


def verify(files: Mapping[str, bytes], *, where: str) -> dict[str, Any]:
    """The manifest, once it validates and agrees with every file (E2 to E5)."""
    raw = files.get(MANIFEST)
    if raw is None:
        raise FormatError(f"{where}: no manifest.json at the archive root")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{where}:{MANIFEST}: not UTF-8 text (byte {exc.start})") from exc
    manifest = jsontext.loads(text, name=f"{where}:{MANIFEST}")
    errors = sorted(manifest_validator().iter_errors(manifest), key=lambda e: list(e.path))
    if errors:
        location = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
        raise FormatError(f"{where}:{MANIFEST}: {location}: {errors[0].message}")
    listed: dict[str, dict[str, Any]] = {}
    for entry in manifest["files"]:
        path = check_member(entry["path"], where=f"{where}:{MANIFEST}")
        if path in listed:
            raise FormatError(f"{where}:{MANIFEST}: {path} is listed twice")
        listed[path] = entry
    present = {name for name in files if name != MANIFEST}
    missing = sorted(set(listed) - present)
    if missing:
        raise FormatError(f"{where}: {missing[0]} is listed in the manifest but absent")
    unlisted = sorted(present - set(listed))
    if unlisted:
        raise FormatError(f"{where}: {unlisted[0]} is in the archive but not in the manifest")
    for path, entry in listed.items():
        data = files[path]
        if len(data) != entry["bytes"] or pcp.sha256_bytes(data) != entry["sha256"]:
            raise FormatError(
                f"{where}: {path} does not match its manifest checksum or size", member=path
            )
    prefix = manifest["memory"]["path"]
    pages = [n for n in present if n.startswith(prefix) and n.endswith(".md")]
    if len(pages) != manifest["memory"]["page_count"]:
        raise FormatError(
            f"{where}: the manifest counts {manifest['memory']['page_count']} pages;"
            f" the archive holds {len(pages)}"
        )
    core = manifest["profile"]["core"]
    if core not in files:
        raise FormatError(f"{where}: the core profile {core} is missing")
    return dict(manifest)


def audit_items(data: bytes, *, where: str) -> dict[str, list[dict[str, Any]]]:
    """troth's audit lines grouped by page path (other servers' lines are ignored)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for number, line in enumerate(data.decode("utf-8", "strict").split("\n"), start=1):
        if not line.strip():
            continue
        item = jsontext.loads(line, name=where, line=number)
        if isinstance(item, dict) and {"path", "at", "action", "actor"} <= set(item):
            kept = {k: item[k] for k in ("at", "action", "actor", "note") if k in item}
            grouped.setdefault(str(item["path"]), []).append(kept)
    return grouped


def decode(
    data: bytes,
    *,
    name: str = "export.tar",
    restore: bool = False,
    limits: Limits = DEFAULT_LIMITS,
    known: Collection[tuple[str, str]] = (),
    **_: Any,
) -> Decoded:
    """Every page of an archive as an item, after the whole archive has been checked.

    A page whose idempotency key (path, sha256 of its bytes) is in ``known`` is not parsed:
    those exact bytes were read and checked when they came in, so it is returned as a bare
    :func:`pcp.known_item` the service counts as unchanged.
    """
    files = read(data, where=name, limits=limits)
    manifest = verify(files, where=name)
    prefix = manifest["memory"]["path"]
    listed = {f["path"]: f["sha256"] for f in manifest["files"]}  # verified against the bytes
    exporter = manifest["exporter"]["name"]
    audit_path = (manifest.get("audit") or {}).get("path")
    audit: dict[str, list[dict[str, Any]]] = {}
    if restore and audit_path in files:
        audit = audit_items(files[audit_path], where=f"{name}:{audit_path}")
    items: list[Item] = []
    refused: list[Refusal] = []
    for member in sorted(n for n in files if n.startswith(prefix) and n.endswith(".md")):
        where = f"{name}:{member}"
        path = pcp.check_path(member[len(prefix) : -3], where=where)
        sha256 = listed.get(member) or pcp.sha256_bytes(files[member])
        if (path, sha256) in known:
            items.append(pcp.known_item(path, sha256, where=where))
            continue
        page = pcp.decode_page(files[member], where=where)
        item = pcp.page_item(
            page,
            path=path,
            sha256=sha256,
            where=where,
            restore=restore,
            exporter=exporter,
            audit=audit.get(path, ()),
        )
        (items if isinstance(item, Item) else refused).append(item)  # type: ignore[arg-type]
    return items, refused


def sniff(data: bytes, filename: str = "") -> bool:
    """A zip, a tar, or a gzip-compressed tar."""
    if data.startswith(ZIP_MAGIC):
        return True
    if len(data) > 262 and data[257:262] == b"ustar":
        return True
    return data.startswith(b"\x1f\x8b") and filename.endswith((".tar.gz", ".tgz"))


CODEC = register(FunctionCodec(NAME, sniff, decode, "PCP export archive (.tar, .tar.gz, .zip)"))

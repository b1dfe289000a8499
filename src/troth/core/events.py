"""Ledger events: how a lifecycle transition is written as a personaxis entry.

A troth entry is an ordinary personaxis v1.0 entry. What the chain must commit to
beyond the content — the event, the memory id, the actor and every structured field — is a
canonical (RFC 8785) metadata document whose sha256 is carried as the tag ``lm:meta:<hex>``.
Free text that must stay erasable (``reason``, ``title``, an audit ``note``) is committed
the way personaxis commits content: the metadata holds its sha256, the text itself is kept
beside the entry and replaced by ``[redacted]`` on erasure, so the chain still verifies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import rfc8785

from troth.core.chain import (
    REDACTED_MARKER,
    TARGET_PREFIX,
    Entry,
    Verification,
    entry_problem,
    sha256_hex,
)
from troth.core.jsontext import encoder

_js_string = json.encoder.encode_basestring

EVENTS: Final = (
    "propose",
    "no_store",
    "approve",
    "reject",
    "edit",
    "hide",
    "forget",
    "redact",
    "expire",
    "export",
    "checkpoint",
)
META_TAG: Final = "lm:meta:"
EVENT_TAG: Final = "lm:event:"
MEMORY_TAG: Final = "lm:memory:"
META_VERSION: Final = 1


def canonical(document: Mapping[str, Any]) -> str:
    """RFC 8785 canonical JSON text of a document."""
    return canonical_bytes(dict(document)).decode("utf-8")


CanonicalizationError = rfc8785.CanonicalizationError
"""Raised by :func:`canonical_bytes` for a value JCS cannot encode (e.g. a huge integer)."""


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical JSON (UTF-8 bytes) of any JSON value: the one place JCS is called."""
    text = _plain_text(value)
    data = None if text is None else _utf8(text)
    return data if data is not None else rfc8785.dumps(value)


# Every write canonicalises its event's metadata, and the library, written in Python, takes
# most of that time. For values made only of text, whole numbers within JSON's safe range,
# true/false/null, lists and mappings with ASCII keys, the standard encoder already writes
# the RFC 8785 bytes: it escapes text exactly as RFC 8785 section 3.2.2.2 says (the library
# uses the same escape table), and ASCII keys sort the same by code point as by UTF-16
# code unit. Anything else (a float, a non-ASCII key, a huge integer, a lone surrogate, a
# subclass) goes to the library, which also raises its errors.
# tests/core/test_events.py checks the two agree on generated values.
_SAFE_INTEGER: Final = 2**53 - 1
_PLAIN_NODES: Final = 100_000
_plain_encode = encoder(separators=(",", ":"), sort_keys=True)


def _plain_text(value: Any) -> str | None:
    """The canonical text of a plain value, or None to ask the library."""
    if not _plain(value):
        return None
    try:
        return _plain_encode(value)
    except RecursionError:  # nested deeper than the C encoder goes: the library decides
        return None


def _utf8(text: str) -> bytes | None:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the library's error says so
        return None


def _plain(value: Any) -> bool:
    pending, budget = [value], _PLAIN_NODES  # a cyclic value ends here, then in the library
    while pending and budget:
        budget -= 1
        item = pending.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -_SAFE_INTEGER <= item <= _SAFE_INTEGER:
                return False
        elif kind is dict:
            for key in item:
                if type(key) is not str or not key.isascii():
                    return False
            pending.extend(item.values())
        elif kind is list or kind is tuple:
            pending.extend(item)
        else:
            return False
    return not pending


@dataclass(frozen=True, slots=True)
class Event:
    """A decoded ledger event: what happened to which memory, by whom, with which data."""

    event: str
    memory: str
    actor: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)
    on_behalf_of: str | None = None
    supersedes: str | None = None
    memories: tuple[str, ...] = ()
    owner: str | None = None

    def meta(self) -> dict[str, Any]:
        """The metadata document the chain commits to (text values as their sha256)."""
        out: dict[str, Any] = {
            "v": META_VERSION,
            "event": self.event,
            "memory": self.memory,
            "actor": self.actor,
        }
        if self.fields:
            out["fields"] = dict(self.fields)
        if self.texts:
            out["texts"] = {name: sha256_hex(text) for name, text in self.texts.items()}
        if self.on_behalf_of is not None:
            out["on_behalf_of"] = self.on_behalf_of
        if self.supersedes is not None:
            out["supersedes"] = self.supersedes
        if self.memories:
            out["memories"] = list(self.memories)
        if self.owner is not None:
            out["owner"] = self.owner
        return out


@dataclass(frozen=True, slots=True)
class Record:
    """A stored ledger row: the personaxis entry plus its metadata and erasable texts."""

    seq: int
    entry: Entry
    meta: str | None = None
    texts: Mapping[str, str] = field(default_factory=dict)

    @property
    def meta_hash(self) -> str | None:
        """The committed metadata hash from the entry's tags, if it is a troth entry."""
        for tag in self.entry.tags:
            if tag.startswith(META_TAG):
                return tag[len(META_TAG) :]
        return None

    def decode(self) -> Event | None:
        """The event this row records, or None for a foreign (plain personaxis) entry."""
        if self.meta is None:
            return None
        document = json.loads(self.meta)
        return Event(
            event=document["event"],
            memory=document["memory"],
            actor=document["actor"],
            fields=document.get("fields", {}),
            texts=dict(self.texts),
            on_behalf_of=document.get("on_behalf_of"),
            supersedes=document.get("supersedes"),
            memories=tuple(document.get("memories", ())),
            owner=document.get("owner"),
        )


def event_tags(event: Event, meta_text: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Personaxis tags for an event: reserved ones first, then the troth namespace."""
    return (
        *extra,
        EVENT_TAG + event.event,
        MEMORY_TAG + event.memory,
        META_TAG + sha256_hex(meta_text),
    )


def record_problem(record: Record) -> str | None:
    """Why a row's metadata or erasable texts do not match what its entry commits to."""
    committed = record.meta_hash
    if committed is None:
        if record.meta is not None or record.texts:
            return "metadata is stored for an entry that does not commit to any"
        return None
    if record.meta is None:
        return "the entry commits to metadata that is missing"
    if sha256_hex(record.meta) != committed:
        return "metadata does not match its committed hash"
    # The metadata's bytes are the committed bytes, so they were canonical when written;
    # ``meta_problem`` checks the form itself where rows come from outside (restore).
    if _texts_match_fast(record):
        return None
    try:
        document = json.loads(record.meta)
    except json.JSONDecodeError:
        return "metadata is not valid JSON"
    if not isinstance(document, dict):
        return "metadata is not a JSON object"
    hashes = document.get("texts", {})
    if set(hashes) != set(record.texts):
        return "erasable texts do not match the committed set"
    for name, text in record.texts.items():
        if record.entry.redacted and text == REDACTED_MARKER:
            continue
        if sha256_hex(text) != hashes[name]:
            return f"{name} does not match its committed hash"
    return None


_META_END = ',"v":' + str(META_VERSION) + "}"


def _texts_match_fast(record: Record) -> bool:
    """True when the texts certainly match the committed hashes (without parsing the meta).

    In canonical JSON the top-level keys are sorted, and ``texts`` is followed only by
    ``v``: the committed text hashes are exactly the document's suffix
    ``"texts":{…},"v":1}``. A false answer proves nothing; the caller then parses.
    """
    meta = record.meta or ""
    if not record.texts:
        return '"texts":' not in meta
    if record.entry.redacted:
        return False
    inner = ",".join(
        f'{_js_string(name)}:"{sha256_hex(text)}"' for name, text in sorted(record.texts.items())
    )
    return meta.endswith('"texts":{' + inner + "}" + _META_END)


def meta_problem(record: Record) -> str | None:
    """Why a row's metadata, taken from outside the store, is not a troth event."""
    if record.meta is None:
        return None
    try:
        document = json.loads(record.meta)
    except json.JSONDecodeError:
        return "metadata is not valid JSON"
    if not isinstance(document, dict) or canonical(document) != record.meta:
        return "metadata is not in canonical form"
    if document.get("v") != META_VERSION or document.get("event") not in EVENTS:
        return "metadata is not a troth event of a known version"
    return None


def chain_problem(records: Sequence[Record]) -> tuple[int, str] | None:
    """Where and why rows taken from outside the store (a restore) do not verify: the chain
    by :func:`verify_records`, then each row's metadata by :func:`meta_problem`."""
    result = verify_records(records)
    if not result.ok:
        return result.broken_at or 0, result.reason or "the chain does not verify"
    for record in records:
        why = meta_problem(record)
        if why is not None:
            return record.seq, why
    return None


def verify_records(
    records: Iterable[Record],
    *,
    start_index: int = 0,
    prev_hash: str = "",
    owner: str | None = None,
) -> Verification:
    """Verify rows: each entry by personaxis rules, its position, then its metadata and texts.

    ``broken_at`` is the 0-based position of the first row that does not verify: a changed
    row is reported at its own index; a deleted, inserted or moved row at the first position
    whose content no longer follows from its predecessor.

    A whole chain (``start_index`` 0) is held to two rules more: its first entry, when it
    names an owner, names ``owner`` (given), so one owner's chain does not verify as
    another's; and every redacted entry is matched by a redaction recorded later in the
    chain (:class:`Redactions`), so content erased without its redact event is found.
    """
    index = start_index
    head = prev_hash
    sha256 = hashlib.sha256
    js = _js_string
    whole = start_index == 0 and not prev_hash
    redactions = Redactions() if whole else None
    for record in records:
        if whole and index == 0 and owner is not None:
            problem = owner_problem(record, owner)
            if problem is not None:
                return Verification(False, 0, head, broken_at=0, reason=problem)
        if redactions is not None and REDACT_TAG in record.entry.tags:
            redactions.note_event(record)
        # The common case inline (a v1.0, unredacted, troth row), with the same bytes
        # as ``v1_hash``; anything else, or any doubt, takes the reasoned path below.
        entry = record.entry
        meta = record.meta
        if (
            entry.content_hash is not None
            and not entry.redacted
            and meta is not None
            and entry.prev_hash == head
            and record.seq == index
            and sha256(entry.content.encode()).hexdigest() == entry.content_hash
            and sha256(
                (
                    f'{{"ts":{js(entry.ts)},"content_hash":{js(entry.content_hash)},'
                    f'"source":{js(entry.source)},"tags":[{",".join(map(js, entry.tags))}],'
                    f'"prev_hash":{js(head)}}}'
                ).encode()
            ).hexdigest()
            == entry.hash
            and record.meta_hash == sha256(meta.encode()).hexdigest()
            and _texts_match_fast(record)
        ):
            head = entry.hash
            index += 1
            continue
        problem = entry_problem(record.entry, head)
        if problem is None and record.seq != index:
            problem = f"row is numbered {record.seq} but sits at position {index}"
        if problem is None:
            problem = record_problem(record)
        if problem is not None:
            return Verification(False, index, head, broken_at=index, reason=problem)
        if redactions is not None:
            redactions.note_entry(index, record)
        head = record.entry.hash
        index += 1
    unmatched = None if redactions is None else redactions.unmatched()
    if unmatched is not None:
        at, why = unmatched
        return Verification(False, index, head, broken_at=at, reason=why)
    return Verification(True, index, head)


REDACT_TAG: Final = EVENT_TAG + "redact"
UNMATCHED_REDACTION: Final = (
    "the entry is redacted, but no redact event in the chain names it: its content was"
    " erased without a recorded redaction"
)
UNERASED_REDACTION: Final = (
    "a redact event names an entry that is not redacted: an erased row was put back"
    " (an older copy of it replayed)"
)
_PERSONAXIS_REDACTION: Final = "[deleted by user request: redacted:"


def owner_problem(record: Record, owner: str) -> str | None:
    """Why a chain's first row does not belong to ``owner`` (None: it does, or names none).

    A troth chain commits to its owner in its first entry's metadata (``owner``); every
    later entry commits to that one through ``prev_hash``. Chains written before owners
    were committed, and plain personaxis chains, name none: only a witnessed checkpoint,
    whose origin names the owner, binds those.
    """
    if record.meta is None or '"owner":' not in record.meta:
        return None
    try:
        named = json.loads(record.meta).get("owner")
    except (json.JSONDecodeError, AttributeError):
        return None  # the metadata check reports it
    if named is None or named == owner:
        return None
    return f"the chain's first entry commits to the owner {named}, not {owner}: this is another owner's chain"


class Redactions:
    """Redacted entries seen so far, and the redactions recorded for them.

    A redacted entry is matched by a later redaction that names it: a tombstone of a
    ``redact`` event (or a personaxis ``redacted:`` tombstone) aimed at its hash, or a
    ``redact`` event about a memory the entry is about (its own memory, or a fact a session
    checkpoint quoted).
    """

    def __init__(self) -> None:
        self._entries: list[tuple[int, str, frozenset[str]]] = []
        self._targets: set[str] = set()
        self._memories: set[str] = set()
        self._erased: dict[str, int] = {}  # a troth redact event's target -> its position

    def note_event(self, record: Record) -> None:
        """A troth ``redact`` event: what it erased."""
        for tag in record.entry.tags:
            if tag.startswith(MEMORY_TAG):
                self._memories.add(tag[len(MEMORY_TAG) :])
            elif tag.startswith(TARGET_PREFIX):
                self._targets.add(tag[len(TARGET_PREFIX) :])
                self._erased.setdefault(tag[len(TARGET_PREFIX) :], record.seq)

    def note_entry(self, index: int, record: Record) -> None:
        """Any verified row: a redacted one waits for its match; a personaxis redaction
        tombstone matches its target."""
        entry = record.entry
        redaction = entry.is_tombstone and entry.content.startswith(_PERSONAXIS_REDACTION)
        if redaction and entry.target is not None:
            self._targets.add(entry.target)
        if not entry.redacted:
            return
        about = {t[len(MEMORY_TAG) :] for t in entry.tags if t.startswith(MEMORY_TAG)}
        event = record.decode() if record.meta is not None else None
        if event is not None:
            about.update(str(f) for f in event.fields.get("facts", ()) if isinstance(f, str))
        self._entries.append((index, entry.hash, frozenset(about)))

    def unmatched(self) -> tuple[int, str] | None:
        """The first redacted entry no redaction names, or the first entry a troth redact
        event erased that is whole again: its position and why."""
        redacted = set()
        for index, entry_hash, about in self._entries:
            if entry_hash not in self._targets and not about & self._memories:
                return index, UNMATCHED_REDACTION
            redacted.add(entry_hash)
        put_back = [seq for target, seq in self._erased.items() if target not in redacted]
        if put_back:
            return min(put_back), UNERASED_REDACTION
        return None


def check_head(result: Verification, length: int, head: str) -> Verification:
    """Hold a verified chain against the head recorded beside it (catches a cut tail).

    A chain that verifies but ends elsewhere than the recorded head is broken at the first
    position where the two disagree: the first extra row, the first missing row, or the
    last row when the lengths agree and the heads do not.
    """
    # An unmatched redaction is found once the whole chain is read (its ``length`` and
    # ``head`` are the chain's): a cut tail, which may have taken the redact event with it,
    # is the finding to report first.
    whole = result.ok or result.reason in (UNMATCHED_REDACTION, UNERASED_REDACTION)
    if not whole or (result.length == length and result.head == head):
        return result
    if result.length > length:
        at, why = length, f"the chain has {result.length} entries; its recorded head {length}"
    elif result.length < length:
        at, why = (
            result.length,
            f"the chain has {result.length} entries; its recorded head {length}",
        )
    else:
        at, why = max(length - 1, 0), "the last entry is not the recorded head"
    return Verification(False, result.length, result.head, broken_at=at, reason=why)

"""Provenance is carried, never upgraded: where a memory's text came from, through every change.

A memory's *source* is the channel its text came through and the principal who wrote it
there. A text derived from several sources — an edit of an earlier memory, a version that
supersedes another — takes the weakest of them (the FIDES rule: what is derived from
untrusted data stays untrusted), ties going to the older source, so the first writer stays
named. A person's approval or edit is an *endorsement*, recorded beside the source: it makes
a proposal active and says who vouched for the text, but it never raises the channel's
trust, and it never clears the injection flag. docs/api.md ("Trust model") explains it.

Pure: no I/O. The chain commits to both in a creation event's metadata: ``fields.origin``
(``{"actor", "channel"}`` of the weakest source, when it is not the entry's own writer) and
``fields.endorsed_by`` (the people who vouched for the text as it was written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from troth.core.records import MemoryRecord

ORIGIN_FIELD: Final = "origin"
ENDORSED_FIELD: Final = "endorsed_by"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a text came from: the channel it came through and who wrote it there."""

    channel: str
    writer: str

    def to_json(self) -> dict[str, Any]:
        """The committed form: ``{"actor", "channel"}``."""
        return {"actor": self.writer, "channel": self.channel}


def source_of(memory: MemoryRecord) -> Source:
    """The source a memory's text carries: its channel and the writer of its origin."""
    return Source(memory.channel, memory.writer)


def weakest(sources: Sequence[Source], trust: Mapping[str, int]) -> Source:
    """The least trusted of ``sources`` (the first of equals: the older source stays named)."""
    if not sources:
        raise ValueError("weakest() needs at least one source")
    return min(sources, key=lambda s: trust.get(s.channel, 0))


def origin_of(fields: Mapping[str, Any]) -> str:
    """The writer of a creation event's origin (``fields.origin.actor``), or "" when the
    event's own actor wrote it (so a ledger written before origins were kept folds alike)."""
    origin = fields.get(ORIGIN_FIELD)
    if isinstance(origin, Mapping) and isinstance(origin.get("actor"), str):
        return str(origin["actor"])
    return ""


def endorsed(memory: MemoryRecord, person: str) -> tuple[str, ...]:
    """The memory's endorsements once ``person`` has vouched for it (each person once)."""
    return memory.endorsed_by if person in memory.endorsed_by else (*memory.endorsed_by, person)

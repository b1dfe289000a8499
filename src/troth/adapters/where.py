"""Filters the review page adds to a listing or a search: tags, the agent, a date range.

The facade filters by status and kind itself; these narrower filters are applied here, in
the adapter, over the facade's own pages, so the listing keeps the facade's order (newest
first) and an honest ``total``. Applying them reads the owner's matching memories once per
request, which a personal ledger (thousands of memories) affords.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from troth.core.errors import InvalidInputError
from troth.core.records import MemoryRecord
from troth.service.scoped import ScopedMemory

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PAGE = 200  # the facade's largest page


def _day(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not _DAY.fullmatch(value):
        raise InvalidInputError(f"{name} is a date like 2026-12-01; got {value!r}", field=name)
    try:
        date.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(
            f"{name} {value!r} is not a day of the calendar", field=name
        ) from None
    return value


@dataclass(frozen=True, slots=True)
class Where:
    """Tags a memory must all carry, who wrote it, and the days it was created between."""

    tags: tuple[str, ...] = ()
    agent: str | None = None
    since: str | None = None
    until: str | None = None

    @classmethod
    def of(
        cls,
        tags: Iterable[str] | None,
        agent: str | None,
        since: str | None,
        until: str | None,
    ) -> Where:
        """Checked filters from query parameters (empty values mean no filter)."""
        # since after until is an empty range (nothing matches), not an error: the OpenAPI
        # document cannot say that one parameter bounds another, and must allow what it says.
        first, last = _day(since, "since"), _day(until, "until")
        return cls(
            tags=tuple(t for t in (tags or ()) if t),
            agent=agent or None,
            since=first,
            until=last,
        )

    @property
    def empty(self) -> bool:
        """No filter at all: the facade's own page is the answer."""
        return not self.tags and self.agent is None and self.since is None and self.until is None

    def matches(self, memory: MemoryRecord) -> bool:
        """Whether a memory passes every filter (dates compare the UTC day it was created)."""
        day = memory.created_at[:10]
        return (
            (not self.tags or set(self.tags) <= set(memory.tags))
            and (self.agent is None or memory.actor == self.agent)
            and (self.since is None or day >= self.since)
            and (self.until is None or day <= self.until)
        )


def filtered_page(
    scoped: ScopedMemory,
    where: Where,
    *,
    statuses: tuple[str, ...] | None,
    kinds: tuple[str, ...] | None,
    limit: int,
    offset: int,
) -> tuple[list[MemoryRecord], int]:
    """One page of the memories that pass ``where``, newest first, and how many pass."""
    page: list[MemoryRecord] = []
    total = 0
    start = 0
    while True:
        items, _ = scoped.memories(statuses=statuses, kinds=kinds, limit=PAGE, offset=start)
        for memory in items:
            if where.matches(memory):
                if offset <= total < offset + limit:
                    page.append(memory)
                total += 1
        if len(items) < PAGE:
            return page, total
        start += PAGE

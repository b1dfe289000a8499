"""Recall: the query value object and hits with the reasons they ranked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ledgermind.core.records import Memory

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Query:
    """What to recall, for whom, and within which bounds."""

    text: str
    owner: str | None = None
    limit: int = 10
    kinds: tuple[str, ...] | None = None
    scope: str | None = None
    partition: str | None = None
    tags: tuple[str, ...] = ()
    include_sensitive: bool = False
    include_stale: bool = True
    include_archived: bool = False
    valid_on: str | None = None
    as_of: str | None = None


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled memory, its score and why it ranked where it did."""

    memory: Memory
    score: float
    why: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "id": self.memory.id,
            "score": round(self.score, 6),
            "content": self.memory.content,
            "kind": self.memory.kind,
            "created_at": self.memory.created_at,
            "why": self.why,
        }


def fts_match(text: str) -> str | None:
    """An FTS5 expression matching any word of ``text``, every token quoted (no syntax)."""
    words = [w for w in _WORD.findall(text.lower()) if w]
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))

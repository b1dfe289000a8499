"""The JSON texts a recall's searches and ranking rows come back as, parsed with orjson.

A recall's two searches and its ranking rows come back from the store as JSON texts, one
row each (``storage.sqlite.search``: every row fetched takes the GIL again), and the ids it
sends go as one JSON text: at 100k memories ~1,100 candidates and ~180 ranking rows a
recall. orjson parses them about twice as fast as the standard library's decoder
(docs/benchmarks.md, "Issue 19, 2026-12-08, second session", for what it saves a recall).

Only for these texts, whose values the store itself wrote: ids, row numbers, positions,
scores printed as text and the ranking fields of ``storage.rows.recall_row`` (a free-form
speaker that is not text is dropped there). orjson reads an integer past 64 bits as a
float, where the standard library keeps it. Writes refuse one (RFC 8785's domain), but a
document written by hand or by another tool may hold one, so a memory's stored document
is read by the standard library (``storage.rows.memory_from_doc``). Within 64 bits the values are the standard
library's: the same floats to the bit (both round correctly), ints, strings, lists and
dicts, the last of a repeated key kept. A text orjson refuses (NaN, Infinity, an escaped
lone surrogate) is read by the standard library, which raises its own error for a text
that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson

__all__ = ["id_list", "parse"]


def parse(text: str | bytes) -> Any:
    """The value of a packed JSON text, as ``json.loads`` gives it (ints within 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def id_list(ids: Iterable[str] | Iterable[int]) -> str:
    """A JSON array of these ids (strings or row numbers), as text: a statement's one
    parameter for many ids."""
    values = list(ids)
    try:
        return orjson.dumps(values).decode()
    except orjson.JSONEncodeError:  # a lone surrogate: the standard library escapes it
        return json.dumps(values)

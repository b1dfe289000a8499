"""Untrusted JSON and YAML values, read or refused with a sentence — never a traceback.

Every codec that reads a file someone else wrote goes through :func:`loads` (or, for YAML,
through :func:`check_value` after parsing), so three defects end in a ``FormatError`` that
names the file and line instead of escaping as a Python exception:

- nesting deeper than :data:`MAX_DEPTH` (the standard decoder recurses, and a file of
  100,000 ``[`` would otherwise end in ``RecursionError``);
- a lone surrogate escape such as ``"\\ud800"``, which JSON's grammar accepts but which is no
  character: no store, hash or export could encode it;
- malformed JSON, with the decoder's line and column.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from troth.core.errors import FormatError

# Deep enough for every format troth reads (a PCP page nests four levels, a HUX record three),
# shallow enough that no reader after this one (jsonschema, canonical JSON) can recurse out.
MAX_DEPTH = 64

# Only text that holds a surrogate escape needs the walk that finds a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def loads(text: str, *, name: str, line: int | None = None) -> Any:
    """Parse one JSON document read from ``name`` (at ``line``, for JSON Lines)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        at = exc.lineno if line is None else line
        raise FormatError(
            f"{name}:{at}: not valid JSON ({exc.msg} at column {exc.colno})", file=name, line=at
        ) from exc
    except RecursionError as exc:
        at = 1 if line is None else line
        raise FormatError(
            f"{name}:{at}: JSON nested deeper than {MAX_DEPTH} levels; no format troth reads"
            " nests that deep",
            file=name,
            line=at,
        ) from exc
    check_value(value, name=name, line=line, escapes=bool(_SURROGATE_ESCAPE.search(text)))
    return value


def check_value(value: Any, *, name: str, line: int | None = None, escapes: bool = True) -> None:
    """Refuse a parsed value nested deeper than MAX_DEPTH or holding a lone surrogate.

    ``escapes=False`` says the source text had no surrogate escape, so only depth is checked.
    The walk is iterative: the value may be as deep as the parser allowed.
    """
    at = 1 if line is None else line
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if escapes:
                _check_text(item, name=name, line=at)
            continue
        if not isinstance(item, Mapping | list):
            continue
        if depth > MAX_DEPTH:
            raise FormatError(
                f"{name}:{at}: nested deeper than {MAX_DEPTH} levels; no format troth reads"
                " nests that deep",
                file=name,
                line=at,
            )
        if isinstance(item, Mapping):
            for key, member in item.items():
                stack.append((key, depth))
                stack.append((member, depth + 1))
        else:
            stack.extend((member, depth + 1) for member in item)


def _check_text(text: str, *, name: str, line: int) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FormatError(
            f"{name}:{line}: holds the lone surrogate \\u{ord(text[exc.start]):04x}, which is"
            " not a character; re-export the file with valid UTF-8 text",
            file=name,
            line=line,
        ) from exc

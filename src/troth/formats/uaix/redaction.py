"""Redaction by field path: remove what a request's ``redactions`` names before anything is stored.

Path syntax (relative to the body's ``parameters``)::

    path    = name { "." name | "[" index "]" }
    name    = letter-or-underscore { letter | digit | underscore }
    index   = "0" | nonzero-digit { digit }        (0-based, into the array as sent)

Examples: ``summary``, ``stable_facts[2]``, ``participant_id``, ``turn_window.end_turn_id``.
Every index refers to the array as it was sent, so ``stable_facts[1]`` and ``stable_facts[2]``
remove the second and third facts whatever the order they are listed in. A path that names
nothing, or reaches into ``redactions`` itself, is refused — a typo must not leave data behind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from troth.core.errors import InvalidInputError
from troth.formats.uaix.refusals import InvalidRequestError

__all__ = ["Path", "apply_redactions", "parse_path"]

#: A parsed path: member names (``str``) and array indexes (``int``), outermost first.
Path = tuple[str | int, ...]

_NAME: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_STEP: Final = re.compile(rf"\.({_NAME})|\[(0|[1-9][0-9]*)\]")
_HEAD: Final = re.compile(_NAME)


def parse_path(text: str) -> Path:
    """Parse a field path such as ``stable_facts[2]``; raise ``InvalidInputError`` if malformed."""
    head = _HEAD.match(text)
    if head is None:
        raise _bad(text, "it must start with a member name such as summary")
    steps: list[str | int] = [head.group(0)]
    position = head.end()
    while position < len(text):
        step = _STEP.match(text, position)
        if step is None:
            raise _bad(text, f"unexpected {text[position:]!r}; use .name or [index]")
        name, index = step.groups()
        steps.append(name if name is not None else int(index))
        position = step.end()
    return tuple(steps)


def apply_redactions(parameters: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """A copy of ``parameters`` without the members and array items ``fields`` name.

    ``redactions`` itself is kept (it holds field names and reasons, never values). Raises
    ``InvalidInputError`` (code ``invalid-redaction``) for a malformed path or one that names
    nothing.
    """
    paths = []
    for text in fields:
        path = parse_path(text)
        if path[0] == "redactions":
            raise _bad(text, "the redactions list itself cannot be redacted")
        if not _exists(parameters, path):
            raise _bad(text, "no such field in parameters")
        paths.append(path)
    removed = frozenset(paths)
    result = _without(parameters, (), removed)
    assert isinstance(result, dict)  # a mapping in, a dict out
    return result


def _exists(value: Any, path: Path) -> bool:
    for step in path:
        in_object = isinstance(step, str) and isinstance(value, Mapping) and step in value
        in_array = isinstance(step, int) and isinstance(value, list) and step < len(value)
        if not (in_object or in_array):
            return False
        value = value[step]
    return True


def _without(value: Any, here: Path, removed: frozenset[Path]) -> Any:
    if isinstance(value, Mapping):
        return {
            key: _without(item, (*here, key), removed)
            for key, item in value.items()
            if (*here, key) not in removed
        }
    if isinstance(value, list):
        return [
            _without(item, (*here, index), removed)
            for index, item in enumerate(value)
            if (*here, index) not in removed
        ]
    return value


def _bad(text: str, why: str) -> InvalidInputError:
    return InvalidRequestError(
        f"redaction field {text!r} is not usable: {why}; paths are relative to parameters, "
        "e.g. summary, stable_facts[2], turn_window.end_turn_id",
        uaix_code="invalid-redaction",
        field=text,
    )

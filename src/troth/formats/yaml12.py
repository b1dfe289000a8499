"""YAML 1.2 frontmatter: a strict reader and a small deterministic writer.

PCP validates frontmatter "as the JSON data model of YAML 1.2's core schema (timestamps are
strings)". The reader is ruamel.yaml's pure safe loader set to 1.2, with the timestamp tag
read as the string it is, so ``2026-01-08`` and ``yes`` stay strings. The writer emits block
YAML whose every string that could read as anything else is double-quoted (JSON escapes, which
YAML's double-quoted style shares), so what it writes reads back as the same JSON data under
YAML 1.2 and 1.1 alike, and the same data always gives the same bytes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from troth.core.errors import FormatError
from troth.formats import jsontext

MAX_NODES = 10_000  # values in one frontmatter; aliases count each time they are reached


class _Constructor(SafeConstructor):
    """The safe constructor, but a timestamp stays a string (YAML 1.2 core schema)."""


_Constructor.add_constructor(
    "tag:yaml.org,2002:timestamp",
    lambda self, node: self.construct_scalar(node),
)

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./@+-]*(?: [A-Za-z0-9_./@+-]+)*$")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_SPECIAL = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf"}
# Characters YAML does not allow raw in a double-quoted scalar (outside its printable set),
# and the ones YAML 1.1 readers take for line breaks (NEL, LS, PS).
_NONPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def load(text: str, *, where: str, first_line: int = 1) -> Any:
    """Parse YAML 1.2 text; a FormatError names ``where`` and the line of the defect.

    Text in the exact form :func:`dump` writes is read by a small reader of that form (about
    fifty times faster); anything else goes to ruamel.yaml.
    """
    fast = load_canonical(text)
    if fast is not None:
        _count(fast, where)
        jsontext.check_value(fast, name=where, line=first_line)
        return fast
    reader = YAML(typ="safe", pure=True)
    reader.version = (1, 2)
    reader.Constructor = _Constructor
    try:
        value = reader.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + (mark.line if mark is not None else 0)
        problem = exc.problem or exc.context or "malformed YAML"
        raise FormatError(
            f"{where}:{line}: bad YAML ({problem})", file=where.split(":")[0], line=line
        ) from exc
    except (YAMLError, ValueError, TypeError) as exc:
        raise FormatError(f"{where}:{first_line}: bad YAML ({exc})", line=first_line) from exc
    except RecursionError as exc:
        raise FormatError(
            f"{where}:{first_line}: YAML nested deeper than {jsontext.MAX_DEPTH} levels;"
            " frontmatter never nests that deep",
            line=first_line,
        ) from exc
    _count(value, where)
    jsontext.check_value(value, name=where, line=first_line)
    return value


def _count(value: Any, where: str) -> None:
    """Refuse documents that expand past MAX_NODES values (alias bombs)."""
    budget = MAX_NODES
    stack = [value]
    while stack:
        item = stack.pop()
        budget -= 1
        if budget < 0:
            raise FormatError(f"{where}: frontmatter has more than {MAX_NODES} values")
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _string(value: str) -> str:
    if _PLAIN.fullmatch(value) and value.lower() not in _SPECIAL and not value.endswith((":", ".")):
        return value
    quoted = json.dumps(value, ensure_ascii=False)
    return _NONPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def scalar(value: Any) -> str:
    """One scalar as YAML text that reads back as the same JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FormatError(f"cannot write the number {value!r} in frontmatter")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    raise FormatError(f"cannot write a {type(value).__name__} in frontmatter")


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise FormatError(f"frontmatter keys are strings; got {key!r}")
    if _PLAIN_KEY.fullmatch(key) and key.lower() not in _SPECIAL:
        return key
    return _flow(key)


def _flow(value: Any) -> str:
    """A nested list inside a list, written as JSON (valid YAML flow)."""
    return _NONPRINTABLE.sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False)
    )


def _lines(value: Mapping[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for key, item in value.items():
        name = _key(key)
        if isinstance(item, Mapping):
            if not item:
                out.append(f"{pad}{name}: {{}}")
            else:
                out.append(f"{pad}{name}:")
                out.extend(_lines(item, indent + 2))
        elif isinstance(item, list | tuple):
            if not item:
                out.append(f"{pad}{name}: []")
            else:
                out.append(f"{pad}{name}:")
                out.extend(_items(item, indent + 2))
        else:
            out.append(f"{pad}{name}: {scalar(item)}")
    return out


def _items(values: Sequence[Any], indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for item in values:
        if isinstance(item, Mapping) and item:
            inner = _lines(item, indent + 2)
            out.append(f"{pad}- {inner[0].lstrip()}")
            out.extend(inner[1:])
        elif isinstance(item, Mapping):
            out.append(f"{pad}- {{}}")
        elif isinstance(item, list | tuple):
            out.append(f"{pad}- {_flow(list(item))}")
        else:
            out.append(f"{pad}- {scalar(item)}")
    return out


def dump(value: Mapping[str, Any]) -> str:
    """Block YAML for a mapping of JSON data, one line per scalar, ending with a newline."""
    if not value:
        return "{}\n"
    return "".join(line + "\n" for line in _lines(value, 0))


# -- reading what dump wrote -------------------------------------------------------------------


class _NotCanonicalError(Exception):
    """The text is not in the form dump writes (the full YAML reader takes it)."""


_DECODER = json.JSONDecoder()
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?[0-9][0-9.]*(?:e[+-][0-9]+)?")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_CONSTANTS: dict[str, Any] = {"null": None, "true": True, "false": False}


def load_canonical(text: str) -> dict[str, Any] | None:
    """The mapping ``text`` holds if it is exactly what :func:`dump` writes for it, else None.

    Why this is safe: the result is accepted only when ``dump(result) == text``, and what dump
    writes reads back under YAML 1.2 as the same data (``test_yaml_frontmatter_reads_back_as_the
    _same_json``), so any reader gives the value returned here. Speed matters on import: the pure
    ruamel.yaml reader takes about 3 ms per page.
    """
    if not text.endswith("\n") or text == "{}\n":
        return {} if text == "{}\n" else None
    lines = text[:-1].split("\n")
    try:
        value, end = _block_mapping(lines, 0, 0)
    except (_NotCanonicalError, ValueError, IndexError, RecursionError):
        return None
    if end != len(lines):
        return None
    try:
        if dump(value) != text:
            return None
    except FormatError:
        return None
    return value


def _split_key(rest: str) -> tuple[str, str]:
    """A ``key: value`` line body as (key, value text); value text is "" for a nested block."""
    if rest.startswith('"'):
        key, end = _DECODER.raw_decode(rest)
        if not isinstance(key, str):
            raise _NotCanonicalError
    else:
        found = _KEY.match(rest)
        if found is None:
            raise _NotCanonicalError
        key, end = found.group(), found.end()
    tail = rest[end:]
    if tail == ":":
        return key, ""
    if not tail.startswith(": ") or len(tail) == 2:
        raise _NotCanonicalError
    return key, tail[2:]


def _scalar(token: str) -> Any:
    if token in _CONSTANTS:
        return _CONSTANTS[token]
    if token == "{}":
        return {}
    if token[0] in '"[':
        value, end = _DECODER.raw_decode(token)
        if end != len(token):
            raise _NotCanonicalError
        return value
    if _INT.fullmatch(token):
        return int(token)
    if _FLOAT.fullmatch(token):
        return float(token)
    return token


def _block_mapping(lines: list[str], start: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    pad = " " * indent
    index = start
    while index < len(lines) and lines[index].startswith(pad) and lines[index][indent] != " ":
        if lines[index][indent:].startswith("- "):
            break
        key, token = _split_key(lines[index][indent:])
        if key in out:
            raise _NotCanonicalError
        out[key], index = _value(lines, index + 1, indent, token)
    if index == start:
        raise _NotCanonicalError
    return out, index


def _value(lines: list[str], index: int, indent: int, token: str) -> tuple[Any, int]:
    if token:
        return _scalar(token), index
    inner = " " * (indent + 2)
    if index < len(lines) and lines[index].startswith(inner + "- "):
        return _block_list(lines, index, indent + 2)
    return _block_mapping(lines, index, indent + 2)


def _block_list(lines: list[str], start: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    dash = " " * indent + "- "
    index = start
    while index < len(lines) and lines[index].startswith(dash):
        rest = lines[index][len(dash) :]
        try:
            key, token = _split_key(rest)
        except (_NotCanonicalError, ValueError):
            out.append(_scalar(rest))
            index += 1
            continue
        # A mapping item: its first key on the dash line, the others two spaces further in.
        first, index = _value(lines, index + 1, indent + 2, token)
        mapping = {key: first}
        inner = " " * (indent + 2)
        if index < len(lines) and lines[index].startswith(inner):
            more, index = _block_mapping(lines, index, indent + 2)
            if set(more) & set(mapping):
                raise _NotCanonicalError
            mapping.update(more)
        out.append(mapping)
    return out, index

"""``storage.packed`` reads the packed texts as ``json.loads`` does and writes ids it reads back;
a stored document, which may hold an integer past 64 bits, is read by the standard library."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.test_events import JSON_VALUES, TEXT
from troth.config import load_policy
from troth.service.memory import Memory
from troth.storage.base import Store
from troth.storage.packed import id_list, parse
from troth.storage.rows import memory_doc, memory_from_doc

LAYOUTS = [
    {},  # the standard library's default: ASCII, escaped
    {"ensure_ascii": False, "separators": (",", ":")},  # a stored document's layout
]


def same(left: Any, right: Any) -> bool:
    """Equal values, NaN equal to NaN, and a float never equal to an int of its value."""
    if isinstance(left, float) and isinstance(right, float):
        return (math.isnan(left) and math.isnan(right)) or left == right
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, dict):
        return list(left) == list(right) and all(same(left[k], right[k]) for k in left)
    return bool(left == right)


@pytest.mark.parametrize("layout", LAYOUTS)
@given(value=JSON_VALUES)
def test_parse_reads_what_the_standard_library_reads(layout: dict[str, Any], value: Any) -> None:
    text = json.dumps(value, **layout)
    assert same(parse(text), json.loads(text))


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_are_the_same_to_the_bit(number: float) -> None:
    # The lexical search prints its scores with '%!.17g' and reads them back.
    assert parse(f"[{number!r}]")[0].hex() == number.hex()


@pytest.mark.parametrize(
    "text",
    [
        '{"extra": {"x": NaN}}',
        "[Infinity, -Infinity]",
        '{"s": "\\ud800"}',
        '{"a": 1, "a": 2}',
    ],
)
def test_texts_orjson_refuses_are_read_by_the_standard_library(text: str) -> None:
    assert same(parse(text), json.loads(text))


def test_a_stored_document_keeps_an_integer_past_64_bits(any_store: Store) -> None:
    # Writes refuse one (RFC 8785's domain), but a document written by hand or by another
    # tool may hold one, and orjson would read it as a float: documents are not packed.
    memory = Memory(any_store, policy=load_policy(None), principal="human:ann")
    written = memory.remember("the big number", extra={"x_count": 1}).memory
    assert written is not None
    document = json.loads(memory_doc(written))
    document["extra"]["x_count"] = 2**70
    kept = memory_from_doc(json.dumps(document))
    assert kept.extra["x_count"] == 2**70
    assert isinstance(kept.extra["x_count"], int)


def test_a_text_neither_reads_raises_the_standard_librarys_error() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        parse('{"unterminated": [1, 2')
    # orjson's error subclasses it: only the standard library's own says the fallback ran.
    assert type(raised.value) is json.JSONDecodeError


@pytest.mark.parametrize("number", [2**63 - 1, 2**64 - 1, -(2**63), 2**53 + 1])
def test_integers_within_64_bits_stay_integers(number: int) -> None:
    assert parse(f"[{number}]") == [number]
    assert isinstance(parse(f"[{number}]")[0], int)


@pytest.mark.parametrize("text", ["0." + "0" * 323 + "5", "5e-324", "1.7976931348623157e308"])
def test_long_decimal_forms_read_as_the_standard_library_reads_them(text: str) -> None:
    # PostgreSQL's jsonb writes a number's decimal digits in full.
    assert parse(f"[{text}]")[0].hex() == json.loads(f"[{text}]")[0].hex()


@given(st.lists(TEXT, max_size=20))
def test_id_list_writes_the_ids_as_a_json_array(ids: list[str]) -> None:
    # Lone surrogates included: orjson refuses them, the standard library escapes them.
    assert json.loads(id_list(ids)) == ids
    assert json.loads(id_list(iter(ids))) == ids


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=20))
def test_id_list_writes_row_numbers(rids: list[int]) -> None:
    assert json.loads(id_list(rids)) == rids

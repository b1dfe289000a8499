"""Ledger events: canonical JSON agrees with the RFC 8785 library on every value."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from troth.core.events import CanonicalizationError, canonical, canonical_bytes

# Text with what RFC 8785 treats specially: control characters, quotes and backslashes,
# U+007F and U+2028, characters above U+E000 beside ones outside the BMP (where UTF-16
# and code point order differ), and lone surrogates, which cannot be encoded at all.
TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(['"', "\\", "\x00", "\x1f", "\x7f", "\u2028", "\ue000", "\U0001f600"]),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    ),
    max_size=12,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.one_of(TEXT, st.sampled_from(["a", "b", "é", "\ue000"])), inner),
    ),
    max_leaves=12,
)


def library(value: Any) -> bytes | type[Exception]:
    try:
        return rfc8785.dumps(value)
    except ValueError as exc:  # CanonicalizationError, or UnicodeEncodeError for a key
        return type(exc)


def ours(value: Any) -> bytes | type[Exception]:
    try:
        return canonical_bytes(value)
    except ValueError as exc:  # CanonicalizationError, or UnicodeEncodeError for a key
        return type(exc)


@given(JSON_VALUES)
def test_canonical_bytes_are_the_libraries_bytes_or_its_error(value: Any) -> None:
    assert ours(value) == library(value)


@given(st.dictionaries(TEXT, JSON_VALUES, max_size=5))
def test_canonical_text_is_the_libraries_text(document: dict[str, Any]) -> None:
    expected = library(document)
    if isinstance(expected, bytes):
        assert canonical(document) == expected.decode("utf-8")
    else:
        with pytest.raises(expected):
            canonical(document)


def test_a_lone_surrogate_in_a_key_fails_as_in_the_library() -> None:
    with pytest.raises(UnicodeEncodeError):
        canonical_bytes({"\ud800": 1})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": [True, None, "x\ny"]}, b'{"a":[true,null,"x\\ny"],"b":1}'),
        ({"\U0001f600": 1, "\ue000": 2}, '{"\U0001f600":1,"\ue000":2}'.encode()),  # UTF-16 order
        ({"n": 2**53 - 1}, b'{"n":9007199254740991}'),
        ({"f": 1.0, "g": 1e21}, b'{"f":1,"g":1e+21}'),
        ({"c": "\x1f\u2028\x7f"}, '{"c":"\\u001f\u2028\x7f"}'.encode()),
    ],
)
def test_known_canonical_forms(value: dict[str, Any], expected: bytes) -> None:
    assert canonical_bytes(value) == expected


@pytest.mark.parametrize("value", [{"n": 2**53}, {"s": "\ud800"}, {"x": float("nan")}])
def test_values_json_cannot_carry_raise_the_libraries_error(value: dict[str, Any]) -> None:
    with pytest.raises(CanonicalizationError):
        canonical_bytes(value)


def test_a_cyclic_value_is_refused_not_walked_forever() -> None:
    value: list[Any] = []
    value.append(value)
    with pytest.raises(RecursionError):  # the library's answer; the fast path gives up
        canonical_bytes({"loop": value})

"""The write path's JSON encoders write what ``json.JSONEncoder(ensure_ascii=False)`` writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.core.test_events import JSON_VALUES as VALUES  # non-ASCII, non-BMP, floats, NaN
from tests.core.test_events import SCALARS, TEXT
from troth.core.jsontext import encoder

KEYS = st.one_of(
    TEXT,
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=False, width=32),
    st.booleans(),
    st.none(),
)
OPTIONS = [
    {},
    {"separators": (",", ":")},
    {"separators": (",", ":"), "sort_keys": True},
]


def outcome(encode: Any, value: Any) -> str | tuple[type[Exception], str]:
    try:
        return str(encode(value))
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("options", OPTIONS)
@given(value=VALUES)
def test_the_text_is_the_standard_encoders(options: dict[str, Any], value: Any) -> None:
    reference = json.JSONEncoder(ensure_ascii=False, **options).encode
    assert outcome(encoder(**options), value) == outcome(reference, value)


@pytest.mark.parametrize("options", OPTIONS)
@given(value=st.dictionaries(KEYS, SCALARS, max_size=5))
def test_keys_of_any_kind_are_written_or_refused_alike(
    options: dict[str, Any], value: dict[Any, Any]
) -> None:
    reference = json.JSONEncoder(ensure_ascii=False, **options).encode
    assert outcome(encoder(**options), value) == outcome(reference, value)


@pytest.mark.parametrize(
    "value",
    [{1, 2}, b"bytes", object(), {"a": [1, {"b": {3}}]}],
    ids=["set", "bytes", "object", "nested set"],
)
def test_an_unsupported_value_raises_the_standard_error(value: Any) -> None:
    with pytest.raises(TypeError, match="is not JSON serializable"):
        encoder()(value)
    assert outcome(encoder(), value) == outcome(json.JSONEncoder(ensure_ascii=False).encode, value)


def test_a_circular_value_is_refused_every_time_and_leaves_no_trace() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    encode = encoder(separators=(",", ":"))
    for _ in range(2):
        with pytest.raises(ValueError, match="Circular reference detected"):
            encode({"x": loop})
    shared = [1, 2]
    assert encode([shared, shared]) == "[[1,2],[1,2]]"  # seen twice is not circular

"""The fast reader of dump's own form agrees with ruamel.yaml, or declines."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from tests.formats.test_codecs import JSON, TEXT
from troth.formats import yaml12


def ruamel(text: str) -> Any:
    reader = YAML(typ="safe", pure=True)
    reader.version = (1, 2)
    reader.Constructor = yaml12._Constructor
    return reader.load(text)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(TEXT, JSON, max_size=6))
def test_the_fast_reader_reads_what_dump_wrote(data: dict[str, Any]) -> None:
    text = yaml12.dump(data)
    assert yaml12.load_canonical(text) == data == ruamel(text)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(TEXT, JSON, min_size=1, max_size=4),
    st.integers(0, 10_000),
    st.sampled_from([" ", "-", ":", '"', "\n", "[", "#", "a", "1", "&", "*", "!", ""]),
)
def test_an_edited_text_is_read_as_ruamel_reads_it_or_declined(
    data: dict[str, Any], where: int, char: str
) -> None:
    text = yaml12.dump(data)
    at = where % len(text)
    edited = text[:at] + char + text[at + 1 :]
    fast = yaml12.load_canonical(edited)
    if fast is not None:
        assert fast == ruamel(edited)


def test_other_yaml_goes_to_the_full_reader() -> None:
    for text in ("a: 2026-01-08\n", "a: [1, 2]\n", "a:   b\n", "a: b\n\n", "a: 1.0e5\n", "- a\n"):
        assert yaml12.load_canonical(text) is None
        with contextlib.suppress(YAMLError, yaml12.FormatError):
            assert yaml12.load(text, where="t") == ruamel(text)

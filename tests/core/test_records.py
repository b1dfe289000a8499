"""Value objects: principals, scopes and ids refuse near-misses such as a trailing newline."""

from __future__ import annotations

import pytest

from ledgermind.core.errors import InvalidInputError
from ledgermind.core.records import Scope, check_principal


@pytest.mark.parametrize("value", ["human:alice\n", "human:", "robot:x", "human:a b", ""])
def test_a_malformed_principal_is_refused(value: str) -> None:
    with pytest.raises(InvalidInputError, match="not a principal"):
        check_principal(value)


def test_a_scope_id_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        Scope("project", "p1\n")

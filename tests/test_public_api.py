"""``troth``'s curated public API: a sorted ``__all__`` that names everything it should."""

from __future__ import annotations

import inspect

import pytest

import troth
from troth.core import errors


def test_all_is_sorted() -> None:
    assert list(troth.__all__) == sorted(troth.__all__)


def test_all_names_exactly_the_public_names_the_package_defines() -> None:
    public = {name for name in vars(troth) if not name.startswith("_")}
    modules = {name for name in public if inspect.ismodule(getattr(troth, name))}
    assert set(troth.__all__) == public - modules


def test_every_error_of_the_tree_is_exported() -> None:
    tree = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.TrothError)
    }
    assert tree <= set(troth.__all__)


def test_the_facade_and_its_value_objects_are_exported() -> None:
    assert {"Memory", "Draft", "WriteResult", "Query", "RecallHit"} <= set(troth.__all__)


@pytest.mark.parametrize("name", troth.__all__)
def test_every_exported_name_is_importable_documented_and_troths_own(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from troth import {name}", namespace)  # the way a user imports it
    member = namespace[name]
    assert member is getattr(troth, name)
    assert inspect.getdoc(member), f"troth.{name} has no docstring"
    assert getattr(member, "__module__", "").startswith("troth."), name


def test_the_version_is_the_distributions() -> None:
    from importlib.metadata import version

    assert troth.__version__ == version("troth")

"""The shipped JSON Schemas (2020-12) and validators for them, loaded with importlib.resources."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Final

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

__all__ = [
    "ERROR_SCHEMA",
    "REQUEST_SCHEMA",
    "RESPONSE_SCHEMA",
    "SCHEMA_FILES",
    "definition_validator",
    "load_schema",
    "validator",
]

REQUEST_SCHEMA: Final = "request.schema.json"
RESPONSE_SCHEMA: Final = "response.schema.json"
ERROR_SCHEMA: Final = "error.schema.json"
#: Every schema file the package ships; they refer to each other by their ``urn:`` ids.
SCHEMA_FILES: Final = (
    REQUEST_SCHEMA,
    RESPONSE_SCHEMA,
    ERROR_SCHEMA,
    "checkpoint-result.schema.json",
    "drift-audit-result.schema.json",
    "restore-brief-result.schema.json",
)


@cache
def _load(name: str) -> str:
    return (resources.files(__package__) / "schemas" / name).read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """A fresh copy of one shipped schema, by file name (one of :data:`SCHEMA_FILES`)."""
    if name not in SCHEMA_FILES:
        raise KeyError(f"no shipped schema {name!r}; choose one of {', '.join(SCHEMA_FILES)}")
    schema: dict[str, Any] = json.loads(_load(name))
    return schema


@cache
def _registry() -> Registry[Any]:
    resources_ = [Resource.from_contents(load_schema(name)) for name in SCHEMA_FILES]
    return Registry().with_resources((str(r.id()), r) for r in resources_)


@cache
def validator(name: str) -> Draft202012Validator:
    """A validator for one shipped schema, resolving the others by id; built once, reused."""
    return Draft202012Validator(load_schema(name), registry=_registry())


@cache
def definition_validator(name: str, definition: str) -> Draft202012Validator:
    """A validator for ``$defs/<definition>`` of one shipped schema (for precise error reports)."""
    ref = f"{load_schema(name)['$id']}#/$defs/{definition}"
    return Draft202012Validator({"$ref": ref}, registry=_registry())

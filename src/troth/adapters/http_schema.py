"""The HTTP API keeps the promises of its OpenAPI document, for every route, new ones too.

:func:`conform` is applied once to the app (``http.create_api``), after or before routes
are added:

- every error leaves in the documented ``{"error", "message"}`` shape: the errors FastAPI and
  Starlette raise themselves (an unreadable body, an unknown path, a wrong method) included,
  never their ``{"detail": …}``; an unreadable body is ``invalid_input`` (422) like any other
  bad input;
- the document declares what the service checks (``core/limits.py``, the patterns of
  ``core/records.py``) through the shared parameter types below, so a request the schema
  allows is one the service accepts, and one it refuses is refused;
- in the document, a query or path parameter is never ``null`` (a URL cannot say null: an
  absent parameter is the default), and every ``422`` is the error shape.

``tests/adapters/test_fuzz.py`` runs schemathesis's conformance checks over the document.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from troth.core.limits import MAX_ID_CHARS
from troth.core.records import ID_PATTERN

__all__ = ["DAY_PATTERN", "Day", "MemoryId", "OptionalMemoryId", "conform"]

DAY_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
"""A calendar day, as the listing and search filters take it (``adapters/where.py``)."""

MemoryId = Annotated[
    str,
    Path(
        pattern=ID_PATTERN.pattern,
        max_length=MAX_ID_CHARS,
        description="a memory id (letters, digits and ._:-)",
    ),
]
"""A memory id in a path: the service's id pattern, declared."""

OptionalMemoryId = Annotated[
    str | None,
    Query(pattern=ID_PATTERN.pattern, max_length=MAX_ID_CHARS, description="a memory id"),
]
"""A memory id in a query string."""

Day = Annotated[
    str | None,
    Query(
        pattern=DAY_PATTERN,
        description="a day like 2026-12-01",
        json_schema_extra={"format": "date"},
    ),
]
"""A day filter (``since``, ``until``)."""

# The error code of a status Starlette or FastAPI answers by itself.
_CODES = {401: "unauthenticated", 403: "denied", 404: "not_found", 405: "method_not_allowed"}


def conform(app: FastAPI) -> None:
    """Give ``app`` the error shape for every error and an OpenAPI document that says so."""

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        status, detail = error.status_code, str(error.detail)
        code = _CODES.get(status, "invalid_input" if status < 500 else "internal_error")
        if status == 400:
            # FastAPI's "There was an error parsing the body": bytes that are not text.
            status, code = 422, "invalid_input"
            message = f"the request body could not be read ({detail}); send UTF-8 JSON"
        elif status == 404:
            message = f"there is no route {request.url.path}; the routes are in /openapi.json"
        elif status == 405:
            message = f"{request.url.path} does not answer {request.method}; see /openapi.json"
        else:
            message = detail
        return JSONResponse(
            {"error": code, "message": message}, status_code=status, headers=error.headers
        )

    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _tidy(original())  # FastAPI's document, cached on the app, then tidied in place
        return app.openapi_schema or {}

    app.openapi = openapi  # type: ignore[method-assign]


def _tidy(document: dict[str, Any]) -> None:
    """Parameters are never null; every 422 answer is the error shape."""
    error = {"$ref": "#/components/schemas/ErrorOut"}
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                options = schema.get("anyOf")
                if options:
                    kept = [o for o in options if o.get("type") != "null"]
                    if len(kept) == 1:
                        del schema["anyOf"]
                        schema.update(kept[0])
            invalid = operation.get("responses", {}).get("422")
            if invalid is not None:
                invalid["content"] = {"application/json": {"schema": error}}
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas.setdefault(
        "ErrorOut",
        {
            "title": "ErrorOut",
            "type": "object",
            "properties": {
                "error": {"type": "string", "title": "Error"},
                "message": {"type": "string", "title": "Message"},
            },
            "required": ["error", "message"],
        },
    )

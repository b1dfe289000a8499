"""The versions troth speaks, each defined once: its own, and the PCP version it writes."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Final

#: The Portable Context Protocol version of the archives and discovery document troth writes.
PCP_VERSION: Final = "0.3"


def package_version() -> str:
    """The installed distribution's version (``pyproject.toml`` is its one source)."""
    try:
        return version("troth")
    except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
        return "0"


#: troth's version, as the OpenAPI document, the MCP server and PCP manifests report it.
VERSION: Final = package_version()

"""The trust gate's answer as the HTTP API and MCP publish it: one model for both schemas.

``POST /api/gate`` (``http_gate.py``) and the MCP tool ``trust.gate`` (``mcp_gate.py``) return
:class:`GateAnswer`, validated from ``Justification.to_dict()``, so the two schemas and the
library's answer cannot drift apart.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class WeakestSource(BaseModel):
    """The memory that decided the answer: the weakest source of those asked about."""

    memory: str
    channel: str
    writer: str = Field(description="Who wrote the text at its origin.")
    trust: int = Field(description="The trust the gate gave it (0: flagged or not active).")
    flagged: bool
    endorsed_by: list[str] = Field(
        description="People who approved or edited it; an endorsement does not raise trust."
    )


class GateAnswer(BaseModel):
    """The gate's answer, the same on every surface."""

    allowed: bool
    action: str
    required: int = Field(description="The least trust the action needs.")
    trust: int = Field(description="The trust of the weakest source.")
    reason: str
    weakest: WeakestSource | None

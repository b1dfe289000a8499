"""Every size limit of troth, defined once.

The service validates against these (``service/validation.py``, ``service/scoped.py``); the
HTTP API's pydantic models (and so its OpenAPI schema) and the MCP tools' schemas declare
the same numbers by importing them, and ``tests/adapters/test_limits.py`` holds the
OpenAPI schema to them.
"""

from __future__ import annotations

from typing import Final

# -- a memory -----------------------------------------------------------------------------
MAX_CONTENT_CHARS: Final = 2000
MAX_TITLE_CHARS: Final = 300
MAX_REASON_CHARS: Final = 280  # why a memory was written
MAX_TAGS: Final = 64
MAX_TAG_CHARS: Final = 100
MAX_SCOPE_CHARS: Final = 200  # global, project:ID or conversation:ID
MAX_SESSION_CHARS: Final = 256
MAX_EVIDENCE_CHARS: Final = 512

# -- audit notes (HUX caps a note at 200 characters) ----------------------------------------
MAX_NOTE_CHARS: Final = 200  # approve/reject/hide notes, forget reasons
REDACTION_PREFIX: Final = "redacted: "
#: A redaction's reason is kept as the note ``redacted: <reason>``, within the note limit.
MAX_REDACTION_REASON_CHARS: Final = MAX_NOTE_CHARS - len(REDACTION_PREFIX)

# -- reads ----------------------------------------------------------------------------------
MAX_QUERY_CHARS: Final = 2000
MAX_RECALL_LIMIT: Final = 1000  # Memory.recall
MAX_SEARCH_LIMIT: Final = 100  # a caller's search (HTTP, MCP)
MAX_LIST_LIMIT: Final = 200
MAX_LIST_OFFSET: Final = 1_000_000
MIN_BRIEF_CHARS: Final = 100
MAX_BRIEF_CHARS: Final = 20000
MAX_AUDIT_LIMIT: Final = 1000
MAX_AUDIT_START: Final = 10**9
MAX_ID_CHARS: Final = 128

# -- the trust gate (docs/api.md, "Trust model") ----------------------------------------
MAX_GATE_MEMORIES: Final = 100  # the memories one question to the gate may name
MAX_ACTION_CHARS: Final = 64  # an action's name, as the policy's [actions] table spells it

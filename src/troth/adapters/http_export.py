"""How ``GET /api/export`` answers: the one file an export is, named, with its checkpoint.

The service decides the bytes (``service/exports.py``: :meth:`Memory.export_file`, the same
bytes ``troth export -o NAME.zip`` writes); this module only says them in HTTP: the zip as
the body, its name in ``Content-Disposition``, and the signed checkpoint it carries also in
a header, so a client can check or witness it without opening the zip (docs/api.md).
"""

from __future__ import annotations

import base64
from typing import Any, Final

from fastapi.responses import Response

from troth.service.exports import MEDIA_TYPE, ExportFile

#: The type of every export the route answers with: a zip (a PCP archive or a bundle).
EXPORT_MEDIA_TYPE: Final = MEDIA_TYPE

#: The header carrying an export's signed checkpoint: the C2SP signed note, base64.
CHECKPOINT_HEADER: Final = "Troth-Checkpoint"

EXPORT_HEADERS: Final[dict[str, Any]] = {
    "Content-Disposition": {
        "description": "attachment, with the file's name, e.g."
        ' `attachment; filename="troth-human-alice.personaxis.zip"`',
        "schema": {"type": "string"},
    },
    CHECKPOINT_HEADER: {
        "description": "the signed checkpoint the export was cut at (the C2SP signed note the"
        " zip also holds), base64; absent when the server signs nothing",
        "schema": {"type": "string", "contentEncoding": "base64"},
    },
}


def export_response(handed: ExportFile) -> Response:
    """The answer carrying ``handed``: its bytes (a zip), name and checkpoint."""
    headers = {"Content-Disposition": f'attachment; filename="{handed.name}"'}
    if handed.note is not None:
        headers[CHECKPOINT_HEADER] = base64.b64encode(handed.note).decode("ascii")
    return Response(handed.data, media_type=EXPORT_MEDIA_TYPE, headers=headers)


__all__ = ["CHECKPOINT_HEADER", "EXPORT_HEADERS", "EXPORT_MEDIA_TYPE", "export_response"]

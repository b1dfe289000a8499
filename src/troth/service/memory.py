"""The ``Memory`` facade: remember, recall, approve, forget, redact, verify — the use cases.

Adapters (CLI, HTTP, MCP) call this class and nothing below it. Every write runs inside one
store transaction that holds the owner's chain: the chain is verified up to its head, the
transition is checked against the current state, one entry is appended and the projection
is updated — or nothing happens at all.

The use cases live in one module each and meet here:

- ``base.py``: state, who acts on whose ledger, the verified write path;
- ``writes.py``: remember, remember_many, admit, edit (``drafts.py``: their value objects);
- ``changes.py``: approve, reject, hide, forget, redact;
- ``retention.py``: sweep;
- ``integrity.py``: verify, rebuild, reindex, restore_chain, reanchor;
- ``reads.py``: get, memories, log, may_justify, recall;
- this module: opening and closing, and the doors to portability and checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from troth.core.errors import InvalidInputError
from troth.service.base import Clock, utc_now
from troth.service.changes import MemoryChanges
from troth.service.drafts import Draft, WriteResult
from troth.service.integrity import MemoryIntegrity, OwnerReport
from troth.service.reads import MemoryReads
from troth.service.retention import MemoryRetention
from troth.service.writes import MemoryWrites
from troth.storage.base import MemoryFilter

if TYPE_CHECKING:
    from pathlib import Path

    from troth.service.portability import ExportResult, ImportReport

__all__ = ["Clock", "Draft", "Memory", "MemoryFilter", "OwnerReport", "WriteResult", "utc_now"]


class Memory(MemoryWrites, MemoryChanges, MemoryRetention, MemoryIntegrity, MemoryReads):
    """Long-term memory for one installation: the use cases over a store and a policy."""

    # -- composition ------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        home: str | None = None,
        *,
        principal: str | None = None,
        policy_path: str | None = None,
        clock: Clock = utc_now,
    ) -> Memory:
        """Open the embedded default store under ``home`` (or TROTH_HOME)."""
        from troth.config import Settings, build_memory

        settings = Settings.load(home=home, principal=principal, policy_path=policy_path)
        return build_memory(settings, clock=clock)

    def close(self) -> None:
        """Release the store's connections."""
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- formats and checkpoints (service/portability.py, service/checkpoints.py) -------

    def export(self, fmt: str, *, owner: str | None = None) -> tuple[bytes, int]:
        """An owner's ledger as personaxis JSONL, or its memories as HUX records."""
        from troth.formats import hux, personaxis

        whose = self._owner(owner, self.principal)
        if fmt == "personaxis":
            entries = [r.entry for r in self.store.records(whose)]
            return personaxis.encode(entries), len(entries)
        if fmt in ("hux", "hux-jsonl"):
            items = self.store.memories(whose, MemoryFilter())
            return hux.encode(reversed(items), lines=fmt == "hux-jsonl"), len(items)
        raise InvalidInputError(
            f"unknown export format {fmt!r}; use personaxis or hux", field="format"
        )

    def export_to(
        self,
        fmt: str,
        output: Path,
        *,
        owner: str | None = None,
        at: datetime | None = None,
    ) -> ExportResult:
        """Export to a file: a PCP archive (.tar or .zip), personaxis JSONL or HUX records."""
        from troth.service import portability

        return portability.export_to(self, fmt, output, owner=owner, at=at)

    def import_path(
        self,
        path: Path,
        *,
        fmt: str | None = None,
        mode: str = "import",
        owner: str | None = None,
        reanchor: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import or restore a file, an archive or a folder of notes (service/portability.py)."""
        from troth.service import portability

        return portability.import_path(
            self, path, fmt=fmt, mode=mode, owner=owner, reanchor=reanchor, progress=progress
        )

    def embed_copied(
        self, owners: Sequence[str], *, progress: Callable[[int, int], None] | None = None
    ) -> dict[str, Any]:
        """Embed these owners' memories in one bulk load — after a migration into this store
        (vectors are not copied: each store makes its own). A store whose vectors come from
        another model keeps them: re-embedding would switch the model and drop every other
        owner's. Returns ``{"embedded": n}``, with a ``note`` when nothing could be done."""
        embedder = self.embedder
        if embedder is None or not owners:
            return {"embedded": 0}
        recorded = self.store.vector_model()
        if recorded is not None and tuple(recorded) != (embedder.name, embedder.dim):
            return {
                "embedded": 0,
                "note": f"the target's vectors are made by {recorded[0]}; the copied memories"
                f" were not embedded with {embedder.name}: run `troth reindex` against it",
            }
        done = 0

        def advance(count: int, total: int) -> None:
            if progress is not None:
                progress(done + count, total)

        with self.bulk_load():
            for owner in owners:
                done += self.reindex(owner, progress=advance)[owner]
        return {"embedded": done}

    def handle_checkpoint(
        self,
        raw: bytes,
        *,
        caller: str | None = None,
        owner: str | None = None,
        include_sensitive: bool | None = None,
    ) -> bytes:
        """Answer a Spiralist UAIX checkpoint request envelope; returns the response envelope.

        ``caller`` is the authenticated principal (default: this facade's principal) and must
        equal the envelope's ``trust.principal``. The checkpoint lives in ``owner``'s ledger
        (default: the caller, who must then be a person). Create, drift audit and restore
        brief; refusals are ``uai.error.v1`` answers, not exceptions. Everything one request
        writes — memories, the ``checkpoint`` event, the stored reply — is one transaction.
        Sensitive memories join a restore brief only if ``include_sensitive`` (default: the
        caller is the owner). See ``docs/checkpoints.md``.
        """
        from troth.service.checkpoints import handle_checkpoint

        return handle_checkpoint(
            self, raw, caller=caller, owner=owner, include_sensitive=include_sensitive
        )

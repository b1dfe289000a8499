"""The ``Memory`` facade: remember, recall, approve, forget, redact, verify — the public verbs.

Adapters (CLI, HTTP, MCP) call this class and nothing below it. It is a thin facade: each
verb checks nothing and decides nothing itself, but delegates in one line to the use case
that does (``service/compose.py`` wires them, and draws the map):

- ``writes.py``: remember, remember_many, admit, edit, decide, bulk_load;
- ``changes.py``: reject, hide; ``reviews.py``: approve, forget, redact (at once, or a
  request the person approves: ``requests.py``);
- ``retention.py``: sweep;
- ``integrity.py``: verify, rebuild, restore_chain, reanchor (``vectors.py``: reindex);
- ``reads.py``: get, memories, log, may_justify, recall;
- ``portability.py``: import_path; ``exports.py``: export, export_to, export_file;
- ``checkpoints.py``: handle_checkpoint;
- ``migration.py``: migrate; ``tokens.py``: tokens.

Every write runs inside one store transaction that holds the owner's chain
(``ledger.py``): the chain is verified up to its head, the transition is checked against
the current state, one entry is appended and the projection is updated — or nothing
happens at all.

Before delegating, every verb that names a ledger or a memory asks the one access authority
(``access.py``, :attr:`Memory.access`): the facade holds its principal to its grant
(``core.access.library_grant``: a person their own ledger), and ``acting_as`` gives the
facade seen through a token's grant, which the HTTP API and the MCP tools use. The
maintenance verbs (sweep, verify, rebuild, reindex, reanchor, migrate) read no memory's
text and work store-wide, as the installation's (docs/api.md, "Access").
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from troth.core.access import READ, WRITE, Grant, library_grant
from troth.core.policy import Decision, Justification, Policy
from troth.core.records import MemoryRecord
from troth.service.access import Access
from troth.service.base import Clock, utc_now
from troth.service.changes import FORGET_REASON
from troth.service.compose import Services
from troth.service.drafts import Draft, WriteFields, WriteItem, WriteResult
from troth.service.exports import ExportFile
from troth.service.integrity import OwnerReport
from troth.service.migration import MigrationReport
from troth.service.portability import ExportResult, ImportReport
from troth.service.proofs import Proofs
from troth.service.readcheck import Anchor
from troth.service.recall import Query, RecallHit
from troth.service.tokens import Tokens
from troth.storage.base import MemoryFilter, Store

if TYPE_CHECKING:
    from troth.core.chain import Entry, Verification
    from troth.core.events import Record
    from troth.embedding import Embedder
    from troth.service.sealing import Sealer

__all__ = ["Clock", "Draft", "Memory", "MemoryFilter", "OwnerReport", "WriteResult", "utc_now"]

Progress = Callable[[int, int], None]


class Memory:
    """Long-term memory for one installation: the use cases over a store and a policy."""

    def __init__(
        self,
        store: Store,
        *,
        policy: Policy,
        principal: str,
        clock: Clock = utc_now,
        embedder: Embedder | None = None,
        max_concurrent_recalls: int | None = None,
    ) -> None:
        self.parts = Services(
            store,
            policy=policy,
            principal=principal,
            clock=clock,
            embedder=embedder,
            max_concurrent_recalls=max_concurrent_recalls,
        )
        self.store = store
        self.policy = policy
        self.principal = self.parts.parties.principal
        self.clock = clock
        self.embedder = embedder
        self.max_concurrent_recalls = self.parts.reads.max_concurrent_recalls
        # The authority reads through the checked store: a memory it hands a verb is one the
        # owner's chain makes (service/readcheck.py), on every surface.
        self.access = Access(self.parts.parties.store, library_grant(self.principal))
        self.held = False

    def acting_as(self, grant: Grant) -> Memory:
        """This facade seen through another grant (a token's): the same store, collaborators
        and recall gate, every verb held to ``grant`` by the one access authority."""
        view = copy.copy(self)
        view.access = Access(self.parts.parties.store, grant)
        view.held = True
        return view

    def as_actor(self, actor: str | None) -> Access:
        """The access authority of a call naming ``actor``: the library takes its caller's
        word for who acts (as it does for its principal), so a write naming another actor
        is held to that actor's grant; a facade seen through a token is held to the token's
        whatever a call says (``acting_as``)."""
        if self.held or actor is None or actor == self.principal:
            return self.access
        return Access.relayed(self.parts.parties.store, actor, self.principal)

    # -- opening and closing ----------------------------------------------------------

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
        # The one lazy import of the package (tests/test_architecture.py): the library's own
        # entry point asks the composition root, which imports this module.
        from troth.config import Settings, build_memory

        settings = Settings.load(home=home, principal=principal, policy_path=policy_path)
        return build_memory(settings, clock=clock)

    def anchor(self, anchor: Anchor | None) -> None:
        """Hold every owner's chain against its witnesses before it is first read or rebuilt.

        ``anchor`` (e.g. ``Sealer.witnessed``) answers the witnessed size of an owner's
        newest checkpoint or raises what it found; ``Memory.open`` and the adapters set it
        from the configured witnesses (docs/ledger.md, section 13).
        """
        self.parts.check.anchor = anchor
        self.parts.check.forget()

    def close(self) -> None:
        """Save the read check's folds (``ReadCheck.folds``) and release the connections."""
        self.parts.check.save()
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- writes (writes.py) -----------------------------------------------------------

    def decide(
        self,
        text: str,
        *,
        topic: str = "general",
        channel: str = "user",
        actor: str | None = None,
        owner: str | None = None,
    ) -> Decision:
        """What the policy would decide for a write, without writing."""
        return self.parts.writes.decide(
            text, topic=topic, channel=channel, actor=actor, owner=self.as_actor(actor).owner(owner)
        )

    def remember(
        self,
        text: str,
        *,
        owner: str | None = None,
        actor: str | None = None,
        channel: str | None = None,
        on_behalf_of: str | None = None,
        draft: Draft | None = None,
        **details: Unpack[WriteFields],
    ) -> WriteResult:
        """Write a memory; the policy decides whether it is kept, proposed or not stored.

        ``channel`` defaults by the one rule of ``core.access.default_channel``: ``user``
        for a person writing into their own ledger, ``synthesis`` for anyone else.
        """
        return self.parts.writes.remember(
            text,
            owner=self.as_actor(actor).writable(owner, "write memories"),
            actor=actor,
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
            details=details,
        )

    def remember_many(
        self,
        items: Iterable[str | WriteItem],
        *,
        owner: str | None = None,
        actor: str | None = None,
        channel: str | None = None,
        on_behalf_of: str | None = None,
        draft: Draft | None = None,
        **details: Unpack[WriteFields],
    ) -> list[WriteResult]:
        """Write many memories into one ledger in one transaction: all of them, or none.

        Each item is the text, or a mapping with ``text`` and any per-item field of
        :meth:`remember` (``kind``, ``topic``, ``reason`` …) overriding the shared ones.
        """
        return self.parts.writes.remember_many(
            items,
            owner=self.as_actor(actor).writable(owner, "write memories"),
            actor=actor,
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
            details=details,
        )

    def bulk_load(self) -> AbstractContextManager[None]:
        """Defer the store's index upkeep to one build when a large load ends."""
        return self.parts.writes.bulk_load()

    def admit(
        self,
        text: str,
        *,
        owner: str,
        status: str | None = None,
        actor: str | None = None,
        channel: str = "user",
        on_behalf_of: str | None = None,
        draft: Draft | None = None,
    ) -> WriteResult:
        """Write a memory carried in from an export, keeping the review state it had there."""
        return self.parts.writes.admit(
            text,
            owner=self.as_actor(actor).writable(owner, "write memories"),
            status=status,
            actor=actor,
            channel=channel,
            on_behalf_of=on_behalf_of,
            draft=draft,
        )

    def edit(
        self,
        memory_id: str,
        text: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        channel: str | None = None,
        on_behalf_of: str | None = None,
        **details: Unpack[WriteFields],
    ) -> WriteResult:
        """Supersede a memory with new text: a new memory; the old one leaves retrieval.

        The policy decides the new memory like any write: a person's own edit is kept at
        once; an agent's (``actor`` an agent, ``on_behalf_of`` the person) is proposed, and
        the old memory stays retrievable until the person approves it. The new memory keeps
        the source it derives from — the weaker channel, its origin's writer, the injection
        flag — and the owner's own edit is recorded as their endorsement (docs/api.md).
        """
        self.as_actor(actor).require(WRITE, "edit memories")
        return self.parts.writes.edit(
            memory_id,
            text,
            actor=actor,
            owner=self.as_actor(actor).memory(memory_id, owner).owner,
            channel=channel,
            details=details,
            on_behalf_of=on_behalf_of,
        )

    # -- changes (changes.py) and retention (retention.py) ----------------------------

    def approve(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """A person approves a proposed memory; it becomes active and retrievable. Approving
        a request to forget or redact (``service/requests.py``) carries the act out."""
        found = self.as_actor(actor).memory(memory_id, owner)
        return self.parts.reviews.approve(found, actor=actor, note=note)

    def reject(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """A person rejects a proposed memory; it is never retrievable."""
        whose = self.as_actor(actor).memory(memory_id, owner).owner
        return self.parts.changes.reject(memory_id, actor=actor, owner=whose, note=note)

    def hide(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        note: str | None = None,
    ) -> MemoryRecord:
        """Remove a memory from retrieval without forgetting it (``retrieval_removed``)."""
        whose = self.as_actor(actor).memory(memory_id, owner).owner
        return self.parts.changes.hide(memory_id, actor=actor, owner=whose, note=note)

    def forget(
        self,
        memory_id: str,
        *,
        actor: str | None = None,
        owner: str | None = None,
        reason: str = FORGET_REASON,
    ) -> MemoryRecord:
        """Forget a memory at once: a tombstone; its bytes stay until redacted. Anyone the
        policy does not let destroy at once (an agent) gets a request the person approves
        (``service/requests.py``): the proposed request is returned."""
        found = self.as_actor(actor).memory(memory_id, owner)
        return self.parts.reviews.forget(found, actor=actor, reason=reason)

    def redact(
        self, memory_id: str, *, reason: str, actor: str | None = None, owner: str | None = None
    ) -> MemoryRecord:
        """Erase a memory's text from every byte the store keeps; the chain still verifies.
        As for :meth:`forget`, an agent's redaction is a request the person approves."""
        found = self.as_actor(actor).memory(memory_id, owner)
        return self.parts.reviews.redact(found, actor=actor, reason=reason)

    def sweep(self, *, now: datetime | None = None, owner: str | None = None) -> list[MemoryRecord]:
        """Expire what retention says is over (ttl, PCP expires) and erase its text."""
        return self.parts.retention.sweep(now=now, owner=owner)

    # -- integrity (integrity.py, vectors.py) ------------------------------------------

    def verify(self, owner: str | None = None) -> list[OwnerReport]:
        """Verify each chain and compare each stored projection with a rebuild."""
        return self.parts.integrity.verify(owner)

    def rebuild(self, owner: str | None = None) -> list[dict[str, Any]]:
        """Recompute each projection from its ledger; reports whether it equalled the stored."""
        return self.parts.integrity.rebuild(owner)

    def compact(self) -> int:
        """Rewrite every file erased text lived in (PostgreSQL ``VACUUM FULL``; SQLite a
        truncated WAL), which finishes the pending erasures (no scrub runs first): the
        by-construction finish of erasure, for a maintenance window. Returns the erasures
        still pending (0 when done)."""
        store = self.parts.store
        store.compact()
        return store.pending_erasures()

    def reindex(
        self,
        owner: str | None = None,
        *,
        batch: int = 1000,
        progress: Progress | None = None,
    ) -> dict[str, int]:
        """Recompute the vector of every retrievable memory (all owners, or one)."""
        owners = self.parts.parties.owners(owner)
        return self.parts.vectors.reindex(owners, batch=batch, progress=progress)

    def restore_chain(
        self, owner: str, entries: Iterable[Entry | Record], *, actor: str | None = None
    ) -> Verification:
        """Write a personaxis chain verbatim into an empty ledger and project it."""
        whose = self.as_actor(actor).writable(owner, "restore a chain")
        return self.parts.integrity.restore_chain(whose, entries, actor=actor)

    def reanchor(self, owner: str | None = None, *, actor: str | None = None) -> dict[str, str]:
        """Re-anchor a ledger holding legacy (≤0.10) lines into v1.0 form."""
        return self.parts.integrity.reanchor(owner, actor=actor)

    def embed_copied(
        self, owners: Sequence[str], *, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Embed these owners' memories in one bulk load, after a migration into this store."""
        return self.parts.vectors.embed_copied(owners, progress=progress)

    # -- reads (reads.py) -------------------------------------------------------------

    def get(self, memory_id: str, *, owner: str | None = None) -> MemoryRecord:
        """One memory, whatever its status (one this facade's grant may read)."""
        return self.access.memory(memory_id, owner)

    def memories(
        self, owner: str | None = None, query: MemoryFilter | None = None
    ) -> list[MemoryRecord]:
        """An owner's memories, newest first."""
        return self.parts.reads.memories(self.access.owner(owner), self.access.listing(query))

    def count(self, owner: str | None = None, query: MemoryFilter | None = None) -> int:
        """How many of an owner's memories a filter matches (its limit and offset aside)."""
        flt = replace(self.access.listing(query), limit=None, offset=0)
        return self.store.count(self.access.owner(owner), flt)

    def log(self, owner: str | None = None, *, start: int = 0) -> Iterator[Record]:
        """An owner's ledger rows in order (without those about memories the grant may not
        read)."""
        self.access.require(READ, "read the ledger")
        whose = self.access.owner(owner)
        return self.access.records(whose, self.parts.reads.log(whose, start=start))

    def may_justify(
        self, action: str, memory_ids: Sequence[str], *, owner: str | None = None
    ) -> Justification:
        """Whether these memories may justify a sensitive action (the weakest channel decides)."""
        whose, ids = self.access.memories(memory_ids, owner)
        return self.parts.reads.may_justify(action, ids, owner=whose)

    def recall(self, query: Query | str, **options: Any) -> list[RecallHit]:
        """The owner's active, retrievable memories that best answer a query."""
        asked = Query(text=query, **options) if isinstance(query, str) else query
        return self.parts.reads.recall(self.access.recall(asked))

    # -- formats, checkpoints, migration, tokens ---------------------------------------

    def export(
        self, fmt: str, *, owner: str | None = None, actor: str | None = None
    ) -> tuple[bytes, int]:
        """An owner's ledger as personaxis JSONL, or its memories as HUX records — the bytes
        alone, without their proof (:meth:`export_file` carries it) — audited: an ``export``
        event by ``actor`` (default: this facade's principal) is appended before the bytes
        are returned, as for :meth:`export_to`."""
        result = self.parts.exports.export_bytes(
            fmt, owner=self.access.exportable(owner), actor=actor
        )
        return result.data, result.items

    def export_file(
        self, fmt: str, *, owner: str | None = None, actor: str | None = None
    ) -> ExportFile:
        """An export (pcp, personaxis, hux) as one file that carries its proof: what the HTTP
        API and the review page hand out, the bytes ``troth export -o NAME.zip`` writes."""
        return self.parts.exports.hand_out(fmt, owner=self.access.exportable(owner), actor=actor)

    def export_to(
        self,
        fmt: str,
        output: Path,
        *,
        owner: str | None = None,
        at: datetime | None = None,
    ) -> ExportResult:
        """Export to a file: a PCP archive (.tar or .zip), personaxis JSONL or HUX records
        with their restore copy and checkpoint beside them, or the three in a .zip."""
        return self.parts.exports.export_to(fmt, output, owner=self.access.exportable(owner), at=at)

    def import_path(
        self,
        path: Path,
        *,
        fmt: str | None = None,
        mode: str = "import",
        owner: str | None = None,
        reanchor: bool = False,
        progress: Progress | None = None,
        approve: bool = False,
    ) -> ImportReport:
        """Import or restore a file, an archive or a folder of notes (service/portability.py).

        ``approve``: the person approves what the import proposed, in the same run (each
        approval audited; the policy keeps some topics for one-by-one review)."""
        return self.parts.returns.import_path(
            path,
            fmt=fmt,
            mode=mode,
            owner=self.access.writable(owner, "import memories"),
            reanchor=reanchor,
            progress=progress,
            approve=approve,
        )

    def seal_exports_with(self, sealer: Sealer) -> None:
        """Sign every export with ``sealer``'s key, and trust its keys to prove a restore."""
        self.parts.portability.proofs = Proofs(sealer)

    def verify_export(self, path: Path, *, owner: str | None = None) -> dict[str, Any]:
        """Check an exported file (or a checkpoint note, against the ledger) by its checkpoint."""
        self.access.require(READ, "verify an export")
        named = None if owner is None else self.access.owner(owner)
        return self.parts.returns.verify_against(path, owner=named, may_read=self.access.owner)

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
        access = self.as_actor(caller)
        whose = access.writable(owner, "send session checkpoints")
        sensitive = access.sensitive_for_checkpoint(include_sensitive)
        return self.parts.checkpoints.handle(
            raw, caller=caller, owner=whose, include_sensitive=sensitive
        )

    def migrate(
        self,
        target: str | Store,
        *,
        progress: Callable[[str, int, int], None] | None = None,
        vector_progress: Progress | None = None,
        batch: int = 500,
    ) -> MigrationReport:
        """Copy every owner's ledger and projection into another database, verify the copy,
        then embed it there (``target``: ``postgresql://…``, ``sqlite:///PATH``, a file path
        or an open store). ``progress(owner, copied, total)``; ``vector_progress(done, total)``.
        """
        return self.parts.migration.migrate(
            target, progress=progress, vector_progress=vector_progress, batch=batch
        )

    @property
    def tokens(self) -> Tokens:
        """Bearer tokens: ``create``, ``records``, ``active``, ``revoke``, ``authenticate``."""
        return self.parts.tokens

"""What the service provides to the UAIX handler: :class:`CheckpointPort`, and an in-memory one.

The port is the whole boundary between the pure handler and the ledger: five operations on
checkpoints and memories plus two on the replay store. The service should run one
``handle_request`` call inside one unit of work on the owner's chain, so a checkpoint, its
memories and the stored reply are written together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from troth.core.checkpoints import (
    CheckpointRecord,
    CreatedMemory,
    MemoryProposal,
    MemoryView,
    StoredReply,
)

__all__ = ["CheckpointPort", "InMemoryCheckpointPort", "StoredReply"]


class CheckpointPort(Protocol):
    """The operations the service must provide to :func:`~troth.formats.uaix.handle_request`.

    Every operation is scoped to ``owner``, the authenticated caller: a checkpoint or a reply of
    another owner must be invisible (``None``), never an error that reveals it exists.
    """

    def find_reply(self, owner: str, message_id: str) -> StoredReply | None:
        """The stored first answer to ``message_id`` from ``owner``, if any."""
        ...

    def save_reply(self, reply: StoredReply) -> None:
        """Keep ``reply`` for replay (called once per new message, after any other write)."""
        ...

    def propose_memories(
        self, owner: str, proposals: Sequence[MemoryProposal]
    ) -> Sequence[CreatedMemory]:
        """Create one memory per proposal, in order, and say what each became.

        A proposal with ``review_required`` must start ``proposed``; otherwise the policy
        decides. The result has exactly one item per proposal.
        """
        ...

    def store_checkpoint(self, record: CheckpointRecord) -> None:
        """Append the (already redacted) checkpoint to ``record.owner``'s ledger."""
        ...

    def load_checkpoint(self, owner: str, checkpoint_id: str) -> CheckpointRecord | None:
        """The checkpoint ``checkpoint_id`` of ``owner``, or ``None``."""
        ...

    def list_memories(self, owner: str, *, linked_ids: frozenset[str]) -> Sequence[MemoryView]:
        """The owner's active, retrievable memories (best first), plus ``linked_ids`` whatever
        their state — those are the checkpoint's facts, whose fate the restore brief reports.
        """
        ...


@dataclass
class InMemoryCheckpointPort:
    """A :class:`CheckpointPort` held in dicts, for tests and examples.

    Proposals with ``review_required`` become ``proposed``, others ``auto_status``.
    """

    auto_status: str = "active"
    replies: dict[tuple[str, str], StoredReply] = field(default_factory=dict)
    checkpoints: dict[tuple[str, str], CheckpointRecord] = field(default_factory=dict)
    memories: dict[str, list[MemoryView]] = field(default_factory=dict)
    writes: int = 0

    def find_reply(self, owner: str, message_id: str) -> StoredReply | None:
        """See :meth:`CheckpointPort.find_reply`."""
        return self.replies.get((owner, message_id))

    def save_reply(self, reply: StoredReply) -> None:
        """See :meth:`CheckpointPort.save_reply`."""
        self.replies[(reply.owner, reply.message_id)] = reply
        self.writes += 1

    def propose_memories(
        self, owner: str, proposals: Sequence[MemoryProposal]
    ) -> Sequence[CreatedMemory]:
        """See :meth:`CheckpointPort.propose_memories`."""
        held = self.memories.setdefault(owner, [])
        created = []
        for proposal in proposals:
            status = "proposed" if proposal.review_required else self.auto_status
            view = MemoryView(
                memory_id=f"mem-{len(held) + 1:04d}",
                content=proposal.content,
                status=status,
                retrievable=status == "active",
            )
            held.append(view)
            created.append(CreatedMemory(view.memory_id, status))
            self.writes += 1
        return created

    def store_checkpoint(self, record: CheckpointRecord) -> None:
        """See :meth:`CheckpointPort.store_checkpoint`."""
        self.checkpoints[(record.owner, record.checkpoint_id)] = record
        self.writes += 1

    def load_checkpoint(self, owner: str, checkpoint_id: str) -> CheckpointRecord | None:
        """See :meth:`CheckpointPort.load_checkpoint`."""
        return self.checkpoints.get((owner, checkpoint_id))

    def list_memories(self, owner: str, *, linked_ids: frozenset[str]) -> Sequence[MemoryView]:
        """See :meth:`CheckpointPort.list_memories`."""
        return [
            m
            for m in self.memories.get(owner, [])
            if (m.status == "active" and m.retrievable) or m.memory_id in linked_ids
        ]

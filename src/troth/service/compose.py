"""The service's composition root: every collaborator of one ``Memory`` facade, wired once.

::

    Memory (facade: the public verbs, each one line of delegation)
      │
      ├── use cases   Writes · Changes (Reviews: at once or by request) · Retention
      │               Integrity · Reads
      │               Portability · Exports (with their proof) · Returns (restore by proof)
      │               Checkpoints · Migration · Tokens
      │
      ├── Admission   validates a creation and asks the policy once
      ├── Ledger      the verified, serialised write path; verified tips; erasers
      ├── Vectors     the embedder, the store's model, reindex
      └── Parties     who acts, on whose ledger
                              │
                            Store (storage/)

Nothing below the facade imports the facade, and no use case imports another's module
except the ones it is built from. Erasure participants — features that keep a copy of a
memory's text — are registered on the ledger here (:data:`ERASERS`), so a redaction reaches
each of them without the write path importing any. Keepers of memories' words outside the
store (recall's word caches) listen for committed erasures the same way
(:data:`ERASURE_LISTENERS`): the ledger announces, and imports no recall module.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Final

from troth.core.policy import Policy
from troth.service.admission import Admission
from troth.service.base import Clock, Parties
from troth.service.changes import Changes
from troth.service.checked import CheckedStore
from troth.service.checkpoints import Checkpoints, erase_copies
from troth.service.exports import Exports
from troth.service.integrity import Integrity
from troth.service.interaction import forget_words
from troth.service.ledger import Eraser, ErasureListener, Ledger
from troth.service.migration import Migration
from troth.service.portability import Portability
from troth.service.readcheck import ReadCheck
from troth.service.reads import Reads
from troth.service.requests import Requests
from troth.service.restoring import Restorer
from troth.service.retention import Retention
from troth.service.returns import Returns
from troth.service.reviews import Reviews
from troth.service.stores import open_store
from troth.service.tokens import Tokens
from troth.service.vectors import Vectors
from troth.service.writes import Writes
from troth.storage.base import Store

if TYPE_CHECKING:
    from troth.embedding import Embedder

#: Every keeper of copies of a memory's text, called when its creating entry is erased:
#: checkpoints copy stable facts into their events and quote them in stored replies.
ERASERS: Final[tuple[Eraser, ...]] = (erase_copies,)

#: Every cache of memories' words outside the store, told once an erasure has committed:
#: recall's word vectors (``service.interaction``), which empty.
ERASURE_LISTENERS: Final[tuple[ErasureListener, ...]] = (forget_words,)


class Services:
    """The collaborators of one facade over one store, built in dependency order."""

    def __init__(
        self,
        store: Store,
        *,
        policy: Policy,
        principal: str,
        clock: Clock,
        embedder: Embedder | None = None,
        max_concurrent_recalls: int | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock
        # Every read of the use cases goes through the check (service/readcheck.py); the
        # write path and integrity read the backend itself.
        self.check = ReadCheck(store)
        self.parties = Parties(CheckedStore(store, self.check), principal)
        self.vectors = Vectors(store, embedder)
        self.ledger = Ledger(
            store,
            clock=clock,
            vectors=self.vectors,
            erasers=ERASERS,
            check=self.check,
            on_erasure=ERASURE_LISTENERS,
        )
        self.admission = Admission(policy, self.parties, self.vectors, clock)
        self.writes = Writes(self.parties, self.admission, self.ledger, self.vectors)
        self.changes = Changes(self.parties, self.ledger)
        self.requests = Requests(self.parties, self.admission, self.writes, self.ledger)
        self.reviews = Reviews(self.parties, self.changes, self.requests)
        self.retention = Retention(self.parties, self.ledger, clock)
        self.integrity = Integrity(self.parties, self.ledger, self.vectors, store, self.check)
        self.reads = Reads(
            self.parties,
            policy,
            self.vectors,
            clock,
            max_concurrent_recalls=max_concurrent_recalls,
        )
        self.portability = Portability(self.parties, self.admission, self.ledger, self.integrity)
        self.exports = Exports(self.portability)
        restorer = Restorer(self.parties, self.ledger, self.vectors)
        self.returns = Returns(self.portability, restorer, self.changes, policy)
        self.checkpoints = Checkpoints(self.parties, self.admission, self.ledger, clock)
        self.migration = Migration(store, self.vectors, open_store)

    @cached_property
    def tokens(self) -> Tokens:
        """Bearer tokens over the store's token table (made on first use: a backend without
        one refuses only then, with a sentence saying so)."""
        return Tokens(self.store, clock=self.clock)

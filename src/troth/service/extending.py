"""Whether an owner's chain still extends a tip seen before, and the rows it holds since.

A chain extends a tip (length *n*, head *h*) when its row at position *n* - 1 still carries
*h*: each row's hash covers the hash of the one before it, so a chain that verifies and
carries *h* there holds the very rows that made the tip (whether it verifies is the
caller's to check). The group commit (did a group's commit land?), the read check's saved
fold (does the chain still extend it?), the sealer's incremental tree and a migration into
a partly copied target all ask this one question here.
"""

from __future__ import annotations

from itertools import islice

from troth.core.events import Record
from troth.storage.base import Store, Tip

__all__ = ["since"]


def since(store: Store, owner: str, tip: Tip, limit: int | None = None) -> list[Record] | None:
    """The rows of ``owner``'s chain after ``tip`` (at most ``limit``) when the chain still
    extends it — its row at ``tip.length - 1`` carries ``tip.head``; None when it does not
    (cut below the tip, or the row there rewritten). Every chain extends the empty tip."""
    if not tip.length:
        return list(islice(store.records(owner), limit))
    rows = list(islice(store.records(owner, tip.length - 1), None if limit is None else limit + 1))
    if not rows or rows[0].seq != tip.length - 1 or rows[0].entry.hash != tip.head:
        return None
    return rows[1:]

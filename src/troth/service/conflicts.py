"""Contradictions between sources of unequal trust: linked on write, shown on recall.

:func:`link_contradictions` runs on every planned creation before its transaction: a memory
written through a channel trusted less than the policy's strongest is compared
(:func:`troth.core.conflicts.contradicts`) with the owner's retrievable memories from more
trusted channels that share its words, and gets a ``contradicts`` relation to each one it
contradicts. The link is committed with the memory and travels with it (exports carry
relations), so an approval of the memory does not erase it: the person's endorsement is
recorded beside the weaker source, not instead of it.

:func:`conflicts_of` tells recall, for the hits it returns, which ones conflict with which
(both ends of a link whose trusted end is still retrievable) and which end is the weaker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from troth.core.conflicts import contradicts
from troth.core.query import lexical_terms
from troth.core.records import MemoryRecord
from troth.service.drafts import CreationPlan
from troth.storage.base import MemoryFilter, Store

#: How many of the owner's memories that share the new one's words are compared with it.
COMPARED = 20


@dataclass(frozen=True, slots=True)
class Conflict:
    """A returned memory's conflicts: the memories it contradicts or is contradicted by, and
    whether it is the weaker side of one of them."""

    with_ids: tuple[str, ...]
    weaker: bool

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready view (a recall hit's ``why["conflict"]``)."""
        return {"with": list(self.with_ids), "weaker": self.weaker}


def link_contradictions(store: Store, trust: Mapping[str, int], plan: CreationPlan) -> CreationPlan:
    """The plan, with a ``contradicts`` relation to each more trusted memory it contradicts."""
    own = trust.get(plan.channel, 0)
    if plan.decision.mode == "no_store" or not trust or own >= max(trust.values()):
        return plan  # nothing is more trusted than the strongest channel
    terms = lexical_terms(plan.content)
    if not terms:
        return plan
    near = store.lexical(
        plan.owner,
        terms,
        COMPARED,
        MemoryFilter(retrievable_only=True, include_sensitive=True),
    )
    if not near:
        return plan
    found = store.get_many(plan.owner, [hit.memory_id for hit in near])
    targets = [
        memory.id
        for memory in found.values()
        if trust.get(memory.channel, 0) > own and contradicts(plan.content, memory.content)
    ]
    if not targets:
        return plan
    fields = dict(plan.event.fields)
    held = list(fields.get("relations", ()))
    linked = {(r.get("rel"), r.get("target")) for r in held}
    held += [
        {"rel": "contradicts", "target": t} for t in targets if ("contradicts", t) not in linked
    ]
    fields["relations"] = held
    return replace(plan, event=replace(plan.event, fields=fields))


def contradicted(memory: MemoryRecord) -> tuple[str, ...]:
    """The ids a memory's ``contradicts`` relations point at."""
    return tuple(r.target for r in memory.relations if r.rel == "contradicts")


def conflicts_of(
    hits: Sequence[MemoryRecord], targets: Mapping[str, MemoryRecord]
) -> dict[str, Conflict]:
    """Which returned memories conflict, with which, and which side is the weaker.

    ``targets`` holds the memories the hits' links point at (read by the caller); a link to
    one that is no longer retrievable (forgotten, superseded) shows no conflict.
    """
    with_ids: dict[str, list[str]] = {}
    weaker: set[str] = set()
    returned = {memory.id for memory in hits}
    for memory in hits:
        for target in contradicted(memory):
            held = targets.get(target)
            if held is None or not held.retrievable:
                continue
            with_ids.setdefault(memory.id, []).append(target)
            weaker.add(memory.id)
            if target in returned:
                with_ids.setdefault(target, []).append(memory.id)
    return {
        memory_id: Conflict(tuple(dict.fromkeys(ids)), memory_id in weaker)
        for memory_id, ids in with_ids.items()
    }

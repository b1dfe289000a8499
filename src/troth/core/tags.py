"""Tags are namespaced by who set them: the owner's are bare, anyone else's ``writer/tag``.

A tag is a claim its writer makes about a memory ("verified", "from-the-doctor"). A filter
on the person's tag must not match one that an agent gave its own memory, so a tag written
by anyone but the ledger's owner is stored under its writer's name: an agent
``agent:scraper`` tagging ``verified`` stores ``agent:scraper/verified``. Filters match tags
exactly, so ``tag=verified`` finds the person's tag only, and ``tag=agent:scraper/verified``
finds the agent's. Exports and imports carry tags as stored, namespace included; a tag
already in its writer's namespace is kept as it is, so a restore does not nest it again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from troth.core.limits import MAX_TAG_CHARS

__all__ = ["MAX_NAMESPACED_TAG_CHARS", "NAMESPACED_TAG", "is_namespaced", "writer_tags"]

NAMESPACED_TAG: Final = re.compile(r"^(human|agent|org|service):[A-Za-z0-9._@+/-]{1,128}/.")
"""A tag in a writer's namespace: a principal, ``/``, then the tag as its writer gave it."""

#: A namespaced tag: the writer's tag (its own limit) behind the longest principal and ``/``.
MAX_NAMESPACED_TAG_CHARS: Final = MAX_TAG_CHARS + len("service:") + 128 + 1


def is_namespaced(tag: str) -> bool:
    """Whether a tag is stored under a writer's name (``agent:x/verified``)."""
    return NAMESPACED_TAG.match(tag) is not None


def writer_tags(
    tags: Iterable[str], *, writer: str, owner: str, inherited: Iterable[str] = ()
) -> list[str]:
    """The tags a write stores: the owner's as given, anyone else's under their name.

    ``inherited`` are tags carried over unchanged from an earlier memory (an edit keeps the
    tags of what it supersedes, whoever set them).
    """
    if writer == owner:
        return list(tags)
    kept = set(inherited)
    prefix = writer + "/"
    out: list[str] = []
    for tag in tags:
        named = tag if tag in kept or tag.startswith(prefix) else prefix + tag
        if named not in out:
            out.append(named)
    return out

"""Remnic memory files: markdown with YAML frontmatter, one memory a file.

Mapped by the PCP interop table (SEEDS.md §4.4): ``category`` → ``type`` (the original kept
in ``tags``), ``lifecycle_state`` → ``lifecycle``, ``confidence``, ``derived_from``,
``validAt``/``invalidAt`` → ``valid_from``/``valid_until``, typed graph edges (``relations``
or ``edges``: ``{type|rel, target}``) → ``relations``. Everything else stays under
``x_import.fields``. Remnic's own file specification was not available; docs/formats.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from troth.core.errors import FormatError
from troth.formats import foreign, pcp, yaml12
from troth.formats.registry import (
    Decoded,
    FunctionCodec,
    Item,
    Refusal,
    decoded_one,
    frontmatter_with,
    register,
)

NAME: Final = "remnic"
CATEGORY_TYPE: Final = {
    **dict.fromkeys(
        ("fact", "preference", "principle", "rule", "relationship", "skill"), "semantic"
    ),
    **dict.fromkeys(("decision", "correction", "commitment", "moment"), "episodic"),
    "procedure": "procedural",
}
CATEGORY_KIND: Final = {
    "preference": "preference",
    "rule": "instruction",
    "procedure": "instruction",
}
_LIFECYCLES: Final = ("active", "validated", "stale", "archived")
_CORE_RELS: Final = ("supersedes", "contradicts", "refines", "about")
_REL_NAME = re.compile(r"[^a-z0-9_-]+")
_MAPPED: Final = (
    "id",
    "title",
    "category",
    "tags",
    "lifecycle_state",
    "confidence",
    "derived_from",
    "validAt",
    "invalidAt",
    "relations",
    "edges",
    "created",
    "updated",
)


def _relation(edge: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(edge, Mapping):
        raise FormatError(f"{where}: a graph edge must be an object with type and target")
    rel = str(edge.get("rel") or edge.get("type") or "about")
    target = edge.get("target") or edge.get("to")
    if not isinstance(target, str):
        return None
    if rel not in _CORE_RELS:
        rel = "remnic:" + (_REL_NAME.sub("_", rel.lower()).strip("_") or "related")
        if not rel[len("remnic:") :][0].isalpha():
            rel = "remnic:r" + rel[len("remnic:") :]
    out: dict[str, Any] = {"rel": rel, "target": foreign.slug_path(target, fallback="remnic")}
    confidence = edge.get("confidence")
    if isinstance(confidence, int | float) and 0 <= confidence <= 1:
        out["confidence"] = confidence
    return out


def item(data: bytes, *, name: str) -> Item | Refusal:
    """One Remnic memory file as a memory to import."""
    front, body = pcp.split_page(data, where=name)
    fm = yaml12.load(front, where=name, first_line=2) if front.strip() else {}
    if not isinstance(fm, dict):
        raise FormatError(f"{name}:2: frontmatter must be a mapping")
    category = fm.get("category")
    if category is not None and not isinstance(category, str):
        raise FormatError(f"{name}: 'category' must be text")
    stem = name.rsplit("/", 1)[-1].removesuffix(".md")
    path = foreign.slug_path(str(fm.get("id") or stem), fallback="remnic/memory")
    fields: dict[str, Any] = {"path": path, "kind": CATEGORY_KIND.get(category or "", "fact")}
    if category in CATEGORY_TYPE:
        fields["page_type"] = CATEGORY_TYPE[category]
    if isinstance(fm.get("title"), str) and fm["title"].strip():
        fields["title"] = fm["title"][:300]
    tags = foreign.clean_tags(fm.get("tags") if isinstance(fm.get("tags"), list) else ())
    if category and category not in tags:
        tags.append(category[:100])  # the original category is kept as a tag
    if tags:
        fields["tags"] = tags
    state = fm.get("lifecycle_state")
    if state is not None:
        if state not in _LIFECYCLES:
            raise FormatError(f"{name}: lifecycle_state {state!r} is not one of {_LIFECYCLES}")
        fields["lifecycle"] = state
    confidence = fm.get("confidence")
    if confidence is not None:
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise FormatError(f"{name}: 'confidence' must be a number from 0 to 1")
        fields["confidence"] = confidence
    for source_key, key in (("validAt", "valid_from"), ("invalidAt", "valid_until")):
        value = foreign.date_or_time(fm.get(source_key))
        if value:
            fields[key] = value
    derived = fm.get("derived_from")
    if isinstance(derived, list):
        paths = [foreign.slug_path(str(d), fallback="remnic") for d in derived]
        fields["derived_from"] = list(dict.fromkeys(paths))
    edges = fm.get("relations") or fm.get("edges") or []
    if not isinstance(edges, list):
        raise FormatError(f"{name}: 'relations' must be a list of edges")
    relations = [r for r in (_relation(e, name) for e in edges) if r is not None]
    if relations:
        fields["relations"] = relations
    sha = pcp.sha256_bytes(data)
    x_import: dict[str, Any] = {"format": NAME, "exporter": "remnic", "sha256": sha}
    if fm.get("id") is not None:
        x_import["id"] = str(fm["id"])[:256]
    if path != stem:
        x_import["path"] = foreign.slug_path(stem, fallback=path)
    recorded = foreign.to_utc(fm.get("created"))
    if recorded:
        x_import["recorded_at"] = recorded
    unmapped = {k: v for k, v in fm.items() if k not in _MAPPED}
    if fm.get("updated") is not None:
        unmapped["updated"] = fm["updated"]
    if unmapped:
        x_import["fields"] = unmapped
    return Item(
        content=body.strip("\n"),
        where=name,
        key=(path, sha),
        fields=fields,
        channel="tool",
        x_import=x_import,
        stamps={"key": [path, sha]},
    )


def decode(data: bytes, *, name: str = "memory.md", **_: Any) -> Decoded:
    """One Remnic memory file."""
    result = item(data, name=name)
    return decoded_one(result)


def sniff(data: bytes, filename: str = "") -> bool:
    """Frontmatter with Remnic's own keys (``category`` with a lifecycle or validity)."""
    return frontmatter_with(
        data, r"^category:", r"^(lifecycle_state|validAt|invalidAt|derived_from|confidence):"
    )


CODEC = register(FunctionCodec(NAME, sniff, decode, "Remnic memory file (.md)"))

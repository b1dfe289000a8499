"""basic-memory notes: markdown with frontmatter, observations and wiki-link relations.

A note (NOTE-FORMAT.md of basicmachines-co/basic-memory) has optional frontmatter
(``title``, ``type``, ``tags`` as a list or a comma-separated string, ``permalink``, custom
fields), free markdown, observations ``- [category] text #tag (context)`` and relations
``- relation_type [[Target]] (context)`` anywhere in the body. One note is one memory; the
mapping and its reasons are in docs/formats.md.
"""

from __future__ import annotations

import re
from typing import Any, Final

from troth.core.errors import FormatError
from troth.formats import foreign, pcp, yaml12
from troth.formats.registry import Decoded, FunctionCodec, Item, Refusal, register

NAME: Final = "basic-memory"
OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\]\n]+)\]\s+(.+?)\s*$")
RELATION = re.compile(r"^\s*[-*]\s+([A-Za-z][\w -]*?)\s+\[\[([^\]\n]+)\]\]")
HASHTAG = re.compile(r"(?:^|\s)#([\w-]+)")
_STANDARD: Final = ("title", "type", "tags", "permalink")
_REL_NAME = re.compile(r"[^a-z0-9_-]+")


def permalink(title: str) -> str:
    """basic-memory's generated permalink for a title: lowercase words joined by '-'."""
    return foreign.slug_path(re.sub(r"\s+", "-", title.strip().lower()), fallback="note")


def _tags(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return foreign.clean_tags(t.strip() for t in value.split(","))
    if isinstance(value, list):
        return foreign.clean_tags(value)
    raise FormatError(f"{name}: 'tags' must be a list or a comma-separated string")


def item(data: bytes, *, name: str) -> Item | Refusal:
    """One note as a memory to import."""
    if data.startswith(b"---\n"):
        front, body = pcp.split_page(data, where=name)
        fm = yaml12.load(front, where=name, first_line=2) if front.strip() else {}
        if fm is None:
            fm = {}
        if not isinstance(fm, dict):
            raise FormatError(f"{name}:2: frontmatter must be a mapping of keys to values")
    else:
        try:
            body = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"{name}: not UTF-8 text (byte {exc.start})") from exc
        fm = {}
    stem = name.rsplit("/", 1)[-1].removesuffix(".md")
    title = fm.get("title", stem)
    if not isinstance(title, str) or not title.strip():
        raise FormatError(f"{name}: 'title' must be text")
    link = fm.get("permalink")
    if link is not None and not isinstance(link, str):
        raise FormatError(f"{name}: 'permalink' must be text")
    path = foreign.slug_path(link, fallback=permalink(title)) if link else permalink(title)
    tags = _tags(fm.get("tags"), name)
    relations: list[dict[str, Any]] = []
    for line in body.split("\n"):
        relation = RELATION.match(line)
        if relation:
            rel = _REL_NAME.sub("_", relation.group(1).strip().lower()).strip("_") or "relates_to"
            target = permalink(relation.group(2).split("|")[0])
            entry = {"rel": f"basic-memory:{rel}", "target": target}
            if entry not in relations:
                relations.append(entry)
            continue
        observation = OBSERVATION.match(line)
        if observation:
            tags = foreign.clean_tags([*tags, observation.group(1).strip()])
            tags = foreign.clean_tags([*tags, *HASHTAG.findall(observation.group(2))])
    fields: dict[str, Any] = {"path": path, "title": title.strip()[:300], "page_type": "semantic"}
    if tags:
        fields["tags"] = tags
    if relations:
        fields["relations"] = relations
    sha = pcp.sha256_bytes(data)
    x_import: dict[str, Any] = {"format": NAME, "exporter": "basic-memory", "sha256": sha}
    x_import["id"] = (link or path)[:256]
    source_path = foreign.slug_path(name.removesuffix(".md"), fallback=path)
    if source_path != path:
        x_import["path"] = source_path
    unmapped = {k: v for k, v in fm.items() if k not in _STANDARD}
    if fm.get("type") not in (None, "note"):
        unmapped["type"] = fm["type"]
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


def decode(data: bytes, *, name: str = "note.md", **_: Any) -> Decoded:
    """One basic-memory note."""
    result = item(data, name=name)
    return ([result], []) if isinstance(result, Item) else ([], [result])


def sniff(data: bytes, filename: str = "") -> bool:
    """Markdown with basic-memory's observation or relation syntax, or its permalink key."""
    head = data[:65536].decode("utf-8", "replace")
    if re.search(r"^permalink:", head, re.M):
        return True
    lines = head.split("\n")
    return any(OBSERVATION.match(x) or RELATION.match(x) for x in lines) and filename.endswith(
        ".md"
    )


CODEC = register(FunctionCodec(NAME, sniff, decode, "basic-memory notes (.md)"))

"""basic-memory notes: markdown with frontmatter, observations, relations and wiki links.

A note (basic-memory 0.24's NOTE-FORMAT and its parser, ``basic_memory.markdown``) has
optional frontmatter (``title``, ``type``, ``tags`` as a list or a comma-separated string,
``permalink``, custom fields) and a markdown body read as basic-memory reads it, with
markdown-it (CommonMark) tokens:

- an **observation** is an inline text, outside block quotes, that starts ``[category]``
  (not a task box ``[ ]``, ``[x]``, ``[-]``, not a markdown or wiki link, not a clock time)
  or that holds a ``#tag``: ``- [category] text #tag (context)``;
- an **explicit relation** is a list item ``type [[Target]]`` or ``"a quoted type"
  [[Target]]``, optionally followed by one ``(context)`` and nothing else;
- every other ``[[link]]`` — a bare ``- [[Target]]`` or one inside a sentence — is a
  ``links_to`` relation.

One note is one memory; one over the memory size limit is kept whole as linked parts.
Relation targets are resolved across the imported notes as basic-memory resolves them
(:func:`link`). The mapping and its reasons are in docs/formats.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from markdown_it import MarkdownIt

from troth.core.errors import FormatError
from troth.core.records import MAX_CONTENT_CHARS, PATH_PATTERN
from troth.formats import foreign, pcp, yaml12
from troth.formats.registry import Decoded, FunctionCodec, Item, register

NAME: Final = "basic-memory"
OWN: Final = "basic-memory"  # the x_import.fields key of what basic-memory derives of a note
LINKS_TO: Final = "links_to"
PART_OF: Final = "troth:part_of"
CONTINUES: Final = "troth:continues"
_STANDARD: Final = ("title", "type", "tags", "permalink")
_MARKDOWN = MarkdownIt()  # basic-memory parses with MarkdownIt() too (CommonMark)
_CATEGORY = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)", re.S)
_CLOCK = r"\d{1,3}:\d{2}(?::\d{2})?(?:[.,]\d{1,3})?"
_CLOCK_CATEGORY = re.compile(rf"^{_CLOCK}(?:\s+-\s+{_CLOCK})?$")
_LINKS_TO_DIRECTIVE = re.compile(r"\s+#bm:links_to\s*$")
_REL_NAME = re.compile(r"[^a-z0-9_-]+")
# Only to recognise a note when no --format is given: an observation or a relation line.
_SNIFF = re.compile(r"^\s*[-*]\s+(\[[^\]\n]+\]\s+\S|\S[^\n]*\[\[[^\]\n]+\]\])", re.M)


@dataclass(frozen=True)
class Observation:
    """``- [category] content #tag (context)`` as basic-memory reads it."""

    category: str | None
    content: str
    tags: tuple[str, ...]
    context: str | None


@dataclass(frozen=True)
class Link:
    """A relation of the note: its type as written, the target as written, its context."""

    type: str
    target: str
    context: str | None = None


def permalink(text: str) -> str:
    """basic-memory's ``generate_permalink`` for ASCII-transliterable text.

    Lowercase, camelCase split, ``_`` and anything but ``[a-z0-9/.-]`` become ``-``,
    apostrophes vanish, runs of ``-`` collapse, each segment is trimmed of ``-``. basic-memory
    transliterates with unidecode; here accents are removed by Unicode decomposition, which
    gives the same result for Latin text (other scripts fall back to troth's path rules).
    """
    text = unicodedata.normalize("NFC", text)
    if text.lower().endswith(".md"):
        text = text[:-3]
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    ascii_text = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", ascii_text).lower()
    ascii_text = ascii_text.replace("_", "-").replace("'", "")
    ascii_text = re.sub(r"-+", "-", re.sub(r"[^a-z0-9/\-.]", "-", ascii_text))
    return "/".join(s.strip("-") for s in ascii_text.split("/"))


def _observation(content: str) -> Observation | None:
    content = _LINKS_TO_DIRECTIVE.sub("", content).strip()
    if not content or content.startswith(("[ ]", "[x]", "[-]")):
        return None
    if re.match(r"^\[.*?\]\(.*?\)$", content) or re.match(r"^\[\[.*?\]\]$", content):
        return None
    category = None
    match = _CATEGORY.match(content)
    if match:
        name = match.group(1).strip()
        if _CLOCK_CATEGORY.match(name) or (len(name) == 1 and (name in "xX" or not name.isalnum())):
            match = None
    if not match and not any(part.startswith("#") for part in content.split()):
        return None
    if match:
        category, content = match.group(1).strip(), match.group(2).strip()
    context = None
    if content.endswith(")") and "(" in content:
        start = content.rfind("(")
        context, content = content[start + 1 : -1].strip(), content[:start].strip()
    tags = tuple(
        t for part in content.split() if part.startswith("#") for t in part.split("#") if t
    )
    return Observation(category, content, tags, context) if content else None


def _relation_type(before: str) -> str | None:
    if not before:
        return None
    if before[0] in "'\"" and before.endswith(before[0]) and len(before) > 1:
        return before[1:-1].strip() or None
    return None if any(c.isspace() for c in before) else before


def _single_parenthesized(text: str) -> bool:
    depth = 0
    for position, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return char == ")" and position == len(text) - 1
    return False


def _explicit(content: str) -> Link | None:
    """``type [[Target]] (context)``; a line with prose after the target is not one."""
    kind = _relation_type(content.partition("[[")[0].strip())
    start = content.find("[[")
    end = content.find("]]", start + 2)
    if kind is None or start == -1 or end == -1:
        return None
    target = _project_reference(content[start + 2 : end].strip())
    after = content[end + 2 :].strip()
    if not target or (after and not (after.startswith("(") and _single_parenthesized(after))):
        return None
    return Link(kind, target, after[1:-1].strip() or None if after else None)


def _inline_links(content: str) -> list[Link]:
    """Every outermost ``[[…]]`` of a text, as ``links_to``."""
    links = []
    start = 0
    while (start := content.find("[[", start)) != -1:
        depth, pos, end = 1, start + 2, -1
        while pos < len(content):
            if content.startswith("[[", pos):
                depth, pos = depth + 1, pos + 2
            elif content.startswith("]]", pos):
                depth -= 1
                if depth == 0:
                    end = pos
                    break
                pos += 2
            else:
                pos += 1
        if end == -1:
            break
        target = _project_reference(content[start + 2 : end].strip())
        if target:
            links.append(Link(LINKS_TO, target))
        start = end + 2
    return links


def _project_reference(text: str) -> str:
    """``project::note`` is basic-memory's spelling of ``project/note``."""
    if "::" not in text:
        return text
    project, rest = text.split("::", 1)
    return f"{project}/{rest.lstrip('/')}"


def scan(body: str) -> tuple[list[Observation], list[Link]]:
    """The observations and relations of a note's body, in order, as basic-memory finds them.

    Relations are listed once per (type, target), as basic-memory's index keeps them.
    """
    observations: list[Observation] = []
    links: list[Link] = []
    in_item = False
    quoted = 0
    for token in _MARKDOWN.parse(body):
        if token.type in ("list_item_open", "list_item_close"):
            in_item = token.type == "list_item_open"
        elif token.type in ("blockquote_open", "blockquote_close"):
            quoted += 1 if token.type == "blockquote_open" else -1
        if token.type != "inline":
            continue
        observation = None if quoted else _observation(token.content)
        if observation is not None:
            observations.append(observation)
        directive = bool(_LINKS_TO_DIRECTIVE.search(token.content))
        explicit = _explicit(token.content.strip()) if in_item and not directive else None
        found = (
            [explicit] if explicit else _inline_links(_LINKS_TO_DIRECTIVE.sub("", token.content))
        )
        for link in found:
            if all((link.type, link.target) != (x.type, x.target) for x in links):
                links.append(link)
    return observations, links


def _rel(kind: str) -> str:
    name = _REL_NAME.sub("_", kind.strip().lower()).strip("_-")
    if not name or not name[0].isalpha():
        name = f"r_{name}" if name else LINKS_TO
    return f"basic-memory:{name}"


def _tags(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return foreign.clean_tags(t.strip() for t in value.split(","))
    if isinstance(value, list):
        return foreign.clean_tags(str(t) for t in value)
    raise FormatError(f"{name}: 'tags' must be a list or a comma-separated string")


def _front(data: bytes, name: str) -> tuple[dict[str, Any], str]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # basic-memory strips a byte order mark too
    if data.startswith(b"---\n"):
        front, body = pcp.split_page(data, where=name)
        fm = yaml12.load(front, where=name, first_line=2) if front.strip() else {}
        if fm is None:
            fm = {}
        if not isinstance(fm, dict):
            raise FormatError(f"{name}:2: frontmatter must be a mapping of keys to values")
        return fm, body
    try:
        return {}, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{name}: not UTF-8 text (byte {exc.start})") from exc


def _file_path(name: str, link: str | None) -> tuple[str, str | None]:
    """The note's path inside its project as basic-memory wrote it, and the project's slug.

    basic-memory's permalink is ``<project>/<permalink of the file path>``; the suffix of the
    imported name whose permalink matches is the file path, and what the permalink has in
    front of it is the project. Without a match the name is the path and there is no project.
    """
    segments = name.replace("\\", "/").split("/")
    suffixes = ["/".join(segments[start:]) for start in range(len(segments))]
    if link:
        # A project in front first: basic-memory 0.24 writes it by default, and the imported
        # folder often has the project's name, so "demo/x.md" also matches without one.
        for candidate in suffixes:
            made = permalink(candidate)
            if link.endswith("/" + made) and "/" not in link[: -len(made) - 1]:
                return candidate, link[: -len(made) - 1]
        for candidate in suffixes:
            if link == permalink(candidate):
                return candidate, None
    # No permalink to match: the imported folder is the project's root (names are relative
    # to the folder's parent), a single file is at the root.
    return "/".join(segments[1:]) if len(segments) > 1 else name, None


def split_text(body: str, limit: int) -> list[tuple[str, str]]:
    """A text cut into (joiner, part) pieces of at most ``limit`` characters.

    Cuts fall at the last line break before the limit, else the last space, else at the
    limit; the character cut at (``"\\n"``, ``" "``, or ``""`` for a hard cut) is the
    joiner that goes back in front of the next part: ``part1 + joiner2 + part2 + …`` is the
    text exactly.
    """
    out: list[tuple[str, str]] = []
    joiner = ""
    rest = body
    while len(rest) > limit:
        cut = rest.rfind("\n", 1, limit + 1)
        if cut <= 0:
            cut = rest.rfind(" ", 1, limit + 1)
        if cut <= 0:
            out.append((joiner, rest[:limit]))
            joiner, rest = "", rest[limit:]
            continue
        out.append((joiner, rest[:cut]))
        joiner, rest = rest[cut], rest[cut + 1 :]
    out.append((joiner, rest))
    return out


def item(data: bytes, *, name: str) -> Item:
    """One note as a memory (the first of its parts when it is over the size limit)."""
    return items(data, name=name)[0]


def items(data: bytes, *, name: str) -> list[Item]:
    """One note as memories: one, or its parts 1..n when it is over the memory size limit."""
    fm, body = _front(data, name)
    stem = name.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")
    title = fm.get("title") or stem
    if not isinstance(title, str) or not title.strip():
        raise FormatError(f"{name}: 'title' must be text")
    link = fm.get("permalink")
    if link is not None and not isinstance(link, str):
        raise FormatError(f"{name}: 'permalink' must be text")
    file_path, project = _file_path(name, link)
    made = permalink(file_path) if not project else f"{project}/{permalink(file_path)}"
    path = foreign.slug_path(link or made, fallback=foreign.slug_path(made, fallback="note"))
    observations, links = scan(body)
    tags = _tags(fm.get("tags"), name)
    for observation in observations:
        tags = foreign.clean_tags([*tags, observation.category or "", *observation.tags])
    fields: dict[str, Any] = {"path": path, "title": title.strip()[:300], "page_type": "semantic"}
    if tags:
        fields["tags"] = tags
    sha = pcp.sha256_bytes(data)
    x_import: dict[str, Any] = {"format": NAME, "exporter": "basic-memory", "sha256": sha}
    x_import["id"] = (link or made)[:256]
    if PATH_PATTERN.fullmatch(link or made):
        x_import["path"] = link or made  # basic-memory's own path for the note, its permalink
    kept: dict[str, Any] = {k: v for k, v in fm.items() if k not in _STANDARD}
    if fm.get("type") not in (None, "note"):
        kept["type"] = fm["type"]
    # What basic-memory's index knows of the note beyond its frontmatter, under one key of
    # its own so no frontmatter field is overwritten (one called so moves aside).
    if OWN in kept:
        kept[f"frontmatter:{OWN}"] = kept.pop(OWN)
    own: dict[str, Any] = {"file_path": file_path}
    if project:
        own["project"] = project
    if links:
        own["relations"] = [
            {"type": x.type, "target": x.target, **({"context": x.context} if x.context else {})}
            for x in links
        ]
    kept[OWN] = own
    relations = [{"rel": _rel(x.type), "target": _target(x.target)} for x in links]
    text = body.strip("\n")
    pieces = split_text(text, MAX_CONTENT_CHARS) if text else [("", text)]
    out = []
    for number, (joiner, piece) in enumerate(pieces, start=1):
        here = dict(fields)
        part_path = path if number == 1 else f"{path}/part-{number}"
        here["path"] = part_path
        mine = dict(own)
        if number > 1:
            mine.pop("relations", None)  # the note's relations are on part 1
        if len(pieces) > 1:
            mine["part"] = {"number": number, "of": len(pieces), "joiner": joiner}
        imported = {**x_import, "fields": {**kept, OWN: mine}}
        if number == 1 and relations:
            here["relations"] = _unique(relations)
        if len(pieces) > 1:
            here["title"] = f"{fields['title']} (part {number} of {len(pieces)})"[:300]
        if number > 1:
            previous = path if number == 2 else f"{path}/part-{number - 1}"
            here["relations"] = [
                {"rel": PART_OF, "target": path},
                {"rel": CONTINUES, "target": previous},
            ]
        where = name if len(pieces) == 1 else f"{name} (part {number} of {len(pieces)})"
        out.append(
            Item(
                content=piece,
                where=where,
                key=(part_path, sha),
                fields=here,
                channel="tool",
                x_import=imported,
                stamps={"key": [part_path, sha]},
            )
        )
    return out


def _target(text: str) -> str:
    """An unresolved target as a page path: the permalink basic-memory would give it."""
    return foreign.slug_path(permalink(text.split("|", 1)[0].strip()), fallback="note")


def _unique(relations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for relation in relations:
        if relation not in out:
            out.append(relation)
    return out


def link(found: Sequence[Item]) -> list[Item]:
    """Point the relations of imported notes at the notes they name, as basic-memory does.

    A target is looked up among the notes of the same import: by permalink (as written, or
    with the note's project in front), then by title, then by file path (with or without
    ``.md``); of several notes with one title, the one nearest the linking note's folder.
    A resolved relation targets that note's memory path; an unresolved one keeps the
    permalink basic-memory would give it, and is marked ``resolved: false`` in
    ``x_import.fields.relations``.
    """
    notes = [i for i in found if _ours(i) and _part(i) in (None, 1)]
    by_link: dict[str, Item] = {}
    by_title: dict[str, list[Item]] = {}
    by_file: dict[str, Item] = {}
    for note in notes:
        kept = _kept(note)
        by_link.setdefault(str(note.x_import.get("id", "")) if note.x_import else "", note)
        by_link.setdefault(str(note.fields["path"]), note)
        title = str(note.fields.get("title", "")).split(" (part ")[0]
        by_title.setdefault(title, []).append(note)
        file_path = str(kept.get("file_path", ""))
        by_file.setdefault(file_path, note)
        by_file.setdefault(file_path.removesuffix(".md"), note)
    out = []
    for note in found:
        kept = _kept(note)
        written = kept.get("relations")
        if not _ours(note) or _part(note) not in (None, 1) or not written:
            out.append(note)
            continue
        project = kept.get("project")
        source = str(kept.get("file_path", ""))
        relations, annotated = [], []
        for relation in written:
            target = _resolve(str(relation["target"]), project, source, by_link, by_title, by_file)
            entry = {"rel": _rel(str(relation["type"])), "target": _target(relation["target"])}
            if target is not None:
                entry["target"] = str(target.fields["path"])
            relations.append(entry)
            annotated.append({**relation, "resolved": target is not None})
        x_import = dict(note.x_import or {})
        x_import["fields"] = {**x_import.get("fields", {}), OWN: {**kept, "relations": annotated}}
        fields = {**note.fields, "relations": _unique(relations)}
        out.append(replace(note, fields=fields, x_import=x_import))
    return out


def _resolve(
    text: str,
    project: Any,
    source: str,
    by_link: dict[str, Item],
    by_title: dict[str, list[Item]],
    by_file: dict[str, Item],
) -> Item | None:
    text = text.split("|", 1)[0].strip()  # [[Target|shown text]]
    if project and text.startswith(f"{project}/"):  # [[project::Target]], this project
        found = _resolve(text[len(project) + 1 :], None, source, by_link, by_title, by_file)
        if found is not None:
            return found
    made = permalink(text)
    prefixed = [f"{project}/{c}" for c in (text, made)] if project else []
    for candidate in (text, made, *prefixed):
        if candidate in by_link:
            return by_link[candidate]
    titled = by_title.get(text) or []
    if titled:
        return min(titled, key=lambda n: _distance(str(_kept(n).get("file_path", "")), source))
    return by_file.get(text) or by_file.get(text.removesuffix(".md"))


def _distance(path: str, source: str) -> int:
    """Folders between two notes (fewer is nearer), for same-title candidates."""
    a, b = path.split("/")[:-1], source.split("/")[:-1]
    shared = 0
    while shared < min(len(a), len(b)) and a[shared] == b[shared]:
        shared += 1
    return len(a) + len(b) - 2 * shared


def _ours(item: Item) -> bool:
    return bool(item.x_import) and item.x_import.get("format") == NAME  # type: ignore[union-attr]


def _kept(item: Item) -> dict[str, Any]:
    """What the codec recorded of a note (``x_import.fields["basic-memory"]``)."""
    fields = (item.x_import or {}).get("fields")
    own = fields.get(OWN) if isinstance(fields, dict) else None
    return dict(own) if isinstance(own, dict) else {}


def _part(item: Item) -> int | None:
    part = _kept(item).get("part")
    return int(part["number"]) if isinstance(part, dict) else None


def decode(data: bytes, *, name: str = "note.md", **_: Any) -> Decoded:
    """One basic-memory note: one item, or its parts when it is over the size limit."""
    return items(data, name=name), []


def reassemble(parts: Sequence[tuple[str, str]]) -> str:
    """A note's text from its parts in order, as (joiner, text) pairs: the inverse of the
    split (``x_import.fields.part.joiner`` of each part, the memory's text)."""
    return "".join(joiner + text for joiner, text in parts)


def sniff(data: bytes, filename: str = "") -> bool:
    """Markdown with basic-memory's observation or relation syntax, or its permalink key."""
    head = data[:65536].decode("utf-8", "replace")
    if re.search(r"^permalink:", head, re.M):
        return True
    return bool(_SNIFF.search(head)) and filename.endswith(".md")


CODEC = register(FunctionCodec(NAME, sniff, decode, "basic-memory notes (.md)", linker=link))

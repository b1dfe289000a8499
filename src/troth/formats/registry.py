"""Codecs by name: each format says whether it recognises some bytes, and reads them.

A codec satisfies one protocol, :class:`Codec`: a ``name``, a ``description``, a
``sniff(data, filename) -> bool`` that looks only at the bytes (and the file name, when
there is one), and a ``decode`` into :class:`Item` values the service can write (and
:class:`Refusal` values it reports). Every format module registers a :class:`FunctionCodec`
made of its functions; ``tests/formats/test_codecs.py`` holds each to the protocol. Codecs are pure: no I/O, no ledger. ``detect`` tries them in registration
order, most specific first, so a PCP archive is recognised before a JSON file is guessed at.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from troth.core.errors import FormatError, InvalidInputError


@dataclass(frozen=True)
class Item:
    """One memory as a format reads it, before the service writes it.

    ``fields`` are keyword arguments for the facade's ``Draft``; ``x_import`` is the
    provenance an import records (the service adds ``at``); ``stamps`` are the values a
    restore keeps as they were; ``key`` is the idempotency key (source path or id, sha256).

    A source's version history travels in two fields: ``supersedes`` is the key of the
    item (earlier in the same input, or already in the ledger) this one replaces, written
    as an edit of that memory; ``forget`` is a note when the source deleted the memory, which
    is then forgotten in the transaction that writes it (docs/formats.md, mem0 history).
    """

    content: str
    where: str
    key: tuple[str, str]
    fields: Mapping[str, Any] = field(default_factory=dict)
    channel: str = "user"
    actor: str | None = None
    on_behalf_of: str | None = None
    status: str | None = None
    hidden: bool = False
    x_import: Mapping[str, Any] | None = None
    stamps: Mapping[str, Any] = field(default_factory=dict)
    supersedes: tuple[str, str] | None = None
    forget: str | None = None


@dataclass(frozen=True)
class Refusal:
    """An item a codec read but will not bring in, and why (reported, never written)."""

    where: str
    reason: str


Decoded = tuple[list[Item], list[Refusal]]


def decoded_one(result: Item | Refusal) -> Decoded:
    """What a one-item file decodes to: the item, or its refusal."""
    return ([result], []) if isinstance(result, Item) else ([], [result])


def frontmatter_with(data: bytes, *patterns: str) -> bool:
    """Whether ``data`` opens with frontmatter whose first 8 KiB hold, for each pattern, a
    line that starts with a match of it (how a Markdown format sniffs its own keys)."""
    if not data.startswith(b"---\n"):
        return False
    head = data[:8192].decode("utf-8", "replace")
    return all(re.search(pattern, head, re.M) for pattern in patterns)


@runtime_checkable
class Codec(Protocol):
    """What every format offers the registry: recognise bytes, and read them into items."""

    @property
    def name(self) -> str:
        """The format's name, as ``--format`` takes it."""
        ...

    @property
    def description(self) -> str:
        """One line saying what the format is."""
        ...

    def sniff(self, data: bytes, filename: str = "") -> bool:
        """True when the bytes are in this format (never raises)."""
        ...

    def decode(
        self,
        data: bytes,
        *,
        name: str,
        restore: bool = False,
        reanchor: bool = False,
        known: Collection[tuple[str, str]] = (),
    ) -> Decoded:
        """The items the bytes hold, and the ones refused with why; a FormatError names a
        defect's file and line. ``known`` idempotency keys may be returned unparsed."""
        ...

    def link(self, items: Sequence[Item]) -> list[Item]:
        """The decoded items of a whole import, with cross-item references resolved."""
        ...


@dataclass(frozen=True)
class FunctionCodec:
    """A codec made of a format module's functions."""

    name: str
    sniffer: Callable[[bytes, str], bool]
    decoder: Callable[..., Decoded]
    description: str = ""
    # Run once over every item of an import after all its files are decoded, for what needs
    # the whole input (basic-memory resolves relation targets across notes).
    linker: Callable[[Sequence[Item]], list[Item]] | None = None

    def link(self, items: Sequence[Item]) -> list[Item]:
        """The decoded items of a whole import, with cross-item references resolved."""
        return self.linker(items) if self.linker is not None else list(items)

    def sniff(self, data: bytes, filename: str = "") -> bool:
        """True when the bytes are in this format (never raises)."""
        try:
            return self.sniffer(data, filename)
        except (ValueError, UnicodeDecodeError, FormatError):
            return False

    def decode(
        self,
        data: bytes,
        *,
        name: str,
        restore: bool = False,
        reanchor: bool = False,
        known: Collection[tuple[str, str]] = (),
    ) -> Decoded:
        """The format module's decoder (each takes what it needs of the options)."""
        return self.decoder(data, name=name, restore=restore, reanchor=reanchor, known=known)


_CODECS: dict[str, Codec] = {}
_LOADED: list[bool] = []
FORMAT_MODULES = ("archive", "pcp", "personaxis", "hux", "mem0", "omp", "remnic", "basic_memory")


def register(codec: Codec) -> Codec:
    """Add a codec under its name (a second registration of a name replaces the first)."""
    _CODECS[codec.name] = codec
    return codec


def names() -> list[str]:
    """Registered format names."""
    _load()
    return sorted(_CODECS)


def get(name: str) -> Codec:
    """The codec called ``name``."""
    _load()
    try:
        return _CODECS[name]
    except KeyError:
        raise InvalidInputError(
            f"unknown format {name!r}; use one of {', '.join(_CODECS)}", field="format"
        ) from None


# Most specific first: containers, then documents with a distinctive shape, then guesses.
DETECTION_ORDER = (
    "pcp",
    "pcp-page",
    "personaxis",
    "hux",
    "mem0",
    "remnic",
    "omp",
    "basic-memory",
)


def detect(data: bytes, filename: str = "") -> Codec:
    """The first codec that recognises the bytes; a FormatError when none does."""
    _load()
    ordered = [n for n in DETECTION_ORDER if n in _CODECS]
    ordered += [n for n in _CODECS if n not in ordered]
    for name in ordered:
        codec = _CODECS[name]
        if codec.sniff(data, filename):
            return codec
    if data.lstrip()[:1] in (b"{", b"["):
        from troth.formats.foreign import load_json

        load_json(data, name=filename or "input")  # a JSON defect names its line
    raise FormatError(
        f"{filename or 'input'}: not a format troth reads; name it with --format"
        f" ({', '.join(_CODECS)})",
        file=filename,
    )


def _load() -> None:
    """Import the format modules once; each registers itself."""
    if _LOADED:
        return
    for module in FORMAT_MODULES:
        importlib.import_module(f"troth.formats.{module}")
    _LOADED.append(True)

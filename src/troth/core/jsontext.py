"""JSON text from the standard library's C encoder, called without its Python wrapper.

``json.JSONEncoder.encode`` passes through two Python frames (``encode``, ``iterencode``),
defines a closure and builds a C encoder on every call: ~4,000 instructions around an
encoding that, for the short documents a write stores, costs a few thousand more. Every
``remember`` encodes five of them (the stored memory and its ``recall`` row, the ledger
row's tags and texts, the metadata), so :func:`encoder` returns a function that builds
the same C encoder with the same arguments ``iterencode`` gives it and calls it at once.
The text is the one ``JSONEncoder(ensure_ascii=False, …).encode`` writes, errors included
(unsupported types, circular references); where Python has no C encoder it *is* that
method. ``tests/core/test_jsontext.py`` holds the two equal on generated values.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["encoder"]

# None where the _json accelerator is missing (typeshed does not declare it).
_make: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)
_escape = json.encoder.encode_basestring  # non-ASCII kept as is (ensure_ascii=False)


def encoder(
    *, separators: tuple[str, str] = (", ", ": "), sort_keys: bool = False
) -> Callable[[Any], str]:
    """``json.JSONEncoder(ensure_ascii=False, separators=…, sort_keys=…).encode``, faster."""
    reference = json.JSONEncoder(ensure_ascii=False, separators=separators, sort_keys=sort_keys)
    make = _make
    if make is None:  # pragma: no cover - CPython always builds _json
        return reference.encode
    item_separator, key_separator = separators
    default = reference.default  # the TypeError naming an unsupported type

    def encode(value: Any) -> str:
        # A fresh markers dict per call, as ``iterencode`` makes: the circular-reference
        # check, and no state shared between threads or left behind by a failed call.
        chunks = make(
            {}, default, _escape, None, key_separator, item_separator, sort_keys, False, True
        )(value, 0)
        return "".join(chunks)

    return encode

"""docs/benchmarks.md: each benchmark's generated block holds only what it generates.

``bench.common.record_block`` replaces everything between a ``bench:NAME`` block's markers
when that benchmark runs, so a hand-written section placed inside them would be lost at the
next run (until 2026-12-04 four such sections sat inside the LoCoMo and write-cost blocks,
above their generated tables).
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
MARKER = re.compile(r"<!-- bench:([\w-]+):(start|end) -->")


def _blocks() -> dict[str, list[str]]:
    blocks: dict[str, list[str]] = {}
    inside: str | None = None
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        found = MARKER.fullmatch(line.strip())
        if found:
            name, edge = found.groups()
            if edge == "start":
                assert inside is None, f"bench:{name} starts inside bench:{inside}"
                assert name not in blocks, f"bench:{name} appears twice"
                inside, blocks[name] = name, []
            else:
                assert inside == name, f"bench:{name} ends where bench:{inside} is open"
                inside = None
        elif inside is not None:
            blocks[inside].append(line)
    assert inside is None, f"bench:{inside} never ends"
    return blocks


def test_every_generated_block_is_one_section_headed_first_if_at_all() -> None:
    blocks = _blocks()
    assert {"locomo", "scale", "server", "write-cost"} <= set(blocks)
    for name, lines in blocks.items():
        headings = [line for line in lines if line.startswith("#")]
        text = [line for line in lines if line.strip()]
        assert text, f"bench:{name} is empty"
        assert len(headings) <= 1, f"bench:{name} holds other sections: {headings[1:]}"
        if headings:
            assert text[0] == headings[0], f"bench:{name} has text above its heading"

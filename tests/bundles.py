"""What an HTTP export holds: ``GET /api/export`` answers with one zip (docs/formats.md)."""

from __future__ import annotations

from troth.formats import archive, ledger_copy


def members(data: bytes) -> dict[str, bytes]:
    """Every file of an exported zip (a bundle or a PCP archive), unpacked."""
    return archive.read(data, where="the export")


def export_member(data: bytes) -> bytes:
    """The export file itself inside a bundle (personaxis JSONL, HUX JSON)."""
    held = ledger_copy.unbundle(members(data))
    assert held is not None, "not a bundle of a personaxis or HUX export"
    return held.data


def unpacked_text(data: bytes) -> str:
    """Every member's bytes as text, one after another: what a person could read in it."""
    return "\n".join(d.decode("utf-8", "replace") for d in members(data).values())

"""SQLite's connection settings (storage.sqlite.schema.connect)."""

from __future__ import annotations

from pathlib import Path

from troth.storage.sqlite.schema import MMAP_BYTES, connect


def test_a_connection_maps_a_million_memories_file_whole(tmp_path: Path) -> None:
    # A million memories make a 4.3 GB file (docs/benchmarks.md): a map of 2 GiB left its
    # upper half to a system call a page. SQLite lowers the size to its build's limit,
    # which for the shipped build is 1 TiB.
    db = connect(tmp_path / "troth.db")
    try:
        mapped = int(db.execute("PRAGMA mmap_size").fetchone()[0])
    finally:
        db.close()
    assert MMAP_BYTES >= 8 * 10**9
    assert mapped == MMAP_BYTES

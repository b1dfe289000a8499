"""bench.scale --keep: a store a run left part built is not measured as if it were whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.scale import run


def test_a_kept_store_no_finished_run_built_is_refused(tmp_path: Path) -> None:
    # An interrupted build leaves the database without the record of a finished one; a
    # second run ingesting into it would measure more memories than it reports.
    (tmp_path / "troth.db").write_bytes(b"")
    with pytest.raises(SystemExit, match="no finished run built"):
        run("sqlite", 10, lambda *_: None, keep=tmp_path)

"""bench.scale: a store a run left part built is not measured as if it were whole, and the
PostgreSQL server it starts takes the shared_buffers asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.scale import main, postgres_store, run


def test_a_kept_store_no_finished_run_built_is_refused(tmp_path: Path) -> None:
    # An interrupted build leaves the database without the record of a finished one; a
    # second run ingesting into it would measure more memories than it reports.
    (tmp_path / "troth.db").write_bytes(b"")
    with pytest.raises(SystemExit, match="no finished run built"):
        run("sqlite", 10, lambda *_: None, keep=tmp_path)


def test_shared_buffers_is_refused_for_sqlite_and_for_a_size_postgresql_would_not_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--shared-buffers", "2GB"])
    assert "a setting of the PostgreSQL server" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--backend", "postgres", "--shared-buffers", "lots"])
    assert "takes a size such as 512MB or 2GB; 'lots' was given" in capsys.readouterr().err


def test_the_throw_away_server_runs_with_the_shared_buffers_asked_for() -> None:
    # The label is what the server answers to SHOW, after it started with the setting.
    with postgres_store("192MB") as (store, size, label):
        assert "shared_buffers=192MB" in label
        assert size() > 0
        assert store.schema_version() > 0

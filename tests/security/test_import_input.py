"""Hostile import input ends in a named error, exit 2 and an unchanged ledger — never a
traceback, and never a file from outside the folder the person named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from troth.adapters.cli import EXIT_BAD_INPUT, cli
from troth.core.errors import FormatError
from troth.service.memory import Memory

ALICE = "human:alice"


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), "--as", ALICE, *args])


def said(result: Result) -> str:
    return " ".join(result.output.split())


def heads(memory: Memory) -> list[object]:
    return [memory.store.tip(owner) for owner in memory.store.owners()]


HOSTILE = {
    "deep.json": "[" * 100_000 + "]" * 100_000,
    "deep-mem0.json": '[{"id": "a", "memory": "x", "metadata": '
    + '{"a": ' * 200
    + "1"
    + "}" * 200
    + "}]",
    "surrogate.json": '[{"id": "a", "memory": "tea \\ud800 time"}]',
    "surrogate-hux.jsonl": '{"id": "m", "content": "\\udfff"}\n',
    "deep-page.md": "---\ntitle: a\ntags: " + "[" * 3000 + "]" * 3000 + "\n---\nbody\n",
    "deep-block.md": "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(300)) + "---\nb\n",
}
REASONS = {
    "deep.json": "nested deeper than 64 levels",
    "deep-mem0.json": "nested deeper than 64 levels",
    "surrogate.json": "lone surrogate \\ud800",
    "surrogate-hux.jsonl": "lone surrogate \\udfff",
    "deep-page.md": "nested deeper than 64 levels",
    "deep-block.md": "nested deeper than 64 levels",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_is_refused_by_the_cli_with_a_sentence(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(HOSTILE[name], encoding="utf-8")
    fmt = ["--format", "pcp-page"] if name.endswith(".md") else []
    result = run(tmp_path / "home", "import", str(path), *fmt)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert REASONS[name] in said(result)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_leaves_the_ledger_as_it_was(
    name: str, any_memory: Memory, tmp_path: Path
) -> None:
    any_memory.remember("I prefer green tea")
    before = heads(any_memory)
    path = tmp_path / name
    path.write_text(HOSTILE[name], encoding="utf-8")
    with pytest.raises(FormatError, match=r"nested deeper|lone surrogate"):
        any_memory.import_path(path, fmt="pcp-page" if name.endswith(".md") else None)
    assert heads(any_memory) == before


def notes_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tea.md").write_text("---\ntitle: Tea\n---\nI like green tea\n", encoding="utf-8")
    return folder


def test_a_hard_link_in_a_notes_folder_is_refused(any_memory: Memory, tmp_path: Path) -> None:
    outside = tmp_path / "private.md"
    outside.write_text("---\ntitle: Diary\n---\nmy bank PIN is 0000\n", encoding="utf-8")
    folder = notes_folder(tmp_path)
    os.link(outside, folder / "diary.md")
    before = heads(any_memory)
    with pytest.raises(FormatError, match=r"diary\.md: is a hard link"):
        any_memory.import_path(folder, fmt="basic-memory")
    assert heads(any_memory) == before
    result = run(tmp_path / "home", "import", str(folder), "--format", "basic-memory")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "is a hard link" in said(result)


def test_a_symbolic_link_in_a_notes_folder_is_refused(any_memory: Memory, tmp_path: Path) -> None:
    outside = tmp_path / "private.md"
    outside.write_text("---\ntitle: Diary\n---\nsecret\n", encoding="utf-8")
    folder = notes_folder(tmp_path)
    (folder / "diary.md").symlink_to(outside)
    with pytest.raises(FormatError, match=r"diary\.md: is a symbolic link"):
        any_memory.import_path(folder, fmt="basic-memory")
    assert any_memory.recall("secret") == []


def test_an_import_that_refused_anything_exits_non_zero(tmp_path: Path) -> None:
    source = tmp_path / "mem0.json"
    source.write_text(
        '[{"id": "a", "memory": "I like tea", "user_id": "alice"},'
        ' {"id": "b", "memory": "' + "x" * 5000 + '", "user_id": "alice"}]',
        encoding="utf-8",
    )
    result = run(tmp_path / "home", "import", str(source))
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "1 created" in said(result)
    assert "1 refused" in said(result)

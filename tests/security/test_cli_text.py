"""What anyone wrote is shown as text in every CLI view: no markup, no terminal commands."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from troth.adapters.cli import cli
from troth.adapters.console import out_console, visible
from troth.config import Settings, build_memory
from troth.core.errors import TrothError

ALICE = "human:alice"
HOSTILE = ["[x] buy milk", "[habit] stretch daily", "closing [/] tag", "[bold red]boom", ":smile:"]


@pytest.fixture
def wide() -> Iterator[None]:
    # Rich wraps at the console's width; a wide one keeps each text on one line to compare.
    before = out_console.width
    out_console.width = 2000
    yield
    out_console.width = before


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), "--as", ALICE, *args])


def views(home: Path, memory_id: str, words: str) -> dict[str, Result]:
    return {
        "list": run(home, "list"),
        "show": run(home, "show", memory_id),
        "log": run(home, "log"),
        "recall": run(home, "recall", "--", words),  # a text may start with a dash
    }


def remember(home: Path, text: str) -> str:
    memory = build_memory(Settings.load(home=str(home), principal=ALICE))
    try:
        return memory.remember(text, reason=text).id
    finally:
        memory.close()


def stored(home: Path, memory_id: str) -> str:
    """The text as the ledger keeps it (the write path trims surrounding white space)."""
    memory = build_memory(Settings.load(home=str(home), principal=ALICE))
    try:
        return memory.get(memory_id).content
    finally:
        memory.close()


@pytest.mark.parametrize("text", HOSTILE)
def test_markup_in_a_memory_is_printed_as_written(text: str, tmp_path: Path, wide: None) -> None:
    memory_id = remember(tmp_path, text)
    for view, result in views(tmp_path, memory_id, text).items():
        assert result.exit_code == 0, (view, result.output)
        if view != "recall" or text != ":smile:":
            assert text in result.output, (view, result.output)


def test_terminal_control_sequences_are_shown_as_escapes(tmp_path: Path, wide: None) -> None:
    text = "tea\x1b]0;pwned\x07 and \x1b[2J cake \x9b31m"
    memory_id = remember(tmp_path, text)
    for view, result in views(tmp_path, memory_id, "tea cake").items():
        assert result.exit_code == 0, (view, result.output)
        assert "\x1b" not in result.output, view
        assert "\x9b" not in result.output, view
        assert "\\x1b]0;pwned\\x07" in result.output, (view, result.output)


def test_visible_keeps_newlines_and_tabs_and_escapes_other_controls() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\x00\x1b\x7f\x85") == "\\x00\\x1b\\x7f\\x85"


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(min_size=1, max_size=60).filter(lambda t: t.strip()))
def test_any_text_goes_through_every_view_unchanged(
    tmp_path_factory: pytest.TempPathFactory, wide: None, text: str
) -> None:
    home = tmp_path_factory.mktemp("home")
    try:
        memory_id = remember(home, text)
    except TrothError:  # the policy may refuse a text (a credential, a minor): not a view
        return
    shown = " ".join(visible(stored(home, memory_id)).split())
    for view, result in views(home, memory_id, text).items():
        assert result.exit_code == 0, (view, result.output)
        if view in ("show", "log"):
            assert shown in " ".join(result.output.split()), (view, result.output)

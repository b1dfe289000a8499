"""The CLI's shared ``Context``: its Memory is opened once, as the first command asks.

``opened(compacting=True)`` (``troth compact``) opens a store that leaves pending erasures
to the rewrite rather than scrubbing them as it opens; on a Memory already opened without
it the flag could not take effect (the open already scrubbed), so it is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from troth.adapters import console
from troth.adapters.console import Context
from troth.config import Settings
from troth.core.errors import ConflictError


@pytest.fixture
def opened_with(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``compacting`` of every Memory the contexts open."""
    seen: list[bool] = []
    build = console.build_memory

    def recording(settings: Settings, **options: Any) -> Any:
        seen.append(bool(options.get("compacting", False)))
        return build(settings, **options)

    monkeypatch.setattr(console, "build_memory", recording)
    return seen


def test_a_fresh_context_opens_its_memory_to_compact(
    tmp_path: Path, opened_with: list[bool]
) -> None:
    ctx = Context(Settings.load(home=str(tmp_path)), as_json=False)
    try:
        memory = ctx.opened(compacting=True)
        assert ctx.opened(compacting=True) is memory
        assert ctx.memory is memory  # a compacting store serves any later use
        assert opened_with == [True]
    finally:
        ctx.close()


def test_compacting_a_memory_already_opened_without_it_is_refused(
    tmp_path: Path, opened_with: list[bool]
) -> None:
    ctx = Context(Settings.load(home=str(tmp_path)), as_json=False)
    try:
        ctx.memory.remember("opened the ordinary way")
        with pytest.raises(ConflictError, match=r"already open.*compacting.*new context"):
            ctx.opened(compacting=True)
        assert opened_with == [False]
    finally:
        ctx.close()

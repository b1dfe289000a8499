"""The review page shows the flag and the source of a memory that is no longer a proposal.

The person fixes a typo in an agent's flagged proposal (its new words pass the detector):
the page still warns that it reads as an instruction and never justifies an action, names
the agent as the writer of its text and the person as the one who vouched for it. The page
is the same whatever the backend; the browser test runs over the demo's SQLite ledger.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.adapters.conftest import LiveServer
from tests.adapters.test_web import browser, card, page, sign_in  # noqa: F401  (fixtures)
from tests.adapters.web_demo import ERIN, Demo, seed

REWORDED = "Erin's deploys go through the script in tools/deploy.sh, say the repository's notes"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    made = seed(tmp_path / "demo")
    yield made
    made.memory.close()


def test_an_edited_flagged_memory_keeps_its_warning_and_names_its_writer(
    page: Page,  # noqa: F811
    demo: Demo,
) -> None:
    edited = demo.memory.edit(demo.ids["injection"], REWORDED, actor=ERIN, owner=ERIN)
    memory = demo.memory.get(edited.id, owner=ERIN)
    assert memory.flagged
    assert memory.channel == "tool"
    if memory.status == "proposed":
        demo.memory.approve(edited.id, actor=ERIN, owner=ERIN)
    with LiveServer(demo) as served:  # type: ignore[arg-type]  # memory and tokens suffice
        sign_in(page, served, demo.erin, ERIN)
        page.click("nav button[data-view=all]")
        shown = card(page, "all-list", edited.id)
        expect(shown).to_have_class("memory flagged state-active")
        expect(shown.locator(".warn")).to_contain_text("Reads like an instruction to an assistant")
        expect(shown.locator(".warn")).to_contain_text("never justifies an action")
        expect(shown).to_contain_text("coder (agent)")
        expect(shown).to_contain_text("this version by you")
        expect(shown).to_contain_text("Vouched for by")
        expect(shown).to_contain_text("the agent read it in a tool")

"""The review page in a real browser: sign in, approve one proposal, redact another."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.adapters.conftest import AGENT, ALICE, Ledger, LiveServer
from troth.core.access import HUMAN_DEFAULT_SCOPES

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = Path(__file__).resolve().parents[2] / "scripts" / "install-chromium.sh"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        subprocess.run([str(INSTALL)], check=True, timeout=900)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=ARGS, timeout=60_000
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


def sign_in(page: Page, live: LiveServer, token: str) -> None:
    page.goto(live.url + "/")
    page.fill("#token", token)
    page.click("#sign-in-form button[type=submit]")
    expect(page.locator("#who")).to_contain_text(ALICE)


def test_a_person_approves_one_proposal_and_redacts_another(
    page: Page, ledger: Ledger, live: LiveServer
) -> None:
    as_agent = {"owner": ALICE, "actor": AGENT, "channel": "synthesis", "on_behalf_of": ALICE}
    kept = ledger.memory.remember("Alice prefers window seats on trains", **as_agent)
    erased = ledger.memory.remember("Alice's neighbour is called Gregor", **as_agent)
    sign_in(page, live, ledger.alice)

    inbox = page.locator("#inbox-list")
    expect(inbox.locator("li.memory")).to_have_count(2)
    expect(page.locator("#inbox-count")).to_have_text("(2)")
    inbox.locator(f'li[data-id="{kept.id}"] button', has_text="Approve").click()
    expect(page.locator("#status")).to_have_text("Approved.")
    expect(inbox.locator("li.memory")).to_have_count(1)

    inbox.locator(f'li[data-id="{erased.id}"] button', has_text="Redact").click()
    expect(page.locator("#confirm")).to_be_visible()
    page.fill("#confirm-reason", "not mine to keep")
    page.click("#confirm-ok")
    expect(page.locator("#status")).to_have_text("Redacted.")

    page.click("nav button[data-view=chain]")
    page.click("#verify")
    expect(page.locator("#chain-status")).to_contain_text("verifies")

    page.click("nav button[data-view=search]")
    page.fill("#search-q", "window seats")
    page.click("#search-form button")
    expect(page.locator(f'#search-list li[data-id="{kept.id}"]')).to_be_visible()

    assert ledger.memory.get(kept.id, owner=ALICE).status == "active"
    gone = ledger.memory.get(erased.id, owner=ALICE)
    assert gone.redacted
    assert "Gregor" not in gone.content
    assert all(report.ok for report in ledger.memory.verify())
    exported, _ = ledger.memory.export("personaxis", owner=ALICE)
    assert b"Gregor" not in exported


def test_an_agent_token_cannot_use_the_review_page(
    page: Page, ledger: Ledger, live: LiveServer
) -> None:
    page.goto(live.url + "/")
    page.fill("#token", ledger.agent)
    page.click("#sign-in-form button[type=submit]")
    expect(page.locator("#sign-in-error")).to_contain_text("for people")
    expect(page.locator("#app")).to_be_hidden()


def test_a_revoked_token_signs_the_person_out(page: Page, ledger: Ledger, live: LiveServer) -> None:
    issued = ledger.tokens.create(ALICE, HUMAN_DEFAULT_SCOPES)
    sign_in(page, live, issued.token)
    # The first view's requests must be answered before the token goes: on a loaded
    # machine one could arrive after the revocation and sign out before the click.
    page.wait_for_load_state("networkidle")
    ledger.tokens.revoke(issued.record.token_id)
    page.click("nav button[data-view=all]")
    expect(page.locator("#sign-in-error")).to_contain_text("sign in again")

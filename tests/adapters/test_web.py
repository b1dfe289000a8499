"""The review page in a real browser (Debian's chromium, headless, driven by Playwright).

Each flow a person has: decide a flagged proposal, bulk approve, edit with cancel, search
with filters, follow the history's links, download an export, add a memory, revoke an
agent — and axe-core finds no serious or critical accessibility violation on any view, at
desktop and at phone width.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.adapters.conftest import AGENT, ALICE, Ledger, LiveServer, as_json, invoke
from tests.adapters.web_demo import ERIN, Demo, seed
from tests.bundles import unpacked_text
from troth.config import Settings, build_memory
from troth.core.access import HUMAN_DEFAULT_SCOPES
from troth.service.keys import KeyStore
from troth.service.sealing import Sealer

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
INSTALL = ROOT / "scripts" / "install-chromium.sh"
INSTALL_AXE = ROOT / "scripts" / "install-axe.sh"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PHONE = {"width": 390, "height": 844}


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
    context = browser.new_context(accept_downloads=True)
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    made = seed(tmp_path / "demo")
    yield made
    made.memory.close()


@pytest.fixture
def served(demo: Demo) -> Iterator[LiveServer]:
    with LiveServer(demo) as server:  # type: ignore[arg-type]  # memory and tokens suffice
        yield server


def sign_in(page: Page, live: LiveServer, token: str, who: str = ALICE) -> None:
    page.goto(live.url + "/")
    page.fill("#token", token)
    page.click("#sign-in-form button[type=submit]")
    expect(page.locator("#who")).to_contain_text(who.removeprefix("human:"))


def open_erin(page: Page, served: LiveServer, demo: Demo) -> None:
    sign_in(page, served, demo.erin, ERIN)
    expect(page.locator("#inbox-list li.memory")).to_have_count(5)


def card(page: Page, list_id: str, memory_id: str) -> Any:
    return page.locator(f'#{list_id} li[data-id="{memory_id}"]')


# -- the inbox ----------------------------------------------------------------------------


def test_a_flagged_proposal_shows_its_warning_and_reason_and_is_rejected_with_a_reason(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    open_erin(page, served, demo)
    flagged = card(page, "inbox-list", demo.ids["injection"])
    expect(flagged).to_have_class("memory flagged")
    expect(flagged.locator(".warn")).to_contain_text("Reads like an instruction to an assistant")
    expect(flagged).to_contain_text("found in a README the agent read")
    expect(flagged).to_contain_text("coder (agent), for you")
    expect(flagged).to_contain_text("the agent read it in a tool")
    expect(flagged.locator("time")).to_have_attribute(
        "title", re.compile(r"\(\d{4}-\d\d-\d\dT.*Z\)$")
    )
    # Proposals offer no Forget or Redact; a plain (not primary) Approve on a flagged one.
    expect(flagged.locator("button.forget, button.redact")).to_have_count(0)
    expect(flagged.locator("button.approve")).not_to_have_class(re.compile(r"\bprimary\b"))

    health = card(page, "inbox-list", demo.ids["health"])
    expect(health.locator(".warn")).to_contain_text("Sensitive (health)")
    veggie = card(page, "inbox-list", demo.ids["veggie"])
    expect(veggie.locator(".beside")).to_contain_text("Erin eats fish on Fridays")
    ordinary = card(page, "inbox-list", demo.ids["standup"])
    expect(ordinary.locator(".warn")).to_have_count(0)

    flagged.locator("button.reject").click()
    expect(page.locator("#confirm")).to_be_visible()
    expect(page.locator("#confirm-items")).to_contain_text("SYSTEM: from now on")
    page.fill("#confirm-reason", "an injection from a README")
    page.click("#confirm-ok")
    expect(page.locator("#status")).to_have_text("Rejected.")
    expect(page.locator("#inbox-list li.memory")).to_have_count(4)

    rejected = demo.memory.get(demo.ids["injection"], owner=ERIN)
    assert rejected.status == "rejected"
    assert rejected.audit[-1].note == "an injection from a README"
    # The rejected injection, under All memories, offers no Forget on its card.
    page.click("nav button[data-view=all]")
    expect(page.locator("#status")).to_have_text("")
    gone = card(page, "all-list", demo.ids["injection"])
    expect(gone.locator(".badge")).to_have_text("Rejected")
    expect(gone.locator("button.forget")).to_have_count(0)


def test_several_proposals_are_approved_at_once_after_one_confirmation(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    open_erin(page, served, demo)
    picked = [demo.ids["standup"], demo.ids["small_prs"], demo.ids["health"]]
    for memory_id in picked:
        card(page, "inbox-list", memory_id).locator("input.pick").check()
    expect(page.locator("#bulk-approve")).to_have_text("Approve selected (3)")
    page.click("#bulk-approve")
    expect(page.locator("#confirm-title")).to_have_text("Approve 3 proposals?")
    expect(page.locator("#confirm-items li")).to_have_count(3)
    page.click("#confirm-ok")
    expect(page.locator("#status")).to_have_text("Approved 3.")
    expect(page.locator("#inbox-list li.memory")).to_have_count(2)
    assert [demo.memory.get(m, owner=ERIN).status for m in picked] == ["active"] * 3
    assert demo.memory.get(demo.ids["injection"], owner=ERIN).status == "proposed"


def test_select_all_then_cancel_decides_nothing(page: Page, demo: Demo, served: LiveServer) -> None:
    open_erin(page, served, demo)
    page.check("#select-all")
    expect(page.locator("#bulk-reject")).to_have_text("Reject selected (5)")
    page.click("#bulk-reject")
    page.click("#confirm-cancel")
    expect(page.locator("#confirm")).to_be_hidden()
    expect(page.locator("#inbox-list li.memory")).to_have_count(5)


def test_edit_hides_approve_cancel_restores_it_and_saving_approves_the_persons_version(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    open_erin(page, served, demo)
    item = card(page, "inbox-list", demo.ids["health"])
    item.locator("button.edit").click()
    expect(item.locator("textarea")).to_be_focused()
    expect(item.locator("button.approve")).to_be_hidden()
    item.locator("button", has_text="Cancel").click()
    expect(item.locator("textarea")).to_have_count(0)
    expect(item.locator("button.approve")).to_be_visible()
    expect(item.locator("button.edit")).to_be_focused()

    item.locator("button.edit").click()
    item.locator("textarea").fill("Erin takes a daily medication")
    item.locator("button", has_text="Save and approve").click()
    expect(page.locator("#status")).to_have_text("Your version is saved and approved.")
    expect(page.locator("#inbox-list li.memory")).to_have_count(4)
    old = demo.memory.get(demo.ids["health"], owner=ERIN)
    assert old.superseded_by is not None
    new = demo.memory.get(old.superseded_by, owner=ERIN)
    assert (new.status, new.content, new.supersedes) == (
        "active",
        "Erin takes a daily medication",
        old.id,
    )


# -- finding and understanding --------------------------------------------------------------


def test_search_shows_scores_and_why_and_its_filters_narrow_it_in_one_request(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    for memory_id in (demo.ids["small_prs"], demo.ids["standup"]):
        demo.memory.approve(memory_id, owner=ERIN, actor=ERIN)
    sign_in(page, served, demo.erin, ERIN)
    page.click("nav button[data-view=search]")
    page.wait_for_load_state("networkidle")  # the inbox's own requests are done
    searches: list[str] = []
    details: list[str] = []
    page.on(
        "request",
        lambda r: (
            (searches if "/api/search" in r.url else details).append(r.url)
            if "/api/" in r.url
            else None
        ),
    )
    page.fill("#search-q", "pull requests in Python")
    page.click("#search-form button[type=submit]")
    hits = page.locator("#search-list li.memory")
    expect(hits).to_have_count(2)
    expect(hits.first.locator(".facts")).to_contain_text("score")
    expect(hits.first.locator(".facts")).to_contain_text("shares words with your search")

    page.fill("#search-agent", "agent:coder")
    page.click("#search-form button[type=submit]")
    expect(hits).to_have_count(1)
    expect(hits.first).to_have_attribute("data-id", demo.ids["small_prs"])
    page.fill("#search-agent", "")
    page.select_option("#search-kind", "fact")
    page.click("#search-form button[type=submit]")
    expect(hits).to_have_count(1)
    expect(hits.first).to_have_attribute("data-id", demo.ids["tabs"])
    page.select_option("#search-kind", "")
    page.fill("#search-since", "2001-01-01")
    page.fill("#search-until", "2001-12-31")
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-list li.empty")).to_have_text("Nothing answers that.")
    assert len(searches) == 4
    # One request per search: no per-hit detail fetches (only the inbox count besides).
    assert [u for u in details if "/api/memories/" in u] == []


def test_the_full_list_filters_by_status_and_tag_and_pages_beyond_the_first(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    for n in range(55):
        demo.memory.remember(f"note number {n}", owner=ERIN, tags=["bulk"])
    sign_in(page, served, demo.erin, ERIN)
    page.click("nav button[data-view=all]")
    expect(page.locator("#all-summary")).to_have_text("1 to 50 of 65, newest first.")
    page.click("#all-next")
    expect(page.locator("#all-summary")).to_have_text("51 to 65 of 65, newest first.")
    expect(page.locator("#all-next")).to_be_disabled()
    page.fill("#all-tag", "bulk")
    page.click("#all-form button[type=submit]")
    expect(page.locator("#all-summary")).to_have_text("1 to 50 of 55, newest first.")
    page.fill("#all-tag", "")
    page.select_option("#all-status", "forgotten")
    page.click("#all-form button[type=submit]")
    expect(page.locator("#all-summary")).to_have_text("1 to 2 of 2, newest first.")
    forgotten = card(page, "all-list", demo.ids["forgotten"])
    expect(forgotten.locator(".badge")).to_have_text("Forgotten")
    expect(forgotten.locator(".content")).to_contain_text("Forgotten: its text no longer shows")
    replaced = card(page, "all-list", demo.ids["old_ships"])
    expect(replaced.locator(".badge")).to_have_text("Replaced by a newer version")


def test_the_history_opens_beside_its_memory_with_chain_positions_and_links(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    sign_in(page, served, demo.erin, ERIN)
    page.click("nav button[data-view=all]")
    ships = card(page, "all-list", demo.ids["ships"])
    ships.locator("button.details").click()
    expect(ships.locator("button.details")).to_have_attribute("aria-expanded", "true")
    history = ships.locator(".detail .history li")
    expect(history.first).to_contain_text("edited by you")
    expect(history.first.locator(".chain")).to_contain_text("entry #")
    full_hash = history.first.locator(".chain code").get_attribute("title")
    tip = demo.memory.store.tip(ERIN)
    events = [r.entry.hash for r in demo.memory.log(ERIN)]
    assert full_hash in events
    assert tip.length == len(events)

    ships.locator(".detail a", has_text="the version it replaced").click()
    expect(page.locator("#view-memory")).to_be_visible()
    old = card(page, "memory-list", demo.ids["old_ships"])
    expect(old.locator(".detail .history")).to_contain_text("superseded by you")
    old.locator(".detail a", has_text="the newer version").first.click()
    expect(card(page, "memory-list", demo.ids["ships"])).to_be_visible()


def test_forget_and_erase_are_explained_and_ask_for_a_reason(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    sign_in(page, served, demo.erin, ERIN)
    page.click("nav button[data-view=all]")
    tabs = card(page, "all-list", demo.ids["tabs"])
    tabs.locator("button.forget").click()
    expect(page.locator("#confirm-text")).to_contain_text("Agents stop recalling it at once")
    page.click("#confirm-ok")  # no reason given: the dialog refuses to close
    expect(page.locator("#confirm")).to_be_visible()
    page.fill("#confirm-reason", "not true any more")
    page.click("#confirm-ok")
    expect(page.locator("#status")).to_have_text("Forgotten.")
    assert demo.memory.get(demo.ids["tabs"], owner=ERIN).status == "forgotten"

    fish = card(page, "all-list", demo.ids["fish"])
    fish.locator("button.details").click()
    expect(fish.locator(".erase .hint")).to_contain_text("removes these words")
    fish.locator("button.redact").click()
    page.fill("#confirm-reason", "private")
    page.click("#confirm-ok")
    expect(page.locator("#status")).to_have_text("Text erased.")
    assert demo.memory.get(demo.ids["fish"], owner=ERIN).redacted


# -- the person's own actions and the ledger -------------------------------------------------


def test_a_person_adds_a_memory_of_their_own(page: Page, demo: Demo, served: LiveServer) -> None:
    sign_in(page, served, demo.erin, ERIN)
    page.click("nav button[data-view=add]")
    page.fill("#add-content", "Erin's bike is a green Brompton")
    page.select_option("#add-kind", "fact")
    page.fill("#add-tags", "bike, travel")
    page.click("#add-form button[type=submit]")
    expect(page.locator("#status")).to_contain_text("Remembered.")
    found, _ = demo.memory.export("hux", owner=ERIN)
    assert b"green Brompton" in found
    page.locator("#status a", has_text="See it").click()
    added = page.locator("#memory-list li.memory")
    expect(added).to_contain_text("Erin's bike is a green Brompton")
    expect(added.locator(".facts")).to_contain_text("bike, travel")


@pytest.mark.parametrize("fmt", ["personaxis", "hux", "pcp"])
def test_an_export_downloads_as_a_file_carrying_its_proof(
    page: Page, demo: Demo, served: LiveServer, tmp_path: Path, fmt: str
) -> None:
    # The demo signs its exports with the key this test's installation trusts.
    key = KeyStore(Path(os.environ["TROTH_SIGNING_KEY"]))
    demo.memory.seal_exports_with(Sealer(demo.memory.store, key, "web.demo"))
    sign_in(page, served, demo.erin, ERIN)
    page.click("nav button[data-view=ledger]")
    with page.expect_download(timeout=60_000) as info:  # a loaded machine is slow to export
        page.click(f"button[data-export={fmt}]")
    download = info.value
    assert download.suggested_filename == f"troth-human-erin.{fmt}.zip"  # the server's name
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    assert "Erin eats fish on Fridays" in unpacked_text(saved.read_bytes())
    home = tmp_path / "verifier"
    found = as_json(invoke(home, "verify", "--against", str(saved), "--json", who=ERIN))
    assert (found["ok"], found["owner"]) == (True, ERIN)
    before = [r.entry.to_line() for r in demo.memory.store.records(ERIN)][
        : found["checkpoint_size"]
    ]
    fresh = tmp_path / "fresh"
    restored = as_json(invoke(fresh, "import", str(saved), "--mode", "restore", "--json", who=ERIN))
    assert (restored["mode"], restored.get("as_import")) == ("restore", None)
    with build_memory(Settings.load(home=fresh, principal=ERIN)) as back:
        assert [r.entry.to_line() for r in back.store.records(ERIN)] == before


def test_the_ledger_shows_health_counts_and_revokes_an_agent(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    sign_in(page, served, demo.erin, ERIN)
    page.click("nav button[data-view=ledger]")
    expect(page.locator("#health")).to_contain_text("Verifies")
    head = demo.memory.store.tip(ERIN).head
    expect(page.locator("#health code")).to_have_attribute("title", head)
    expect(page.locator("#counts")).to_contain_text("5 waiting for you")
    latest = page.locator("#recent li").first
    expect(latest).to_contain_text(f"entry #{demo.memory.store.tip(ERIN).length - 1}")
    expect(latest.locator("code")).to_have_attribute("title", head)
    tokens = page.locator("#tokens li.token")
    expect(tokens).to_have_count(3)
    coder = tokens.filter(has_text="coder (agent)")
    coder.locator("button.revoke").click()
    expect(page.locator("#confirm-reason-row")).to_be_hidden()
    expect(page.locator("#confirm-text")).to_contain_text("can no longer read or propose")
    page.click("#confirm-ok")
    expect(page.locator("#status")).to_have_text("Revoked.")
    expect(tokens).to_have_count(2)
    from troth.core.errors import AuthenticationError

    with pytest.raises(AuthenticationError):
        demo.tokens.authenticate(demo.coder)
    demo.tokens.authenticate(demo.assistant)


def test_keyboard_alone_decides_a_proposal_and_keeps_the_place(
    page: Page, demo: Demo, served: LiveServer
) -> None:
    page.goto(served.url + "/")
    page.keyboard.press("Tab")  # the skip link
    page.keyboard.press("Tab")
    expect(page.locator("#token")).to_be_focused()
    page.keyboard.type(demo.erin)
    page.keyboard.press("Enter")
    expect(page.locator("#inbox-list li.memory")).to_have_count(5)
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('approve')"):
            break
    first = page.locator("#inbox-list li.memory").first
    expect(first.locator("button.approve")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_contain_text("Approved")
    expect(page.locator("#inbox-list li.memory")).to_have_count(4)
    # Focus lands on the card now in the decided one's place, not at the top of the page.
    expect(page.locator("#inbox-list li.memory").first.locator("button").first).to_be_focused()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Space")  # its checkbox
    expect(page.locator("#bulk-approve")).to_have_text("Approve selected (1)")


# -- the first flows, on the plain fixture ledger -------------------------------------------


def test_a_person_approves_one_proposal_and_verifies_the_chain(
    page: Page, ledger: Ledger, live: LiveServer
) -> None:
    as_agent = {"owner": ALICE, "actor": AGENT, "channel": "synthesis", "on_behalf_of": ALICE}
    kept = ledger.memory.remember("Alice prefers window seats on trains", **as_agent)
    ledger.memory.remember("Alice's neighbour is called Gregor", **as_agent)
    sign_in(page, live, ledger.alice)
    inbox = page.locator("#inbox-list")
    expect(inbox.locator("li.memory")).to_have_count(2)
    expect(page.locator("#inbox-count")).to_have_text("(2)")
    inbox.locator(f'li[data-id="{kept.id}"] button.approve').click()
    expect(page.locator("#status")).to_contain_text("Approved")
    expect(inbox.locator("li.memory")).to_have_count(1)
    page.click("nav button[data-view=search]")
    page.fill("#search-q", "window seats")
    page.click("#search-form button[type=submit]")
    expect(page.locator(f'#search-list li[data-id="{kept.id}"]')).to_be_visible()
    assert ledger.memory.get(kept.id, owner=ALICE).status == "active"


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


def test_the_favicon_is_served(page: Page, live: LiveServer) -> None:
    answer = page.request.get(live.url + "/favicon.ico")
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in answer.body()


# -- accessibility ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def axe_source() -> str:
    path = subprocess.run(
        [str(INSTALL_AXE)], check=True, timeout=600, capture_output=True, text=True
    ).stdout.strip()
    return Path(path).read_text(encoding="utf-8")


def serious(page: Page, axe_source: str) -> list[str]:
    page.wait_for_load_state("networkidle")
    page.add_script_tag(content=axe_source)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    assert result["testEngine"]["version"] == "4.14.1"
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_no_view_has_a_serious_or_critical_accessibility_violation(
    browser: Browser, demo: Demo, served: LiveServer, axe_source: str, width: str
) -> None:
    viewport = PHONE if width == "phone" else {"width": 1100, "height": 900}
    # The page's CSP allows only its own script; axe is injected by the test, so the
    # test's context bypasses it (the server's CSP is asserted in test_serve.py).
    context = browser.new_context(viewport=viewport, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    found: dict[str, list[str]] = {}
    try:
        page.goto(served.url + "/")
        found["sign in"] = serious(page, axe_source)
        page.fill("#token", demo.erin)
        page.click("#sign-in-form button[type=submit]")
        expect(page.locator("#inbox-list li.memory")).to_have_count(5)
        card(page, "inbox-list", demo.ids["health"]).locator("button.edit").click()
        card(page, "inbox-list", demo.ids["standup"]).locator("button.details").click()
        expect(page.locator("#inbox-list .detail .history li").first).to_be_visible()
        found["inbox"] = serious(page, axe_source)
        page.locator("#inbox-list input.pick").first.check()
        page.click("#bulk-approve")
        found["confirmation"] = serious(page, axe_source)
        page.click("#confirm-cancel")
        page.click("nav button[data-view=search]")
        page.fill("#search-q", "Erin")
        page.click("#search-form button[type=submit]")
        expect(page.locator("#search-list li.memory").first).to_be_visible()
        found["search"] = serious(page, axe_source)
        page.click("nav button[data-view=all]")
        expect(page.locator("#all-list li.memory").first).to_be_visible()
        found["all memories"] = serious(page, axe_source)
        page.click("nav button[data-view=ledger]")
        expect(page.locator("#tokens li.token").first).to_be_visible()
        found["ledger"] = serious(page, axe_source)
        page.click("nav button[data-view=add]")
        found["add"] = serious(page, axe_source)
        # The check can fail: an image without a text alternative is a critical violation.
        page.evaluate("document.body.append(Object.assign(new Image(), {src: '/favicon.ico'}))")
        assert any(v.startswith("image-alt") for v in serious(page, axe_source))
    finally:
        context.close()
    assert {view: v for view, v in found.items() if v} == {}

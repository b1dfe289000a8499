"""Screenshots of the review page's main views, for README.md and docs/api.md.

    python -m scripts.screenshots            # or: make screenshots

Seeds the demo ledger of tests/adapters/web_demo.py (Erin, five agent proposals: one a
prompt injection, one about her health), serves it on a free loopback port, drives
Debian's chromium headless with Playwright and writes PNGs under docs/images/.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.adapters.conftest import LiveServer  # noqa: E402
from tests.adapters.web_demo import seed  # noqa: E402

OUT = ROOT / "docs" / "images"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
DESKTOP = {"width": 1100, "height": 900}
PHONE = {"width": 390, "height": 844}


def sign_in(page: Page, url: str, token: str) -> None:
    page.goto(url + "/")
    page.fill("#token", token)
    page.click("#sign-in-form button[type=submit]")
    expect(page.locator("#inbox-list li.memory")).to_have_count(5)


def shoot(page: Page, name: str, full: bool = True) -> None:
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(OUT / f"{name}.png"), full_page=full)
    print(OUT / f"{name}.png")


def main() -> None:
    if not CHROMIUM.exists():
        subprocess.run([str(ROOT / "scripts" / "install-chromium.sh")], check=True, timeout=900)
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        demo = seed(Path(home) / "home")
        with LiveServer(demo) as live, sync_playwright() as playwright:  # type: ignore[arg-type]
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=ARGS
            )
            page = browser.new_page(viewport=DESKTOP, device_scale_factor=1)
            sign_in(page, live.url, demo.erin)
            shoot(page, "review-inbox")

            page.click("nav button[data-view=search]")
            page.fill("#search-q", "what does Erin like to eat")
            page.select_option("#search-kind", "preference")
            page.click("#search-form button[type=submit]")
            expect(page.locator("#search-list li.memory").first).to_be_visible()
            shoot(page, "review-search")

            page.click("nav button[data-view=all]")
            page.select_option("#all-status", "active")
            page.click("#all-form button[type=submit]")
            expect(page.locator("#all-summary")).to_contain_text("of 3")
            ships = page.locator(f'#all-list li[data-id="{demo.ids["ships"]}"]')
            ships.locator("button.details").click()
            expect(ships.locator(".history li").first).to_be_visible()
            shoot(page, "review-memories")

            page.click("nav button[data-view=ledger]")
            expect(page.locator("#tokens li.token").first).to_be_visible()
            shoot(page, "review-ledger")

            phone = browser.new_page(viewport=PHONE, device_scale_factor=2)
            sign_in(phone, live.url, demo.erin)
            shoot(phone, "review-inbox-phone", full=False)
            browser.close()
        demo.memory.close()


if __name__ == "__main__":
    main()

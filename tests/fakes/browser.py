"""A real headless browser for the dashboard's tests: Playwright (PyPI) driving Debian's
`chromium` package (no browser download). As root Chromium needs --no-sandbox; the other flags
keep it from reaching for the network (this machine's network is closed: without them it tries
Google's hosts at every start) and from doing work no test needs. Each browser gets a fresh
profile folder.

    async with chromium(tmp_path) as browser:
        page = await browser.new_page()
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import BrowserContext, async_playwright

from tests.fakes.required import unavailable

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
# Screenshots the tests save for people to look at (gitignored).
ARTEFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "dashboard"


@asynccontextmanager
async def chromium(tmp_path: Path) -> AsyncIterator[BrowserContext]:
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which("chromium")):
        unavailable("Debian's chromium is not installed (tests/run installs it)")
    flags = [*FLAGS, *(["--no-sandbox"] if os.geteuid() == 0 else [])]
    profile = tmp_path / "chromium-profile"
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=flags,
            viewport={"width": 1280, "height": 800},
        )
        try:
            yield context
        finally:
            await context.close()


def artefact(name: str) -> Path:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    return ARTEFACTS / name

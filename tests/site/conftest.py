"""Fixtures for the site tests: one strict build per run, served on localhost, and Chromium.

The build runs once per run, for every pytest-xdist worker (``built_site``,
tests/site/shared_build.py), with ``SITE_URL`` set to the local server's address: Material's
instant navigation compares clicked links against ``sitemap.xml`` and silently falls back to full
page loads when the site is served anywhere else.

Browser tests need Debian's ``chromium`` (``apt-get install chromium``; Playwright drives it
through ``executable_path`` and never downloads a browser). Without it they are skipped, except
when ``CI`` is set: there a missing browser is a failure, so CI cannot pass without running them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.site import shared_build

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# The repository widget's GitHub API calls were removed (overrides/partials/source.html), so no
# request may leave the host. Keep the widget and this would be {"api.github.com"}.
ALLOWED_OFF_HOST: set[str] = set()
TAB_VIEWPORT = {"width": 1400, "height": 1000}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # the test may run as root in a container
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # small /dev/shm in containers crashes tabs on long pages
]


@dataclass
class BuiltSite:
    """The site built into ``directory`` and served at ``url``."""

    directory: Path
    url: str
    returncode: int
    log: str
    seconds: float
    rerendered: dict[str, bytes | str]  # figure name -> SVG drawn by another process, or error

    def page_url(self, src_uri: str) -> str:
        """URL of the page built from ``src_uri`` (``absolute.md`` -> ``<url>absolute/``)."""
        stem = re.sub(r"\.(md|ipynb|py)$", "", src_uri)
        if stem == "index":
            return self.url
        if stem.endswith("/index"):
            return self.url + stem[: -len("index")]
        return f"{self.url}{stem}/"


@pytest.fixture(scope="session")
def built_site(request) -> BuiltSite:
    """The run's one strict build (tests/site/shared_build.py), built by whoever asks first."""
    share = shared_build.share_of(request.config)
    record = shared_build.built(share)
    return BuiltSite(
        share.html,
        share.url,
        record["returncode"],
        record["log"],
        record["seconds"],
        shared_build.redrawn_figures(share),
    )


@pytest.fixture(scope="session")
def site(built_site) -> BuiltSite:
    """The built site, for the tests that look at its pages.

    A strict build that stops only because of warnings has still written every page (MkDocs
    checks the warning count at the very end), so these tests run and report what they see;
    ``test_build_is_strict_and_quiet`` fails on the warnings. Any other failure fails them all.
    """
    log = built_site.log
    if built_site.returncode != 0 and not re.search(r"Aborted with .* in strict mode!", log):
        pytest.fail(f"mkdocs build failed:\n{log[-6000:]}", pytrace=False)
    return built_site


@pytest.fixture(scope="session")
def chromium():
    executable = shutil.which("chromium")
    if executable is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; browser tests cannot be skipped in CI", pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # Playwright launches it with a fresh temporary profile.
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class Tab:
    """A page in its own browser context, with everything that went wrong while it was open."""

    page: object
    offhost: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.offhost == [], f"requests left the host: {self.offhost}"
        assert self.errors == [], "browser errors:\n" + "\n".join(self.errors)


@contextlib.contextmanager
def open_tab(chromium, viewport: dict[str, int] = TAB_VIEWPORT) -> Iterator[Tab]:
    """A page in a fresh browser context of this size; requests off the host are blocked."""
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    state = Tab(page)

    def route(route):
        host = urlsplit(route.request.url).hostname or ""
        if host in LOCAL_HOSTS or host in ALLOWED_OFF_HOST:
            route.continue_()
        else:
            state.offhost.append(route.request.url)
            route.abort()

    def failed(request):
        if (urlsplit(request.url).hostname or "") in LOCAL_HOSTS:
            state.errors.append(f"request failed: {request.url} ({request.failure})")

    def response(resp):
        if resp.status >= 400:
            state.errors.append(f"HTTP {resp.status}: {resp.url}")

    page.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and state.errors.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: state.errors.append(f"page error: {e}"))
    page.on("requestfailed", failed)
    page.on("response", response)
    try:
        yield state
    finally:
        context.close()


@pytest.fixture(scope="session")
def new_tab(chromium):
    """``with new_tab() as tab:`` a tab as ``tab`` opens it (or of another ``viewport``)."""
    return partial(open_tab, chromium)


@pytest.fixture
def tab(chromium):
    # At 1400 px the left navigation and the table of contents are both shown (hidden < 1220).
    with open_tab(chromium, TAB_VIEWPORT) as state:
        yield state


@pytest.fixture(scope="session")
def screenshots() -> Path:
    # Artifacts of this run only: a page that left the nav must not leave an old picture behind.
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def page_view(new_tab, site, screenshots):
    """``page_view(src)``: the page's ``pageview.PageView``, from one load shared by the tests.

    Loading a long page is most of a browser test's time (the API and Tests pages take 20-35 s
    under load), so each page is loaded once for all the tests that look at it. A load that
    raised raises again in every test that asks for it.
    """
    from pageview import PageView, view_page

    views: dict[str, PageView | Exception] = {}

    def view(page_src: str) -> PageView:
        if page_src not in views:
            try:
                views[page_src] = view_page(new_tab, site, screenshots, page_src)
            except Exception as error:  # noqa: BLE001 - re-raised below, in each test
                views[page_src] = error
        found = views[page_src]
        if isinstance(found, Exception):
            raise found
        return found

    return view

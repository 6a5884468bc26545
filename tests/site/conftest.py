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
# Requests to any other host fail at name resolution (and are recorded by open_tab). Blocking
# them in the browser rather than by Playwright's request interception keeps the HTTP cache:
# interception turns it off, and every page view then loaded and compiled MathJax and
# Material's scripts afresh.
_RESOLVE_ONLY = ", ".join(f"EXCLUDE {host}" for host in sorted(LOCAL_HOSTS | ALLOWED_OFF_HOST))
CHROMIUM_ARGS = [
    f"--host-resolver-rules=MAP * ~NOTFOUND, {_RESOLVE_ONLY}",
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
    """A browser page, with everything that went wrong while it was open."""

    page: object
    offhost: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.offhost == [], f"requests left the host: {self.offhost}"
        assert self.errors == [], "browser errors:\n" + "\n".join(self.errors)


@contextlib.contextmanager
def open_tab(context) -> Iterator[Tab]:
    """A new page of the browser ``context`` (sharing its HTTP cache), watched until closed.

    Requests off the host fail (``CHROMIUM_ARGS``) and are recorded, as are the page's errors.
    """
    page = context.new_page()
    state = Tab(page)

    def request(request):
        parts = urlsplit(request.url)
        host = parts.hostname or ""
        if parts.scheme in {"http", "https", "ws", "wss"} and not (
            host in LOCAL_HOSTS or host in ALLOWED_OFF_HOST
        ):
            state.offhost.append(request.url)

    def failed(request):
        if (urlsplit(request.url).hostname or "") in LOCAL_HOSTS:
            state.errors.append(f"request failed: {request.url} ({request.failure})")

    def response(resp):
        if resp.status >= 400:
            state.errors.append(f"HTTP {resp.status}: {resp.url}")

    page.on("request", request)
    page.on("console", lambda m: m.type == "error" and state.errors.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: state.errors.append(f"page error: {e}"))
    page.on("requestfailed", failed)
    page.on("response", response)
    try:
        yield state
    finally:
        page.close()


# Run in every document of a tab that does not test search: Material's search worker is not
# started. Building its index (1.4 MB of text, in the worker) cost ~1.4 CPU-s a page load and
# does the same work on every page; the search tests (``tab``) run it. What depends on the page
# is still exercised: the worker's script is fetched from the page's path, and where the reader
# opens search Material's own script fetches search/search_index.json from the page's base (a 404
# is recorded); until then overrides/main.html holds that request back.
NO_SEARCH_WORKER = """
(() => {
  const Real = window.Worker;
  window.Worker = function (url, options) {
    if (!/\\/workers\\/search\\.[^/]*\\.js$/.test(String(url))) return new Real(url, options);
    fetch(url).catch(() => {});  // a failure is recorded by the tab's request handlers
    return new (class extends EventTarget { postMessage() {} terminate() {} })();
  };
})();
"""


class SharedTab:
    """One tab of ``context``, handed to one test (or page view) at a time.

    A new tab costs a renderer process and a new context an empty HTTP cache (MathJax and
    Material's scripts loaded and compiled afresh): 1-3 CPU-s a test. Each use still starts as a
    new tab would: the tab is emptied (``about:blank``, so that the next viewport does not lay
    the last page out again; the site's local and session storage cleared), then what went wrong
    is recorded afresh. A use that failed leaves the tab behind (:meth:`discard`): a tab left
    mid-use (a timeout, a crash, a request still running) serves no other test.
    """

    def __init__(self, context, search: bool = True):
        self._context, self._search = context, search
        self._tabs = contextlib.ExitStack()
        self._tab: Tab | None = None

    @contextlib.contextmanager
    def use(self, viewport: dict[str, int] = TAB_VIEWPORT) -> Iterator[Tab]:
        if self._tab is not None:
            self._empty(self._tab)
        if self._tab is None:
            self._tab = self._tabs.enter_context(open_tab(self._context))
            if not self._search:
                self._tab.page.add_init_script(NO_SEARCH_WORKER)
        tab = self._tab
        tab.offhost.clear()
        tab.errors.clear()
        tab.page.set_viewport_size(viewport)
        try:
            yield tab
        except BaseException:
            self.discard()
            raise

    def _empty(self, tab: Tab) -> None:
        """Leave the last page for ``about:blank``, the site's storage cleared (or discard)."""
        try:
            if tab.page.url != "about:blank":
                tab.page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
                tab.page.goto("about:blank")
        except Exception:  # noqa: BLE001 - a crashed tab: the next use opens another
            self.discard()

    def discard(self) -> None:
        """Close the tab; the next use opens a new one."""
        tab, self._tab = self._tab, None
        if tab is not None:
            with contextlib.suppress(Exception):
                tab.page.close()

    def close(self) -> None:
        self._tabs.close()


@pytest.fixture(scope="session")
def view_context(chromium):
    """One browser context for every browser test: its cache keeps MathJax and Material compiled."""
    context = chromium.new_context(viewport=TAB_VIEWPORT)
    yield context
    context.close()


@pytest.fixture(scope="session")
def shared_tab(view_context) -> Iterator[SharedTab]:
    """The tab of the tests of search and navigation: the site as a reader gets it."""
    shared = SharedTab(view_context)
    yield shared
    shared.close()


@pytest.fixture(scope="session")
def quiet_tab(view_context) -> Iterator[SharedTab]:
    """The tab of the page views and the explorer tests: search does not index (see above)."""
    shared = SharedTab(view_context, search=False)
    yield shared
    shared.close()


_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[_CALL_REPORT] = report
    return report


def _use(shared: SharedTab, request) -> Iterator[Tab]:
    with shared.use() as state:
        yield state
    report = request.node.stash.get(_CALL_REPORT, None)
    if report is None or not report.passed:  # pytest does not raise a test's failure here
        shared.discard()


@pytest.fixture
def tab(shared_tab, request):
    """The shared tab at 1400 x 1000, as new to the test (``SharedTab``).

    At 1400 px the left navigation and the table of contents are both shown (hidden < 1220).
    """
    yield from _use(shared_tab, request)


@pytest.fixture
def tab_without_search(quiet_tab, request):
    """As ``tab``, for the tests that do not use search: Material's search worker does not run."""
    yield from _use(quiet_tab, request)


@pytest.fixture(scope="session")
def screenshots(request) -> Path:
    """The screenshots folder, emptied once per run by the first process that asks for it.

    Artifacts of this run only: a page that left the nav must not leave an old picture behind.
    Every xdist worker asks for it, so the run's shared folder records that it was emptied:
    a worker that started its page views later must not delete what another already wrote.
    """
    share = shared_build.share_of(request.config)
    share.folder.mkdir(parents=True, exist_ok=True)
    with shared_build.locked(share.folder / "screenshots.lock"):
        done = share.folder / "screenshots.emptied"
        if not done.exists():
            shutil.rmtree(SCREENSHOTS, ignore_errors=True)
            done.touch()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def page_view(quiet_tab, site, screenshots):
    """``page_view(src)``: the page's ``pageview.PageView``, from one load shared by the tests.

    Loading a long page is most of a browser test's time (the API and Tests pages take 20-35 s
    under load), so each page is loaded once for all the tests that look at it. The views use
    one shared tab whose search does not index (``quiet_tab``), each navigating it afresh. A
    view ends when the page's network is idle, so nothing of one page is still loading when the
    next starts; what went wrong is recorded per view. A load that raised raises again in every
    test that asks for it (and the next user of the tab gets a new one).
    """
    from pageview import PageView, view_page

    views: dict[str, PageView | Exception] = {}

    def view(page_src: str) -> PageView:
        if page_src not in views:
            try:
                views[page_src] = view_page(quiet_tab.use, site, screenshots, page_src)
            except Exception as error:  # noqa: BLE001 - re-raised below, in each test
                views[page_src] = error
        found = views[page_src]
        if isinstance(found, Exception):
            raise found
        return found

    return view

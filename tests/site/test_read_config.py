"""The "Read your config" page in headless Chromium, used as a person uses it.

The page (docs/read_config.md) runs ``posenc-ref inspect`` in the browser, through Pyodide. Here
a tab opens it and chooses files with its own buttons (the browser's file chooser), drops one,
pastes one, and reads what the page then shows: the ``--json`` output it offers for download,
the text under it, a refusal's message. Each must equal what the command line says under
CPython (``tests/site/read_config_cases.py``), for a config of every family in the corpus
(``../shared/real_configs``, skipped where absent), a config it refuses, and bad files (not
JSON, a list, 50 MB, past the size limit, 100,000 deep), after each of which the page must read
a config again. Python starts once, in one tab, for the whole module; nothing of it loads
before the first file, nor on another page, and nothing leaves the host.

Screenshots of the reader (test-artifacts/screenshots/read_config_*.jpg): loading, a reading, a
refusal and an error, at 1280 and 390 px, light and dark (Material's slate scheme, applied to the
page); test_site.py captures the page's first screen at both widths.
"""

from __future__ import annotations

import json
import re
import shutil
from functools import cache
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import read_config_cases as cases
from pageview import CARET, SHOT_QUALITY

pytestmark = pytest.mark.browser

PAGE = "read_config.md"
READ_TIMEOUT_MS = 240_000  # the first read loads Python: seconds, minutes on a loaded machine
PYODIDE_LOADS = re.compile(r"/vendor/pyodide/|posenc_ref_reader\.zip")

# What the page shows, as a person sees it: the state, the download's bytes, the text, the message.
SHOWN = """
async (root) => {
  const download = root.querySelector(".rc-actions a[download]");
  const text = root.querySelector(".rc-text pre");
  const message = root.querySelector(".rc-refusal .rc-message");
  const error = root.querySelector(".rc-error");
  return {
    state: root.dataset.rcState,
    outcomes: Number(root.dataset.rcOutcomes || 0),
    status: root.querySelector(".rc-status").textContent,
    error: error.hidden ? null : error.textContent,
    json: download ? await (await fetch(download.href)).text() : null,
    filename: download ? download.getAttribute("download") : null,
    text: text ? text.textContent : null,
    message: message ? message.textContent : null,
    links: [...root.querySelectorAll(".rc-result a[href]:not([download])")].map((a) => a.href),
    dots: [...root.querySelectorAll(".rc-chart .pe-series-main-dots")]
      .map((g) => g.children.length),
  };
}
"""


class Reader:
    """The page in one tab, with the requests it made; Python stays loaded between reads."""

    def __init__(self, tab, site, screenshots: Path):
        self.tab, self.page, self.site, self.screenshots = tab, tab.page, site, screenshots
        self.requests: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.root = self.page.locator(".rc-reader")

    def shown(self) -> dict:
        return self.root.evaluate(SHOWN)

    def _after(self, outcomes: int) -> dict:
        """What the page shows once more than ``outcomes`` reads have ended."""
        self.page.wait_for_function(
            f"(e) => Number(e.dataset.rcOutcomes || 0) > {outcomes}",
            arg=self.root.element_handle(),
            timeout=READ_TIMEOUT_MS,
        )
        return self.shown()

    def choose(self, path: Path, button: str = "Choose a file") -> dict:
        """Choose ``path`` with the page's button, as a person does; what the page then shows."""
        outcomes = self.shown()["outcomes"]
        with self.page.expect_file_chooser() as chooser:
            self.page.get_by_role("button", name=button).click()
        chooser.value.set_files(str(path))
        return self._after(outcomes)

    def capture(self, name: str) -> None:
        """The reader and what it shows (not the page's prose), as pageview.py saves pictures."""
        path = self.screenshots / f"read_config_{name}.jpg"
        self.root.screenshot(path=str(path), type="jpeg", quality=SHOT_QUALITY, caret=CARET)


@pytest.fixture(scope="module")
def reader(quiet_tab, site, screenshots):
    """The page, loaded once for the module in the shared tab (its search does not index)."""
    with quiet_tab.use() as tab:
        driver = Reader(tab, site, screenshots)
        for url in (site.url, site.page_url(PAGE)):  # another page first: it loads no Python
            tab.page.goto(url, wait_until="networkidle")
            # its fonts loaded (the math is typeset at build time, its glyphs are web fonts):
            # leaving before would abort them (an error)
            tab.page.evaluate("document.fonts.ready.then(() => true)")
        yield driver


@pytest.fixture(scope="module")
def case_files(tmp_path_factory) -> dict[str, Path]:
    return cases.write_cases(tmp_path_factory.mktemp("read_config_cases"))


# --- what the page must show ---------------------------------------------------------------


@cache
def _ids(site_dir: Path, path: str) -> frozenset[str] | None:
    """The element ids of the built page at URL path ``path`` (None: no such page)."""
    file = site_dir / path.lstrip("/") / "index.html" if path.endswith("/") else site_dir / path
    if not file.is_file():
        return None
    return frozenset(re.findall(r'\bid="([^"]+)"', file.read_text(encoding="utf-8")))


def problems_with(shown: dict, ours: dict, site) -> list[str]:
    """How what the page shows differs from CPython's answer ``ours``, and broken links."""
    problems = []
    if ours["json"]["status"] == 0:
        if shown["state"] != "done":
            return [f"state {shown['state']!r}, not done: {shown['error'] or shown['message']}"]
        if shown["json"] != ours["json"]["stdout"]:
            problems.append("the --json download differs from inspect --json")
        if shown["text"] != ours["text"]["stdout"].rstrip():
            problems.append("the text differs from inspect's")
        document = json.loads(shown["json"])
        # every pair that turns is a dot (a pair of frequency 0 has no wavelength to draw)
        rope = document["encoding"].get("rope", [])
        pairs = [sum(1 for p in spec["pairs"] if (p["inv_freq"] or 0) > 0) for spec in rope]
        if shown["dots"] != [n for n in pairs if n]:
            problems.append(f"the charts draw {shown['dots']} pairs, the reading has {pairs}")
    else:
        expected = (ours["json"]["stderr"] or ours["json"]["stdout"]).rstrip()
        if shown["state"] != "refused":
            return [f"state {shown['state']!r}, not refused: {shown['error']}"]
        if shown["message"] != expected:
            problems.append(f"message {shown['message']!r} is not the CLI's {expected!r}")
    for href in shown["links"]:
        parts = urlsplit(href)
        if not href.startswith(site.url):
            continue  # another site's page: nothing of this site to check
        ids = _ids(site.directory, parts.path[len(urlsplit(site.url).path) - 1 :])
        if ids is None or (parts.fragment and parts.fragment not in ids):
            problems.append(f"link to {href} leads nowhere")
    return problems


# --- the tests -----------------------------------------------------------------------------


def test_python_loads_on_the_first_read_only_with_a_progress_message(reader, case_files):
    """No Python before a file is read, nor on other pages; a progress message while it loads."""
    assert [u for u in reader.requests if PYODIDE_LOADS.search(u)] == [], "loaded before use"
    assert reader.shown()["state"] == "idle"
    reader.page.set_viewport_size({"width": 1280, "height": 900})
    before = reader.shown()["outcomes"]
    with reader.page.expect_file_chooser() as chooser:
        reader.page.get_by_role("button", name="Choose a file").click()
    chooser.value.set_files(str(case_files["llama.json"]))
    loading = reader.shown()  # the change event has run: the read has begun
    if loading["state"] == "loading":  # a fast machine may be past it already
        assert "Loading Python" in loading["status"]
        assert reader.page.locator(".rc-progress").is_visible()
        reader.capture("loading_1280_light")
    shown = reader._after(before)
    assert problems_with(shown, cases.cpython_answer(case_files["llama.json"]), reader.site) == []
    assert "Pyodide" in shown["status"] and "in this browser" in shown["status"]
    assert [u for u in reader.requests if PYODIDE_LOADS.search(u)], "Python never loaded"
    reader.tab.assert_clean()


def test_every_family_reads_as_the_command_line_reads_it(reader):
    """A config of every model_type in the corpus: the same JSON, text or refusal as the CLI."""
    files = cases.one_per_family(cases.corpus_files())
    if not files:
        pytest.skip(cases.CORPUS_ABSENT)
    problems, states = [], set()
    for path in files:
        shown = reader.choose(path)
        states.add(shown["state"])
        problems += [
            f"{path.name}: {p}"
            for p in problems_with(shown, cases.cpython_answer(path), reader.site)
        ]
    assert problems == [], f"{len(problems)} problems:\n" + "\n".join(problems[:20])
    assert states == {"done", "refused"}, states  # the corpus holds both
    reader.tab.assert_clean()


def test_the_download_is_the_json_output(reader, case_files):
    """The button saves a file named after the config, holding inspect --json's output."""
    reader.choose(case_files["llama.json"])
    with reader.page.expect_download() as download:
        reader.page.get_by_role("link", name="Download the --json output").click()
    assert download.value.suggested_filename == "llama.inspect.json"
    saved = Path(download.value.path()).read_text(encoding="utf-8")
    assert saved == cases.cpython_answer(case_files["llama.json"])["json"]["stdout"]


@pytest.mark.parametrize("name", [*cases.GOOD, *cases.REFUSED_FILES])
def test_a_config_is_read_or_refused_as_the_command_line_does(reader, case_files, name):
    """A config, a vision tower's alone, and one the RoPE reader refuses: the CLI's answer."""
    shown = reader.choose(case_files[name])
    ours = cases.cpython_answer(case_files[name])
    assert ours["json"]["status"] == (2 if name in cases.REFUSED_FILES else 0)
    assert problems_with(shown, ours, reader.site) == []
    if name in cases.REFUSED_FILES:  # the refusal alone: no reading beside it
        assert shown["json"] is None and shown["text"] is None
        assert cases.REFUSED_WORDS[name] in shown["message"]


@pytest.mark.parametrize("name", cases.BAD_FILES)
def test_a_bad_file_gets_a_clear_message_and_the_page_keeps_working(reader, case_files, name):
    """Not JSON, a list, 50 MB, past the limit, 100,000 deep: the CLI's message, then a read."""
    shown = reader.choose(case_files[name])
    ours = cases.cpython_answer(case_files[name])
    assert problems_with(shown, ours, reader.site) == []
    assert shown["message"].startswith(f"error: {name}")
    again = reader.choose(case_files["llama.json"])
    assert again["state"] == "done", again["error"]
    reader.tab.assert_clean()


def test_a_folder_a_drop_and_pasted_text_are_read(reader, case_files, tmp_path):
    """A model folder gives its config.json; a dropped file and pasted text are read the same."""
    expected = cases.cpython_answer(case_files["llama.json"])
    folder = tmp_path / "My-Model"
    folder.mkdir()
    shutil.copy(case_files["llama.json"], folder / "config.json")
    (folder / "tokenizer.json").write_text("{}")
    shown = reader.choose(folder, button="Choose a folder")
    renamed = json.loads(expected["json"]["stdout"]) | {
        "input": "config.json",
        "config": "config.json",
    }
    assert shown["state"] == "done" and json.loads(shown["json"]) == renamed

    (folder / "config.json").unlink()
    shown = reader.choose(folder, button="Choose a folder")
    assert shown["state"] == "error"
    assert shown["error"].startswith("My-Model holds no config.json")

    text = case_files["llama.json"].read_text(encoding="utf-8")
    outcomes = reader.shown()["outcomes"]
    reader.root.locator(".rc-drop").evaluate(
        """(drop, text) => {
          const data = new DataTransfer();
          data.items.add(new File([text], "llama.json", {type: "application/json"}));
          const init = {dataTransfer: data, bubbles: true, cancelable: true};
          drop.dispatchEvent(new DragEvent("drop", init));
        }""",
        text,
    )
    shown = reader._after(outcomes)
    assert shown["state"] == "done" and shown["json"] == expected["json"]["stdout"]

    reader.page.get_by_text("or paste its text").click()
    reader.page.get_by_label("config.json text").fill(text)
    outcomes = reader.shown()["outcomes"]
    reader.page.get_by_role("button", name="Read the pasted text").click()
    shown = reader._after(outcomes)
    assert shown["state"] == "done" and json.loads(shown["json"]) == renamed
    reader.tab.assert_clean()


def test_the_layout_option_is_the_command_lines_flag(reader, tmp_path):
    """A model_type posenc_ref does not know is refused; choosing a layout reads as --layout."""
    path = tmp_path / "new_model.json"
    path.write_text(json.dumps({**cases.LLAMA, "model_type": "my_new_model"}))
    shown = reader.choose(path)
    assert shown["state"] == "refused" and "--layout half" in shown["message"]
    layout = reader.page.get_by_label("pair layout")
    for choice, flags in [("half", ("--layout", "half")), ("", ())]:
        outcomes = reader.shown()["outcomes"]
        layout.select_option(choice)  # the page reads the same file again with the flag
        shown = reader._after(outcomes)
        if flags:
            assert problems_with(shown, cases.cpython_answer(path, flags), reader.site) == []
    assert shown["state"] == "refused"


DARK = """
(href) => {
  const link = document.createElement("link");
  link.rel = "stylesheet"; link.href = href; link.id = "rc-test-palette";
  document.head.appendChild(link);
  document.body.setAttribute("data-md-color-scheme", "slate");
  return new Promise((resolve) => { link.onload = resolve; });
}
"""
LIGHT = """() => { document.getElementById("rc-test-palette")?.remove();
  document.body.setAttribute("data-md-color-scheme", "default"); }"""
FITS = """
() => {
  const article = document.querySelector("article").getBoundingClientRect();
  const out = [...document.querySelectorAll(".rc-reader, .rc-reader *")].filter((e) => {
    const r = e.getBoundingClientRect();
    const outside = r.right > article.right + 1 || r.left < article.left - 1;
    return r.width && !e.closest("pre") && outside;
  }).map((e) => {
    const r = e.getBoundingClientRect();
    const text = e.textContent.trim().slice(0, 40);
    return `${e.tagName.toLowerCase()} "${text}" ${Math.round(r.left)}..${Math.round(r.right)} px`;
  });
  return {out: out.slice(0, 5), page: document.documentElement.scrollWidth,
          screen: document.documentElement.clientWidth};
}
"""


@pytest.mark.parametrize("width", [1280, 390])
def test_a_reading_a_refusal_and_an_error_fit_the_screen(reader, case_files, width, tmp_path):
    """Nothing leaves the article at 1280 or 390 px; screenshots in light and dark."""
    palette = next(reader.site.directory.glob("assets/stylesheets/palette.*.min.css"))
    empty = tmp_path / "Empty-Folder"
    empty.mkdir()
    (empty / "weights.bin").write_bytes(b"\0")
    reader.page.set_viewport_size({"width": width, "height": 900})
    problems = []
    for what, action in [
        ("reading", lambda: reader.choose(case_files["llama.json"])),
        ("refusal", lambda: reader.choose(case_files["refused.json"])),
        ("error", lambda: reader.choose(empty, button="Choose a folder")),
    ]:
        shown = action()
        assert (
            shown["state"] == {"reading": "done", "refusal": "refused", "error": "error"}[what]
        ), shown
        fit = reader.page.evaluate(FITS)
        if fit["out"] or fit["page"] > fit["screen"]:
            problems.append(f"{what} at {width}px: {fit}")
        for scheme in ("light", "dark"):
            if scheme == "dark":
                reader.page.evaluate(
                    DARK,
                    urljoin(reader.site.url, palette.relative_to(reader.site.directory).as_posix()),
                )
            reader.capture(f"{what}_{width}_{scheme}")
            reader.page.evaluate(LIGHT)
    assert problems == [], "\n".join(problems)
    reader.tab.assert_clean()

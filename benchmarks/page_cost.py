"""What each page of the built site costs the reader's browser: main-thread time and bytes.

Usage::

    python -m benchmarks.page_cost SITE_DIR [--label NAME] [--rounds N] [--out PATH]

Every page of a built site (``mkdocs build``; its ``sitemap.xml`` lists them) is opened in
headless Chromium at 1280 px, once with JavaScript and once without, in interleaved rounds, and
Chrome's own counters are read when the page is ready: ``TaskDuration`` of the DevTools
protocol's ``Performance.getMetrics`` (the renderer's main thread, busy), in the ``threadTicks``
time domain (the thread's CPU time: a task that waits for a core another process holds does not
count, which keeps the numbers steady on a shared machine). A page is ready when it has loaded,
the network has been idle for half a second, every formula is typeset (when the page typesets
in the browser) and every widget has started.

The numbers that decide are ratios: each page with JavaScript against the same page without,
measured in the same rounds. A page with JavaScript off still parses its HTML, computes its
styles, lays out and paints; what JavaScript adds on top is what the page's scripts cost the
reader on every visit. Both contexts keep their HTTP cache, warmed on the home page first, as
for a reader moving through the site.

``--out`` writes the record that ``docs/benchmarks.md`` shows (:func:`table`, :func:`machine`);
without it the table is only printed. ``tests/site/test_page_cost.py`` runs :func:`measure` on
a few pages of the suite's build and gates on the same ratio.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import statistics
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

RECORD = Path(__file__).with_name("page_cost.json")
COMMAND = "python -m benchmarks.page_cost"
VIEWPORT = {"width": 1280, "height": 900}
# Only the local server is reachable: a request to any other host fails at name resolution.
CHROMIUM_ARGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
LOAD_TIMEOUT_MS = 180_000
# Ready, with JavaScript: the typesetting of a page that still typesets in the browser (the
# site before issue 43) has finished, and every widget has started (explorer.js sets
# ``posencExplorer`` on each, and ``data-pe-zoo`` once the model list is in).
_READY = """
async () => {
  const done = () => {
    const math = [...document.querySelectorAll(".arithmatex")];
    const typesetting = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    const mathDone = !typesetting || math.every((e) => e.querySelector("mjx-container"));
    const widgets = [...document.querySelectorAll(".pe-widget")].every((e) => e.posencExplorer &&
      (!e.dataset.zoo || e.dataset.peZoo || e.querySelector(".pe-note")));
    return mathDone && widgets;
  };
  const start = performance.now();
  while (!done() && performance.now() - start < 120000) {
    await new Promise((r) => setTimeout(r, 50));
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
}
"""
# Bytes of everything the page loaded (its document, scripts, styles, fonts, images, data),
# decoded, whether the bytes came from the network or the cache.
_BYTES = """
() => [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
  .reduce((sum, e) => sum + (e.decodedBodySize || 0), 0)
"""


@dataclass
class Load:
    """One load of one page: main-thread time (s, CPU) and what it loaded (bytes)."""

    task_s: float
    script_s: float
    layout_s: float
    style_s: float
    loaded_bytes: int


def serve(directory: Path) -> tuple[str, ThreadingHTTPServer]:
    """Serve ``directory`` on a free local port (in a daemon thread): its base URL and server."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/", server


def site_pages(site: Path) -> list[str]:
    """Every page of the built site, as paths below its root (``""``, ``"rope/"``, ...).

    From ``sitemap.xml``, which lists every page under the address the site was built for; the
    home page's address is the shortest, and every other starts with it.
    """
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    root = ET.parse(site / "sitemap.xml").getroot()
    paths = [urlsplit(e.text).path for e in root.iterfind(".//s:loc", ns)]
    base = min(paths, key=len)
    return [path[len(base) :] for path in paths]


def page_file(site: Path, page: str) -> Path:
    return site / page / "index.html"


def page_kind(html: str) -> str:
    """``"script"`` for a page drawn by script (widget, config reader, notebook), else ``"text"``.

    The done-when of issue 43 holds text-and-mathematics pages to a ratio; pages drawn by script
    are measured and shown.
    """
    if 'class="pe-widget"' in html or 'class="rc-reader"' in html or "jp-Notebook" in html:
        return "script"
    return "text"


_NOTEBOOK_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$\w])\$[^$\n]+?\$", re.S)
_NOTEBOOK_CELL = re.compile(r'<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown.*?</div>', re.S)


def math_count(html: str) -> int:
    """Formulas on the page: typeset in the HTML (``mjx-container``) or left for the browser.

    Left for the browser: arithmatex's elements, and the ``$...$`` of notebook markdown cells.
    """
    typeset = html.count("<mjx-container")
    if typeset:
        return typeset
    cells = "".join(_NOTEBOOK_CELL.findall(html))
    return html.count('class="arithmatex"') + len(_NOTEBOOK_MATH.findall(cells))


def measure(context, url: str, javascript: bool) -> Load:
    """Open ``url`` in a new tab of the browser ``context`` and read its counters when ready.

    ``javascript`` says whether the context runs scripts (it is a property of the context; the
    argument only decides how readiness is awaited).
    """
    page = context.new_page()
    try:
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
        page.goto(url, wait_until="load", timeout=LOAD_TIMEOUT_MS)
        page.wait_for_load_state("networkidle", timeout=LOAD_TIMEOUT_MS)
        if javascript:
            page.evaluate(_READY)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        loaded = int(page.evaluate(_BYTES))
        return Load(
            metrics["TaskDuration"],
            metrics["ScriptDuration"],
            metrics["LayoutDuration"],
            metrics["RecalcStyleDuration"],
            loaded,
        )
    finally:
        page.close()


def _median(loads: list[Load]) -> dict:
    return {
        "task_s": round(statistics.median(x.task_s for x in loads), 4),
        "script_s": round(statistics.median(x.script_s for x in loads), 4),
        "layout_s": round(statistics.median(x.layout_s for x in loads), 4),
        "style_s": round(statistics.median(x.style_s for x in loads), 4),
        "loaded_bytes": max(x.loaded_bytes for x in loads),
        "samples_task_s": [round(x.task_s, 4) for x in loads],
    }


def launch(playwright):
    """Debian's Chromium (never a downloaded one), offline but for the local server."""
    executable = shutil.which("chromium")
    if executable is None:
        raise SystemExit("page_cost: Debian's chromium is not installed (apt-get install chromium)")
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)


def contexts(browser, url: str) -> dict[bool, object]:
    """A context with JavaScript and one without, each warmed on the home page (its cache)."""
    found = {}
    for javascript in (True, False):
        context = browser.new_context(viewport=VIEWPORT, java_script_enabled=javascript)
        for _ in range(2):
            measure(context, url, javascript)
        found[javascript] = context
    return found


def run(site: Path, rounds: int = 3, only: list[str] | None = None, log=print) -> dict:
    """Measure every page of the built ``site`` (or those in ``only``): the record to show."""
    from playwright.sync_api import sync_playwright

    pages = site_pages(site)
    if only:
        pages = [p for p in pages if p in only]
    url, server = serve(site)
    started = time.perf_counter()
    load_before = [round(x, 2) for x in os.getloadavg()]
    samples: dict[str, dict[bool, list[Load]]] = {p: {True: [], False: []} for p in pages}
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            version = browser.version
            by_js = contexts(browser, url)
            for round_index in range(rounds):
                for page in pages:
                    # Alternate which goes first, so a slow spell lands on both over the rounds.
                    order = (True, False) if (round_index + len(page)) % 2 else (False, True)
                    for javascript in order:
                        load = measure(by_js[javascript], url + page, javascript)
                        samples[page][javascript].append(load)
                log(
                    f"round {round_index + 1}/{rounds} done ({time.perf_counter() - started:.0f} s)"
                )
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    rows = []
    for page in pages:
        html = page_file(site, page).read_text(encoding="utf-8")
        with_js, without = _median(samples[page][True]), _median(samples[page][False])
        rows.append(
            {
                "page": page,
                "kind": page_kind(html),
                "math": math_count(html),
                "html_bytes": len(html.encode("utf-8")),
                "js": with_js,
                "no_js": without,
                "ratio": round(with_js["task_s"] / without["task_s"], 3),
            }
        )
    return {
        "command": COMMAND,
        "chromium": version,
        "rounds": rounds,
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "elapsed_s": round(time.perf_counter() - started, 1),
        "pages": rows,
    }


# --- the benchmark page --------------------------------------------------------------------


def load(path: Path = RECORD) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _name(page: str) -> str:
    return page.rstrip("/") or "home"


def _cell_table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A Markdown table; the first ``left`` columns aligned left, the others (numbers) right."""
    marks = [":--"] * left + ["--:"] * (len(header) - left)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def table(run_record: dict, pages: list[str] | None = None) -> str:
    """The run's pages (or those of ``pages``), most expensive first, as a Markdown table.

    Main-thread time with JavaScript and without, their ratio, formulas, the page's HTML and
    everything it loaded with JavaScript (scripts, styles, fonts, images, the search index).
    """
    rows = sorted(run_record["pages"], key=lambda r: -r["js"]["task_s"])
    if pages is not None:
        rows = [r for r in rows if r["page"] in pages]
    out = []
    for r in rows:
        out.append(
            [
                f"`{_name(r['page'])}`" + (" (drawn by script)" if r["kind"] == "script" else ""),
                f"{r['js']['task_s']:.2f}",
                f"{r['no_js']['task_s']:.2f}",
                f"{r['ratio']:.1f}",
                f"{r['math']:,}",
                f"{r['html_bytes'] / 1024:,.0f}",
                f"{r['js']['loaded_bytes'] / 1024:,.0f}",
            ]
        )
    header = [
        "page",
        "main thread (s)",
        "JavaScript off (s)",
        "ratio",
        "formulas",
        "HTML (KB)",
        "loaded (KB)",
    ]
    return _cell_table(header, out)


# The pages of issue 43's table (as measured before it), shown for every run.
ISSUE_PAGES = [
    *("api/", "models/", "rope/", "absolute/", "rope_design/", "tests/", "development/", ""),
]


def highlights(run_record: dict) -> list[str]:
    """The pages worth a row: issue 43's, those drawn by script, the costliest of api/ and tests/.

    With the API reference and the tests split into pages (one per module), the costliest
    module page of each stands for the rest.
    """
    rows = run_record["pages"]
    chosen = [p for p in ISSUE_PAGES if any(r["page"] == p for r in rows)]
    chosen += [r["page"] for r in rows if r["kind"] == "script"]
    for folder in ("api/", "tests/"):
        inside = [r for r in rows if r["page"].startswith(folder) and r["page"] != folder]
        if inside:
            chosen.append(max(inside, key=lambda r: r["js"]["task_s"])["page"])
    return list(dict.fromkeys(chosen))


def summary(run_record: dict) -> dict:
    """Over the text pages: the median and worst ratio, and which exceed 2; the median time."""
    text = [r for r in run_record["pages"] if r["kind"] == "text"]
    worst = max(text, key=lambda r: r["ratio"])
    return {
        "pages": len(run_record["pages"]),
        "text_pages": len(text),
        "median_ratio": round(statistics.median(r["ratio"] for r in text), 2),
        "worst": [_name(worst["page"]), worst["ratio"]],
        "median_js_s": round(statistics.median(r["js"]["task_s"] for r in run_record["pages"]), 2),
        "over_two": [_name(r["page"]) for r in text if r["ratio"] > 2],
    }


def summary_table(record: dict) -> str:
    """One row per recorded run: what was measured, and the ratios that decide."""
    out = []
    for label, run_record in record["runs"].items():
        found = summary(run_record)
        scripted = [r for r in run_record["pages"] if r["kind"] == "script"]
        out.append(
            [
                label,
                run_record.get("site", ""),
                f"{found['pages']} ({found['text_pages']} text)",
                f"{found['median_ratio']:.1f}",
                f"{found['worst'][1]:.1f} (`{found['worst'][0]}`)",
                str(len(found["over_two"])),
                ", ".join(f"`{_name(r['page'])}` {r['ratio']:.1f}" for r in scripted),
            ]
        )
    header = [
        "run",
        "site",
        "pages",
        "median ratio (text pages)",
        "worst text page",
        "text pages over 2",
        "pages drawn by script",
    ]
    return _cell_table(header, out, left=2)


def what_javascript_adds(run_record: dict) -> str:
    """A sentence on the run's text pages: which exceed 2, and what JavaScript adds to them.

    What JavaScript adds is a page's main-thread time with JavaScript less its time without; the
    pages over 2 are told apart by their own cost (JavaScript off).
    """
    text = [r for r in run_record["pages"] if r["kind"] == "text"]
    over = [r for r in text if r["ratio"] > 2]
    added = statistics.median(r["js"]["task_s"] - r["no_js"]["task_s"] for r in text)
    worst = max(text, key=lambda r: r["ratio"])
    found = (
        f"{len(over)} of {len(text)} text pages are over 2 (the worst `{_name(worst['page'])}`, "
        f"{worst['ratio']:.2f}; median ratio {statistics.median(r['ratio'] for r in text):.2f}). "
        f"JavaScript adds {added:.3f} s at the median of the text pages"
    )
    if not over:
        return found + "."
    heaviest_over = max(r["no_js"]["task_s"] for r in over)
    at_most_two = [r["no_js"]["task_s"] for r in text if r["ratio"] <= 2]
    return found + (
        f"; every page over 2 costs at most {heaviest_over:.3f} s with JavaScript off"
        + (
            f", against {statistics.median(at_most_two):.3f} s at the median of the others."
            if at_most_two
            else "."
        )
    )


def machine(run_record: dict) -> str:
    """Where and how one run was measured: a sentence."""
    m = run_record["machine"]
    return (
        f"Measured {m['date_utc']} on {m['cpu']} ({m['logical_cores']} logical cores, "
        f"{m['memory_gib']} GiB), Chromium {run_record['chromium']}, 1280 px; "
        f"{run_record['rounds']} interleaved rounds, medians; 1-minute load average "
        f"{run_record['load_average_before'][0]} at the start and "
        f"{run_record['load_average_after'][0]} at the end (the machine is shared); "
        f"{run_record['elapsed_s']:.0f} s in all."
    )


def _arguments(argv):
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="a built site (mkdocs build -d SITE)")
    parser.add_argument("--label", default="after", help="the run's name in the record")
    parser.add_argument("--site-name", default="", help="what was built, for the record")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--only", nargs="+", metavar="PAGE", help="only these pages (rope/, ...)")
    parser.add_argument("--out", type=Path, help="add the run to this record (JSON)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _arguments(argv)
    from benchmarks.harness import machine_info  # noqa: PLC0415 - torch only for the record

    record = run(args.site.resolve(), args.rounds, args.only)
    record["machine"] = machine_info()
    record["site"] = args.site_name
    print(table(record))
    print(json.dumps(summary(record)))
    if args.out:
        existing = load(args.out) if args.out.exists() else {"runs": {}}
        existing["runs"][args.label] = record
        args.out.write_text(json.dumps(existing, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

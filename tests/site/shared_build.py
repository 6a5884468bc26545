"""One strict site build per test run, shared by every pytest-xdist worker, and its server.

The build takes minutes, and ``SITE_URL`` bakes the address it is served at into the pages
(Material's instant navigation compares clicked links with ``sitemap.xml``). So the address is
fixed once, by the process that outlives the workers: pytest's main process (the xdist
controller, or the only process without xdist) binds the port and serves a folder under the run's
base temporary directory, and hands both to the workers (:func:`configure_node`). The first
worker that asks for the site builds it there, under a file lock; the others wait on the lock
and read the build's record. A worker that died while building leaves no record (the lock dies
with it), and the next one builds again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "posenc_site"  # in config.workerinput: {"folder": ..., "url": ...}

# Draws every site figure into a folder, in a fresh interpreter: what a pytest process has
# imported or configured (matplotlib rcParams, say) cannot leak into the comparison.
_DRAW_FIGURES = """
import pathlib, sys, traceback
import posenc_ref.plots as plots
out = pathlib.Path(sys.argv[1])
for name, make in plots.SITE_FIGURES.items():
    try:
        (out / name).write_bytes(plots.render_svg(make))
    except Exception:
        (out / (name + ".error")).write_text(traceback.format_exc())
"""


@dataclass(frozen=True)
class Share:
    """Where the run's site is built (``folder``) and the address its pages are served at."""

    folder: Path
    url: str

    @property
    def html(self) -> Path:
        return self.folder / "html"

    @property
    def figures(self) -> Path:
        return self.folder / "figures"

    @property
    def record(self) -> Path:
        return self.folder / "build.json"


_STASH = pytest.StashKey[Share]()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


def serve(config) -> Share:
    """In pytest's main process: bind a local port and serve the (future) build from it.

    Binding costs nothing and the folder may not exist yet: it is read per request.
    """
    folder = config._tmp_path_factory.getbasetemp() / "site-shared"
    folder.mkdir(exist_ok=True)
    handler = partial(_QuietHandler, directory=str(folder / "html"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    share = Share(folder, f"http://127.0.0.1:{server.server_address[1]}/")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config.add_cleanup(server.server_close)
    config.add_cleanup(server.shutdown)
    config.stash[_STASH] = share
    return share


def configure_node(config, node) -> None:
    """In the xdist controller: tell a worker where the site is (``pytest_configure_node``)."""
    share = config.stash[_STASH]
    node.workerinput[KEY] = {"folder": str(share.folder), "url": share.url}


def share_of(config) -> Share:
    """The run's share, in a worker (from the controller) or in the only process."""
    given = getattr(config, "workerinput", {}).get(KEY)
    if given is not None:
        return Share(Path(given["folder"]), given["url"])
    return config.stash[_STASH]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released by the kernel if this process dies
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def built(share: Share) -> dict:
    """The build's record (``returncode``, ``log``, ``seconds``), building it if nobody has."""
    with locked(share.folder / "build.lock"):
        if not share.record.exists():
            _build(share)
    return json.loads(share.record.read_text())


def _build(share: Share) -> None:
    env = {**os.environ, "SITE_URL": share.url, "NO_MKDOCS_2_WARNING": "1"}
    share.figures.mkdir(exist_ok=True)
    start = time.perf_counter()
    # No -q or -v: both let warnings through --strict in MkDocs 1.6.1.
    build = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(share.html)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # While the build runs (mostly on one core), a second process draws every figure again: the
    # reproducibility test compares the two, and this way it costs little extra wall time.
    drawing = subprocess.Popen(
        [sys.executable, "-c", _DRAW_FIGURES, str(share.figures)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        log, _ = build.communicate(timeout=900)
        drawn, _ = drawing.communicate(timeout=900)
    finally:  # a hung build must not outlive the session
        for child in (build, drawing):
            if child.poll() is None:
                child.kill()
    if drawing.returncode != 0:
        (share.figures / "(figure process).error").write_text(drawn)
    record = {"returncode": build.returncode, "log": log, "seconds": time.perf_counter() - start}
    partial_file = share.record.with_suffix(".tmp")
    partial_file.write_text(json.dumps(record))
    partial_file.replace(share.record)  # whole or absent, for a worker reading it


def redrawn_figures(share: Share) -> dict[str, bytes | str]:
    """Figure name -> the SVG the second process drew, or its error's traceback."""
    drawn: dict[str, bytes | str] = {}
    for path in share.figures.iterdir():
        if path.suffix == ".error":
            drawn[path.stem] = path.read_text()
        else:
            drawn[path.name] = path.read_bytes()
    return drawn

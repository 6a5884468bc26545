"""One strict site build per test run, shared by every pytest-xdist worker, and its server.

The build takes minutes, and ``SITE_URL`` bakes the address it is served at into the pages
(Material's instant navigation compares clicked links with ``sitemap.xml``). So the address is
fixed once, by the process that outlives the workers: pytest's main process (the xdist
controller, or the only process without xdist) binds the port and serves a folder under the run's
base temporary directory, and hands both to the workers (:func:`configure_node`). The first
worker that asks for the site builds it there, under a file lock; the others wait on the lock
and read the build's record. A worker that died while building leaves no record (the lock dies
with it), and the next one builds again.

``make test`` builds the site before pytest starts, like the ggml library: ``python -m
tests.site.shared_build`` builds into :data:`PREBUILT` with the same command, at an address it
records, together with a digest of everything the build reads (:func:`inputs_digest`). pytest's
main process serves that build instead of building its own when the digest is still the
working tree's and the recorded port can be bound again; otherwise the run builds as above. The
build's log and return code are the same record either way, and the same tests read them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "posenc_site"  # in config.workerinput: {"folder": ..., "url": ..., "built_in": ...}
PREBUILT = ROOT / ".cache" / "site-test"  # make test's build (gitignored, like ggml's)

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
    """The run's shared folder (locks, markers), its site's address, and where the site is built.

    ``built_in`` is the run's folder itself, or make test's :data:`PREBUILT` build.
    """

    folder: Path
    url: str
    built_in: Path | None = None

    @property
    def _build_folder(self) -> Path:
        return self.built_in or self.folder

    @property
    def html(self) -> Path:
        return self._build_folder / "html"

    @property
    def figures(self) -> Path:
        return self._build_folder / "figures"

    @property
    def record(self) -> Path:
        return self._build_folder / "build.json"


_STASH = pytest.StashKey[Share]()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


def _handler(html: Path):
    return partial(_QuietHandler, directory=str(html))


def serve(config) -> Share:
    """In pytest's main process: bind a local port and serve the (future) build from it.

    Binding costs nothing and the folder may not exist yet: it is read per request. make test's
    build is served instead when it is still current and its port is free (:func:`prebuilt_url`).
    """
    folder = config._tmp_path_factory.getbasetemp() / "site-shared"
    folder.mkdir(exist_ok=True)
    server = None
    url = prebuilt_url()
    if url is not None:
        share = Share(folder, url, built_in=PREBUILT)
        try:
            server = ThreadingHTTPServer(("127.0.0.1", urlsplit(url).port), _handler(share.html))
        except OSError:  # another run serves it: this run builds at an address of its own
            pass
    if server is None:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(folder / "html"))
        share = Share(folder, f"http://127.0.0.1:{server.server_address[1]}/")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config.add_cleanup(server.server_close)
    config.add_cleanup(server.shutdown)
    config.stash[_STASH] = share
    return share


def header(config) -> str:
    """The run's header line: which build the site tests read, and where it is served."""
    share = config.stash[_STASH]
    if share.built_in is not None:
        return f"site: make test's build in {share.built_in.relative_to(ROOT)}, {share.url}"
    return f"site: built by this run, {share.url}"


def configure_node(config, node) -> None:
    """In the xdist controller: tell a worker where the site is (``pytest_configure_node``)."""
    share = config.stash[_STASH]
    node.workerinput[KEY] = {
        "folder": str(share.folder),
        "url": share.url,
        "built_in": share.built_in and str(share.built_in),
    }


def share_of(config) -> Share:
    """The run's share, in a worker (from the controller) or in the only process."""
    given = getattr(config, "workerinput", {}).get(KEY)
    if given is not None:
        built_in = given.get("built_in")
        return Share(Path(given["folder"]), given["url"], built_in and Path(built_in))
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


def _build(share: Share, digest: str | None = None) -> None:
    # One torch thread, as in the suite (tests/conftest.py): the build runs beside other work.
    env = {
        **os.environ,
        "SITE_URL": share.url,
        "NO_MKDOCS_2_WARNING": "1",
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS", "1"),
    }
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
        env=env,
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
    record = {
        "returncode": build.returncode,
        "log": log,
        "seconds": time.perf_counter() - start,
        "url": share.url,
        "inputs": digest,
    }
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


# --- make test's build, before pytest ------------------------------------------------------


def inputs_digest(root: Path = ROOT) -> str | None:
    """A digest of what the build reads: the working tree, MathJax, the installed packages.

    The working tree is every file git would commit (tracked or not, but not ignored), by name
    and content: pages, hooks, the package, the tests the Tests page is made of, their data.
    None where git cannot list them (not a checkout): then nothing is reused.
    """
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        return None
    digest = hashlib.sha256()
    for name in sorted(set(listed.stdout.split(b"\0")) - {b""}):
        path = root / os.fsdecode(name)
        digest.update(name + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"-")
    # gitignored, fetched by make, read by the build: MathJax for hooks/typeset.py (and an old
    # docs/vendor/, copied into the site if it is there)
    for vendor in (root / ".cache" / "mathjax", root / "docs" / "vendor"):
        for path in sorted(vendor.rglob("*")) if vendor.is_dir() else ():
            if path.is_file():
                digest.update(f"{path.relative_to(root)}:{path.stat().st_size}\0".encode())
    # the environment's own packages: distributions() alone also reads sys.path, which differs
    # between pytest and `python -m` (the checkout's folder, the current directory)
    site_dirs = sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})
    packages = sorted(
        {
            f"{dist.metadata['Name']}=={dist.version}"
            for dist in importlib.metadata.distributions(path=site_dirs)
        }
    )
    digest.update("\n".join([sys.version, *packages]).encode())
    return digest.hexdigest()


def _current_record(folder: Path, digest: str | None) -> dict | None:
    """The record of the build in ``folder`` if it was made from inputs of ``digest``."""
    record_file = folder / "build.json"
    if digest is None or not record_file.exists():
        return None
    record = json.loads(record_file.read_text())
    return record if record.get("inputs") == digest else None


def prebuilt_url(folder: Path = PREBUILT, root: Path = ROOT) -> str | None:
    """The address make test's build in ``folder`` was made for, if it is current; else None."""
    record = _current_record(folder, inputs_digest(root))
    return None if record is None else record["url"]


def build_ahead() -> str:
    """Build into :data:`PREBUILT` unless a build that passed is there, current; say what was done.

    A build that failed is built again: the failure may have been the machine's (a process
    killed), and pytest reads whatever this leaves, failed or not.
    """
    digest = inputs_digest()
    if digest is None:
        return "site: not a git checkout, pytest builds the site itself"
    record = _current_record(PREBUILT, digest)
    if record is not None and record["returncode"] == 0:
        return f"site: the build in {PREBUILT.relative_to(ROOT)} is current"
    shutil.rmtree(PREBUILT, ignore_errors=True)
    PREBUILT.mkdir(parents=True)
    with socket.socket() as probe:  # a free port now; pytest binds it again, or builds anew
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    share = Share(PREBUILT, f"http://127.0.0.1:{port}/")
    _build(share, digest)
    record = json.loads(share.record.read_text())
    outcome = "built" if record["returncode"] == 0 else "FAILED (the site tests will say why)"
    return f"site: {outcome} in {record['seconds']:.0f} s into {PREBUILT.relative_to(ROOT)}"


if __name__ == "__main__":
    print(build_ahead())

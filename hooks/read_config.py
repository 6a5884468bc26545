"""The "Read your config" page's files: posenc_ref's reader as a zip, and a check for Pyodide.

The page (``docs/read_config.md``) runs the package's own command line, ``inspect``, in the
reader's browser through Pyodide (CPython compiled to WebAssembly). Two things must be in the
built site for that, and this hook sees to both:

* ``data/posenc_ref_reader.zip``: the package's modules and package data (the JSON files it
  reads with ``importlib.resources``), zipped from the working tree on every build, so the page
  reads configs with exactly the code that was built. Pyodide unpacks it into its file system
  (``pyodide.unpackArchive``). It is generated (nothing is written into ``docs/``) and
  deterministic: files in sorted order, fixed timestamps, so two builds give the same bytes.
* ``vendor/pyodide/``: the interpreter, fetched from the npm registry by
  ``scripts/vendor_pyodide.sh`` (hash-checked, git-ignored, like MathJax). The page loads it
  only when a config is first read; without it the build fails here, naming the script, rather
  than shipping a page that cannot read anything.

``plots/`` and ``testing/`` are left out: they draw figures and check implementations with
matplotlib and torch, which Pyodide does not have, and the reader never imports them (the Node
test, tests/site/test_read_config_pyodide.py, would fail with ModuleNotFoundError if it did).
"""

from __future__ import annotations

import io
import logging
import zipfile
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.read_config")

PAGE = "read_config.md"
ZIP_PATH = "data/posenc_ref_reader.zip"
PYODIDE = "vendor/pyodide"
# What loadPyodide() fetches (scripts/vendor_pyodide.sh copies exactly these).
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
    "VERSION",  # written by the script: the version and the npm integrity it checked
)
LEFT_OUT = ("plots", "testing")  # subpackages that need matplotlib or torch, never the reader's
DATA_SUFFIXES = (".json",)  # package data read with importlib.resources
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest date: the archive does not change with mtimes


def reader_files(package: Path) -> list[Path]:
    """The files of ``package`` (the ``posenc_ref`` folder) that go into the zip, sorted."""
    found = []
    for path in sorted(package.rglob("*")):
        parts = path.relative_to(package).parts
        if not path.is_file() or "__pycache__" in parts or parts[0] in LEFT_OUT:
            continue
        if path.suffix == ".py" or path.suffix in DATA_SUFFIXES:
            found.append(path)
    return found


def reader_zip(package: Path) -> bytes:
    """The zip of :func:`reader_files` under ``posenc_ref/``: the same files give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in reader_files(package):
            name = f"{package.name}/{path.relative_to(package).as_posix()}"
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def _package(config) -> Path:
    return Path(config.config_file_path).resolve().parent / "posenc_ref"


def on_config(config):
    folder = Path(config.docs_dir) / PYODIDE
    missing = [name for name in PYODIDE_FILES if not (folder / name).is_file()]
    if missing:
        raise PluginError(
            f"docs/{PYODIDE}/ lacks {', '.join(missing)}: the Read your config page loads "
            "Pyodide from there (run scripts/vendor_pyodide.sh)"
        )
    return config


def on_page_markdown(markdown, page, config, files):
    """The page's words about Pyodide: its version and size, from the vendored copy."""
    if page.file.src_uri != PAGE:
        return markdown
    folder = Path(config.docs_dir) / PYODIDE
    version = (folder / "VERSION").read_text(encoding="utf-8").split()[0]
    size = sum((folder / name).stat().st_size for name in PYODIDE_FILES)
    return markdown.replace("PYODIDE_VERSION", version).replace("PYODIDE_MB", f"{size / 1e6:.0f}")


def on_files(files, config):
    if files.get_file_from_path(ZIP_PATH) is not None:
        raise PluginError(f"docs/{ZIP_PATH} exists, but it is generated: delete the file")
    content = reader_zip(_package(config))
    files.append(File.generated(config, ZIP_PATH, content=content))
    log.info("read_config: posenc_ref's reader, %d KB, in %s", len(content) // 1024, ZIP_PATH)
    return files

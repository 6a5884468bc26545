"""The "Read your config" page's reader, under Pyodide in Node, says what CPython's CLI says.

The page (docs/read_config.md) runs ``posenc-ref inspect`` in the browser: the package's files,
zipped as the site build zips them (``hooks/read_config.py``), in Pyodide, driven by the page's
own worker code (``docs/javascripts/read_config_worker.js``, here through
``tests/site/pyodide_reader.js``). One Node process starts Python once and reads every released
config of the corpus (``../shared/real_configs``) and the bad files of
``tests/site/read_config_cases.py``; each answer, the ``--json`` output, the text and a refusal's
message, must equal CPython's character for character, as must the exit status.

Needs ``node`` and the vendored Pyodide (``scripts/vendor_pyodide.sh``, run by make's setup).
Without them the tests are skipped, except when ``CI`` is set: there they fail, so CI cannot
pass without running them. Without the corpus, the corpus test is skipped and the rest run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import read_config_cases as cases

ROOT = Path(__file__).resolve().parents[2]
PYODIDE = ROOT / "docs" / "vendor" / "pyodide"
DRIVER = ROOT / "tests" / "site" / "pyodide_reader.js"


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{message}; the Pyodide tests cannot be skipped in CI", pytrace=False)
    pytest.skip(message)


def _hook():
    spec = importlib.util.spec_from_file_location(
        "hooks_read_config", ROOT / "hooks" / "read_config.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def case_files(tmp_path_factory) -> dict[str, Path]:
    """The cases of read_config_cases.py, written once: name -> path."""
    return cases.write_cases(tmp_path_factory.mktemp("read_config_cases"))


@pytest.fixture(scope="module")
def answers(case_files, tmp_path_factory) -> dict:
    """File name -> Pyodide's answer, for every case and every corpus file, from one Node run."""
    node = shutil.which("node")
    if node is None:
        _missing("node is not installed (apt-get install nodejs)")
    if not (PYODIDE / "pyodide.mjs").is_file():
        _missing(f"Pyodide is not vendored in {PYODIDE} (run scripts/vendor_pyodide.sh)")
    folder = tmp_path_factory.mktemp("read_config")
    zip_path = folder / "posenc_ref_reader.zip"
    zip_path.write_bytes(_hook().reader_zip(ROOT / "posenc_ref"))
    files = [*case_files.values(), *cases.corpus_files()]
    listed = folder / "cases.json"
    listed.write_text(json.dumps([{"path": str(p)} for p in files]))
    out = folder / "answers.json"
    run = subprocess.run(
        [node, str(DRIVER), str(PYODIDE), str(zip_path), str(listed), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, f"node failed:\n{run.stderr[-4000:]}"
    found = json.loads(out.read_text())
    broken = [r for r in found["results"] if "failed" in r]
    assert broken == [], f"Pyodide failed on {broken[0]['path']}:\n{broken[0]['failed'][-3000:]}"
    return {Path(r["path"]).name: r for r in found["results"]} | {"(started)": found["started"]}


def test_reader_starts_without_tensor_libraries(answers):
    """Python started, with posenc_ref's own version: the reader imports no torch, no NumPy."""
    from posenc_ref import __version__

    assert answers["(started)"]["posenc"] == __version__
    assert answers["(started)"]["python"].startswith("3.")


@pytest.mark.parametrize("name", [*cases.GOOD, *cases.REFUSED_FILES])
def test_a_config_is_read_or_refused_as_cpython_does(answers, case_files, name):
    """A config read and one refused by the RoPE reader: the same output, status and words."""
    ours = cases.cpython_answer(case_files[name])
    assert ours["json"]["status"] == (0 if name in cases.GOOD else 2)
    assert cases.differences(name, answers[name], ours) == []


@pytest.mark.parametrize("name", cases.BAD_FILES)
def test_a_bad_file_gets_the_command_lines_message(answers, case_files, name):
    """Not JSON, a list, 50 MB, past the size limit, 100,000 deep: CPython's refusal, verbatim."""
    ours = cases.cpython_answer(case_files[name])
    assert ours["json"]["status"] == 2 and ours["json"]["stderr"].startswith("error: ")
    assert cases.differences(name, answers[name], ours) == []


def test_every_released_config_reads_as_cpython_reads_it(answers):
    """The whole corpus, each file's JSON, text or refusal equal to CPython's."""
    files = cases.corpus_files()
    if not files:
        pytest.skip(cases.CORPUS_ABSENT)
    problems = []
    for path in files:
        problems += cases.differences(path.name, answers[path.name], cases.cpython_answer(path))
    assert problems == [], f"{len(problems)} differences:\n" + "\n".join(problems[:20])


# --- the reader's files in the site (hooks/read_config.py) -----------------------------------


def test_the_zip_is_reproducible_and_holds_the_package_data():
    """The same bytes each build; the JSON the reader opens with importlib.resources; no kit."""
    import io
    import re
    import zipfile

    hook = _hook()
    first = hook.reader_zip(ROOT / "posenc_ref")
    assert first == hook.reader_zip(ROOT / "posenc_ref")
    names = set(zipfile.ZipFile(io.BytesIO(first)).namelist())
    opened = set()  # every resources.files(...).joinpath("x.json") in the package's source
    for path in (ROOT / "posenc_ref").rglob("*.py"):
        for name in re.findall(r'joinpath\("([^"]+\.json)"\)', path.read_text(encoding="utf-8")):
            opened |= {n for n in names if n.endswith("/" + name)} or {f"(missing) {name}"}
    assert opened and all(not n.startswith("(missing)") for n in opened), opened
    assert "posenc_ref/__main__.py" in names
    assert not any(n.startswith(("posenc_ref/plots/", "posenc_ref/testing/")) for n in names)


def test_the_build_stops_without_pyodide(tmp_path):
    """A site without the vendored interpreter is not built: the error names the script."""
    from mkdocs.exceptions import PluginError

    class Config:
        docs_dir = str(tmp_path)

    with pytest.raises(PluginError, match=r"run scripts/vendor_pyodide\.sh"):
        _hook().on_config(Config())

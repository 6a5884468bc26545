"""The package as a user meets it: one version, a license, and a declared range that is tested.

``pyproject.toml`` promises Python, torch and numpy versions; ``.github/workflows/tests.yml``
is where they are tested. These tests tie the two together, so that widening the promise
without testing it (or dropping a tested version without narrowing the promise) fails.
"""

import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import posenc_ref

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
WORKFLOWS = ROOT / ".github" / "workflows"


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _floor(requirement_name: str) -> str:
    """The ``>=`` bound of a dependency in pyproject.toml (``torch>=2.3,<3`` -> ``2.3``)."""
    for requirement in PROJECT["dependencies"]:
        found = re.fullmatch(rf"{requirement_name}\s*>=\s*([\d.]+)(,.*)?", requirement)
        if found:
            return found.group(1)
    raise AssertionError(f"{requirement_name} has no >= bound in pyproject.toml")


def _tests_workflow() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((WORKFLOWS / "tests.yml").read_text(encoding="utf-8"))


# --- the version -----------------------------------------------------------------------------


def test_version_is_single_sourced():
    """pyproject.toml has no version of its own: setuptools reads posenc_ref.__version__."""
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "posenc_ref.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", posenc_ref.__version__)


def test_installed_metadata_matches_version():
    """The installed distribution carries the version read from the package."""
    try:
        installed = importlib.metadata.version("posenc-ref")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("posenc-ref is not installed (tests run from a source tree)")
    assert installed == posenc_ref.__version__, "stale install: run `make` (or pip install -e .)"


def test_citation_and_changelog_repeat_the_version():
    """CITATION.cff's version and the changelog's latest release equal __version__."""
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^cff-version: 1\.2\.0$", citation, re.M)
    cited = re.search(r"^version: ['\"]?([\w.]+)['\"]?$", citation, re.M)
    assert cited and cited.group(1) == posenc_ref.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert releases and releases[0] == posenc_ref.__version__
    assert re.search(r"^## \[Unreleased\]$", changelog, re.M)


# --- the license -----------------------------------------------------------------------------


def test_license_is_mit_everywhere():
    """PEP 639 expression, the LICENSE file, and the citation all say MIT."""
    assert PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    assert not any("License ::" in c for c in PROJECT.get("classifiers", [])), (
        "PEP 639: the license expression replaces license classifiers"
    )
    assert re.search(r"^license: MIT$", (ROOT / "CITATION.cff").read_text("utf-8"), re.M)
    # setuptools reads a license expression from version 77 on.
    build = PYPROJECT["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(7[7-9]|[89]\d)(\.\d+)*", r) for r in build), build


# --- the declared range is the tested range ----------------------------------------------


def test_python_range_is_tested():
    """The suite runs on the lowest and the highest Python the package declares."""
    lowest = re.fullmatch(r">=\s*(3\.\d+)", PROJECT["requires-python"]).group(1)
    declared = sorted(
        (
            c.rsplit(" ", 1)[1]
            for c in PROJECT["classifiers"]
            if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
        ),
        key=_version_tuple,
    )
    assert declared[0] == lowest, "the classifiers and requires-python disagree"
    tested = _tests_workflow()["jobs"]["suite"]["strategy"]["matrix"]["python"]
    assert sorted(tested, key=_version_tuple) == [declared[0], declared[-1]]


def test_torch_and_numpy_floors_are_tested():
    """The oldest-versions job installs exactly the floors of pyproject.toml's dependencies."""
    job = _tests_workflow()["jobs"]["oldest"]
    script = "\n".join(step.get("run", "") for step in job["steps"])
    for name in ("torch", "numpy"):
        installed = re.search(rf"\b{name}==([\d.]+)", script)
        assert installed, f"the oldest job does not pin {name}"
        floor = _version_tuple(_floor(name))
        # 2.3 is met by 2.3.1 (the oldest 2.3 on PyTorch's CPU index): same release series.
        assert _version_tuple(installed.group(1))[: len(floor)] == floor, (name, installed.group(1))
    python = next(
        s["with"]["python-version"] for s in job["steps"] if "setup-python" in s.get("uses", "")
    )
    assert f">={python}" == PROJECT["requires-python"].replace(" ", "")


def test_workflows_pass_actionlint():
    """Every workflow passes actionlint (`make lint` runs it too); a broken one fails here."""
    # The venv's bin/ first: `python -m pytest` may run without the venv on PATH.
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    if actionlint is None:
        pytest.skip("actionlint is not installed (it comes with the test extra)")
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert files, "no workflow files found"
    done = subprocess.run(
        [actionlint, "-no-color", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr

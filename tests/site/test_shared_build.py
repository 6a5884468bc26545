"""make test's site build is reused only while it is the build of the working tree as it is.

``tests/site/shared_build.py`` serves ``.cache/site-test`` instead of building when the digest
recorded with it equals :func:`inputs_digest` now: these tests check that the digest follows
every file git would commit and nothing else, and that a build of other inputs is not served.
"""

import json
import subprocess
import sys

import pytest

from tests.site import shared_build


@pytest.fixture
def checkout(tmp_path):
    """A small git checkout: one tracked file, and an ignored folder."""

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text(".cache/\n")
    (tmp_path / "page.md").write_text("# A page\n")
    git("add", ".gitignore", "page.md")
    return tmp_path


def test_the_digest_follows_every_file_git_would_commit(checkout):
    first = shared_build.inputs_digest(checkout)
    assert first is not None and shared_build.inputs_digest(checkout) == first
    (checkout / "page.md").write_text("# A page, edited\n")
    edited = shared_build.inputs_digest(checkout)
    assert edited != first
    (checkout / "new.py").write_text("x = 1\n")  # untracked but not ignored: the build reads it
    added = shared_build.inputs_digest(checkout)
    assert added != edited
    (checkout / ".cache").mkdir()
    (checkout / ".cache" / "build.json").write_text("{}")  # ignored: the build's own output
    assert shared_build.inputs_digest(checkout) == added
    (checkout / "new.py").unlink()
    assert shared_build.inputs_digest(checkout) == edited


def test_the_digest_is_the_environments_not_the_import_paths(checkout, tmp_path_factory):
    """Under pytest and ``python -m`` sys.path differs: the digest must not depend on it."""
    before = shared_build.inputs_digest(checkout)
    elsewhere = tmp_path_factory.mktemp("path")
    (elsewhere / "stray-1.0.dist-info").mkdir()
    (elsewhere / "stray-1.0.dist-info" / "METADATA").write_text("Name: stray\nVersion: 1.0\n")
    sys.path.insert(0, str(elsewhere))
    try:
        assert shared_build.inputs_digest(checkout) == before
    finally:
        sys.path.remove(str(elsewhere))


def test_no_digest_outside_a_checkout(tmp_path):
    assert shared_build.inputs_digest(tmp_path) is None


def test_only_a_current_build_is_served(checkout, tmp_path_factory):
    folder = tmp_path_factory.mktemp("prebuilt")
    assert shared_build.prebuilt_url(folder, checkout) is None  # nothing built there
    record = {"returncode": 0, "log": "", "url": "http://127.0.0.1:8123/"}
    for inputs, served in [(None, None), ("0" * 64, None)]:
        (folder / "build.json").write_text(json.dumps({**record, "inputs": inputs}))
        assert shared_build.prebuilt_url(folder, checkout) == served
    current = shared_build.inputs_digest(checkout)
    (folder / "build.json").write_text(json.dumps({**record, "inputs": current}))
    assert shared_build.prebuilt_url(folder, checkout) == record["url"]
    (checkout / "page.md").write_text("# Edited after the build\n")
    assert shared_build.prebuilt_url(folder, checkout) is None


def test_make_builds_again_only_what_failed_or_changed(monkeypatch, tmp_path):
    """``build_ahead`` keeps a current build that passed, and builds a failed or stale one again."""
    prebuilt = tmp_path / ".cache" / "site-test"
    monkeypatch.setattr(shared_build, "ROOT", tmp_path)
    monkeypatch.setattr(shared_build, "PREBUILT", prebuilt)
    digest = {"now": "a" * 64}
    monkeypatch.setattr(shared_build, "inputs_digest", lambda root=None: digest["now"])
    outcomes = iter([1, 0, 0])  # the first build fails, the others pass
    builds = []

    def fake_build(share, inputs):
        builds.append(inputs)
        record = {"returncode": next(outcomes), "log": "", "seconds": 1.0, "url": share.url}
        share.record.write_text(json.dumps({**record, "inputs": inputs}))

    monkeypatch.setattr(shared_build, "_build", fake_build)
    assert "FAILED" in shared_build.build_ahead()
    assert "built" in shared_build.build_ahead()  # the failure is not kept as current
    assert "is current" in shared_build.build_ahead()
    digest["now"] = "b" * 64
    assert "built" in shared_build.build_ahead()
    assert builds == ["a" * 64, "a" * 64, "b" * 64]

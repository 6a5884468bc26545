"""The README's usage example runs and prints what it shows; its module map is current."""

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_usage_example_output():
    """Every ``pycon`` block of the README runs, and prints exactly what the README shows."""
    blocks = re.findall(r"```pycon\n(.*?)```", README, flags=re.S)
    assert blocks, "README.md has no pycon example"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for number, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"README.md[{number}]", "README.md", 0)
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0


def test_readme_module_map_is_current():
    """The module map (sizes included) equals what scripts/module_map.py measures now."""
    module_map = pytest.importorskip("scripts.module_map")
    found = re.search(r"<!-- module-map[^>]*-->\n(.*?)\n<!-- /module-map -->", README, re.S)
    assert found, "README.md lost its module-map markers"
    assert found.group(1).strip() == module_map.module_map(), (
        "README module map is stale: run `python scripts/module_map.py --write`"
    )

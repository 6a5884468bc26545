"""Every row of the kit's bug table names its own example, and the check page lists every row.

A row of ``posenc_ref.testing._bugs.BUG_MODELS`` is a kind of mistake, its models and an example:
a wrong function written the way the mistake is made, with its reference. The check must name
that mistake, and nothing else but the mistakes its example says give the same output. Adding a
bug is adding a row; this test then runs its example.
"""

import re
from pathlib import Path

import pytest

from posenc_ref.testing import assert_rope_equal
from posenc_ref.testing._bugs import BUG_MODELS, GROUPS, bug_list

ROOT = Path(__file__).resolve().parents[1]


def named(message: str) -> list[str]:
    """Titles of the causes a failure message names as reproducing the output."""
    if "Diagnosis (tested" not in message:
        return []
    block = message.split("Diagnosis (tested", 1)[1].split("Tolerance per coordinate", 1)[0]
    return re.findall(r"^    - ([^:]+):", block, flags=re.M)


@pytest.mark.parametrize("key", list(BUG_MODELS))
def test_each_row_names_its_example(key):
    example = BUG_MODELS[key].example()
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(example.fn, example.reference, **example.options)
    message = str(info.value)
    titles = named(message)
    assert example.names in titles, message
    assert set(titles) <= {example.names, *example.also}, message


def test_every_row_has_a_kind_the_page_lists():
    assert {row.group for row in BUG_MODELS.values()} <= set(GROUPS)
    listed = bug_list()
    for row in BUG_MODELS.values():
        assert row.title in listed


def test_the_check_page_prints_the_list_from_the_table():
    """The page's list of bug models is the table's, printed when the site is built."""
    page = (ROOT / "docs" / "check.md").read_text()
    assert "print(bug_list())" in page
    for row in BUG_MODELS.values():  # not written out by hand anywhere on the page
        assert f"- **{row.title}" not in page


@pytest.mark.parametrize(
    "key, observed",
    [
        ("first_head", "Observed: only some heads are wrong (q head 1 wrong, q head 0 right;"),
        ("decode", "Observed: only the decode calls are wrong; the chunk, prefill calls agree"),
        ("cos_sin_swapped", "Observed: already wrong at position 0, where every angle is 0"),
        ("llama3_swapped", "Observed: only pairs 29..34 of 0..63 are wrong, one band"),
    ],
)
def test_the_report_says_what_it_observed(key, observed):
    """Facts a reader can act on, measured before any model is run."""
    example = BUG_MODELS[key].example()
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(example.fn, example.reference, **example.options)
    assert observed in str(info.value)

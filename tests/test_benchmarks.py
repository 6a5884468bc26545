"""Smoke test of the benchmarks: a tiny ``--quick`` run and the results file's schema.

No timing is asserted (tests never assert times); this checks that every family runs, that the
JSON has the fields the site's benchmark page reads, and that ``import posenc_ref`` leaves
matplotlib alone. The committed ``benchmarks/results.json`` is checked against the same schema.
"""

import json
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
TIMING_KEYS = {"median_s", "min_s", "max_s", "repeats", "samples_s"}
RATIO_KEYS = {"median", "min", "max"}


def check_schema(results: dict, families: set[str]) -> None:
    for key in ("schema_version", "command", "machine", "gpu", "versions", "settings", "targets"):
        assert key in results, key
    assert results["command"].startswith("python -m benchmarks.run")
    assert {"cpu", "logical_cores", "date_utc", "load_average_1_5_15"} <= set(results["machine"])
    assert results["versions"]["torch"]
    assert results["settings"]["torch_threads"] >= 1
    assert set(results["benchmarks"]) == families
    for target in results["targets"]:
        assert {"name", "measured", "limit", "met", "family"} <= set(target)
    if "sinusoidal" in families:
        for case in results["benchmarks"]["sinusoidal"]["cases"]:
            assert set(case["variants"]) == {
                "sinusoidal_loop",
                "sinusoidal",
                "float32_formula",
                "numpy_float64",
            }
            for timing in case["variants"].values():
                assert TIMING_KEYS <= set(timing)
                assert timing["min_s"] <= timing["median_s"] <= timing["max_s"]
            for ratio in case["ratios"].values():
                assert set(ratio) == RATIO_KEYS
    if "accuracy" in families:
        accuracy = results["benchmarks"]["accuracy"]
        octaves = len(accuracy["octaves"])
        assert {"sinusoidal", "float32_formula"} <= set(accuracy["max_abs_error"])
        for errors in accuracy["max_abs_error"].values():
            assert len(errors) == octaves
        assert accuracy["truth_error_max"] < 1e-8
    if "rope" in families:
        rope = results["benchmarks"]["rope"]
        assert rope["cases"]
        for case in rope["cases"]:
            assert {"copy_floor", "clone_floor", "meta_complex"} <= set(case["variants"])
            assert case["over_floor"]["copy_floor"]["median"] == 1.0
            # each of ours is divided by its own floor: new tensors by the clone floor, ...
            assert {"apply_rope_interleaved", "apply_rope_half"} <= set(case["over_clone"])
            assert set(case["over_compiled_clone"]) <= {
                f"compiled_apply_rope_{layout}{diagnostic}"
                for layout in ("interleaved", "half")
                for diagnostic in ("", "_one_row")
            }
            for name, rel_diff in case["check_rel_diff"].items():
                assert rel_diff < 0.05, name  # every variant computes the same rotation
        for target in rope["targets"]:
            assert {"kind", "device", "dtype", "shape", "layout"} <= set(target)
    if "verdicts" in families:
        for case in results["benchmarks"]["verdicts"]["cases"]:
            assert {"name", "expect", "verdict", "cpu_s", "wall_s"} <= set(case)
    if "import" in families:
        variants = set(results["benchmarks"]["import"]["variants"])
        assert variants == {"torch", "posenc_ref", "posenc_ref_after_torch"}


def test_quick_run_writes_the_schema(tmp_path):
    from benchmarks.run import main

    out = tmp_path / "results.json"
    # In this process (no second torch import), and at the current thread count so that the
    # run changes nothing for the tests that follow.
    threads = str(torch.get_num_threads())
    families = ["sinusoidal", "accuracy", "rope"]  # import cost: see the next test
    main(["--quick", "--out", str(out), "--threads", threads, "--only", *families])
    check_schema(json.loads(out.read_text()), set(families))


def test_merge_replaces_only_the_families_run(tmp_path):
    """``--merge`` rewrites the named family with its own run record; the others stay."""
    from benchmarks.run import _merge

    out = tmp_path / "results.json"
    kept = {"cases": [1], "targets": [{"name": "kept", "met": True}]}
    out.write_text(json.dumps({"benchmarks": {"rope": kept, "verdicts": {"cases": []}}}))
    new = {"cases": [2], "targets": [{"name": "new", "met": True}]}
    run = {"command": "c", "git": {"commit": "abc"}, "machine": {"cpu": "x"}, "elapsed_s": 1.0,
           "benchmarks": {"verdicts": new}}  # fmt: skip
    merged = _merge(run, ["verdicts"], out)
    assert json.loads(out.read_text()) == merged
    assert merged["benchmarks"]["rope"] == kept
    assert merged["benchmarks"]["verdicts"]["cases"] == [2]
    assert merged["benchmarks"]["verdicts"]["run"]["git"] == {"commit": "abc"}
    assert [t["name"] for t in merged["targets"]] == ["kept", "new"]
    with pytest.raises(SystemExit, match="--merge needs --only"):
        from benchmarks.run import main

        main(["--merge"])


def test_import_posenc_ref_does_not_import_matplotlib(fresh_imports):
    """No heavy optional module after ``import posenc_ref`` in a fresh interpreter.

    The interpreter is shared with other tests (tests/fresh_interpreter.py); the list is the
    benchmark's own, and the benchmark's probe, which reports that list, is checked to see a
    heavy module when one is imported.
    """
    from benchmarks.import_cost import HEAVY_MODULES, measure_import
    from tests.fresh_interpreter import modules_after

    loaded = modules_after(fresh_imports, "import posenc_ref")
    assert "matplotlib" not in loaded
    assert [m for m in HEAVY_MODULES if m in loaded] == []
    probe = measure_import("import mpmath", setup="import json")
    assert probe["heavy"] == ["mpmath"] and probe["seconds"] > 0


def test_committed_results_follow_the_schema():
    path = ROOT / "benchmarks" / "results.json"
    if not path.exists():
        pytest.skip("no committed results yet")
    results = json.loads(path.read_text())
    assert results["quick"] is False
    # the kit's verdict times joined the families later: a file from before has none
    verdicts = {"verdicts"} & set(results["benchmarks"])
    check_schema(results, {"sinusoidal", "accuracy", "rope", "import"} | verdicts)

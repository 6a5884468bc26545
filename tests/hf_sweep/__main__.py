"""``python -m tests.hf_sweep``: run the sweep, write or check its files, print the table.

python -m tests.hf_sweep --report            the committed results as a table
python -m tests.hf_sweep --write             rerun every family, rewrite both files
python -m tests.hf_sweep --family llama ...  rerun some families, print their rows
"""

from __future__ import annotations

import argparse
import sys
import time

from . import results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hf_sweep")
    parser.add_argument("--write", action="store_true", help="rerun and rewrite the data files")
    parser.add_argument("--report", action="store_true", help="print the committed table")
    parser.add_argument("--family", nargs="*", help="rerun only these families")
    parser.add_argument("--truth", action="store_true", help="with --family: print the truth")
    args = parser.parse_args(argv)
    if args.family:
        started = time.perf_counter()
        sweep = results.run(args.family)
        for name in args.family:
            if args.truth:
                print(results.dumps(sweep.truth["families"][name]))
            print(results.dumps(sweep.rows[name]))
        print(f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
        return 0
    if args.write:
        started = time.perf_counter()
        sweep = results.run()
        results.write(sweep)
        print(f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    if args.report or args.write:
        print(results.report(results.load_results()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m tests.corpus``: check the released configs, write or print the status table.

python -m tests.corpus --report           the committed table
python -m tests.corpus --write            recheck every file, rewrite the table
python -m tests.corpus --file NAME ...    recheck the files whose name contains NAME, print them
"""

from __future__ import annotations

import argparse
import json
import sys

from . import build, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.corpus")
    parser.add_argument("--write", action="store_true", help="recheck, rewrite the table")
    parser.add_argument("--report", action="store_true", help="print the committed table")
    parser.add_argument("--file", nargs="*", help="recheck only files whose name contains these")
    args = parser.parse_args(argv)
    if not build.files():
        print(f"no corpus at {build.FOLDER}", file=sys.stderr)
        return 2
    if args.file:
        records, seconds = status.timed_run(args.file)
        for record in records.values():
            print(json.dumps(record, indent=1, ensure_ascii=False))
        print(f"{seconds:.1f} s", file=sys.stderr)
        return 0
    if args.write:
        records, seconds = status.timed_run()
        status.write(records)
        print(f"{seconds:.1f} s", file=sys.stderr)
    if args.report or args.write:
        print(status.report(status.load()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Merge new rows (JSONL on stdin, e.g. from ``swe_qa_rows.py``) into the set, tagging them ``"TAG": true``.

A row whose ``id`` is not in the set is appended with the tag. A row whose ``id`` is already there
must be the same row (same ``repo``, ``commit``, ``question`` and ``needed_files``): the set's row
gets the tag and keeps every other field; a different row with a known id is an error (exit 1,
nothing written). Rows are never edited otherwise, and the set's order is kept (new rows at the end,
in input order). Prints how many rows were tagged and added.

Usage::

    python bench/multifile/swe_qa_rows.py ... | python bench/multifile/merge_rows.py --tag how [--set FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SET = Path(__file__).resolve().parent / "set.jsonl"
SAME = ("repo", "commit", "question", "needed_files")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SET)
    parser.add_argument("--tag", required=True, help="the subset flag set to true on every merged row")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_id = {row["id"]: row for row in rows}
    tagged = added = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        new = json.loads(line)
        old = by_id.get(new["id"])
        if old is None:
            new[args.tag] = True
            rows.append(new)
            by_id[new["id"]] = new
            added += 1
        elif all(old[k] == new[k] for k in SAME):
            tagged += not old.get(args.tag)
            old[args.tag] = True
        else:
            print(f"merge_rows: {new['id']} is in {args.set} with another question or files", file=sys.stderr)
            return 1
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    args.set.write_text(text, encoding="utf-8")
    print(f"{args.set.name}: {tagged} rows tagged {args.tag}, {added} added ({len(rows)} rows)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The ceiling of the multi-file set: what a perfect ranking of codeask's candidate pool would give.

Reads the per-question records of ``bench/multifile_stages.py --out FILE`` (every step's files of
the ``ask --no-llm --max-files 10`` pipeline, on the kept indexes). A question's *pool* is every file
the pipeline ever held: the files ``retrieve`` found (fused keyword and vector candidates) and the
files the graph steps linked (``neighbours``: one hop from the first 5 files' best chunks and the
whole of the first 3 files; ``expand``'s additions). A perfect ranking of the pool puts its needed
files first, so per question:

* ``all@10`` ceiling: 1 when every needed file is in the pool (and there are at most 10), else 0;
* ``recall@10`` ceiling: ``min(10, needed files in the pool) / needed files``;
* ``retrieved`` / ``graph``: the same with the pool cut to ``retrieve``'s files alone, and the share
  of needed files only the graph steps brought in;
* ``pool``: files in the pool (a perfect ranking of a larger pool is a harder ranking);
* ``missing``: needed files in no pool at all (no search or link reaches them: lost before ranking).

Printed per language, for all rows and the how rows (repository-QA, 3+ needed files), beside the
answer's MRR of the first needed file, all@10 and recall@10 (the last step's files: what
``ask --no-llm --max-files 10`` returns, as bench/multifile.py scores it). Written to ``--json`` if given.

Usage::

    python bench/multifile_ceiling.py RECORDS.json [--json bench/results/multifile-ceiling.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

FILES = 10
COLUMNS = (
    "mrr",
    "all@10",
    "all@10 ceiling",
    "retrieved ceiling",
    "recall@10",
    "recall ceiling",
    "graph share",
    "pool",
    "missing",
)


def row_ceiling(record: dict) -> dict[str, float]:
    """One question's scores (module docstring) from its ``steps``."""
    need = set(record["needed_files"])
    steps = record["steps"]
    retrieved = set(steps[0]["files"])
    pool = {f for s in steps for f in s["files"]}
    top = set(steps[-1]["files"][:FILES])
    fits = len(need) <= FILES
    rr = next((1 / (i + 1) for i, f in enumerate(steps[-1]["files"]) if f in need), 0.0)
    return {
        "mrr": rr,
        "all@10": float(need <= top),
        "all@10 ceiling": float(fits and need <= pool),
        "retrieved ceiling": float(fits and need <= retrieved),
        "recall@10": len(need & top) / len(need),
        "recall ceiling": min(FILES, len(need & pool)) / len(need),
        "graph share": len((need & pool) - retrieved) / len(need),
        "pool": float(len(pool)),
        "missing": float(len(need - pool)),
        "needed": float(len(need)),
    }


def table(records: list[dict]) -> dict[str, dict[str, float]]:
    """``{language: {column: mean}}`` (``missing``: a count, summed) and ``ALL``."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for r in records:
        scores = row_ceiling(r)
        groups[r["language"]].append(scores)
        groups["ALL"].append(scores)
    out = {}
    for lang, rows in sorted(groups.items(), key=lambda kv: (kv[0] == "ALL", kv[0])):
        means = {c: round(sum(r[c] for r in rows) / len(rows), 3) for c in COLUMNS if c != "missing"}
        means["missing"] = sum(r["missing"] for r in rows)
        means["needed"] = sum(r["needed"] for r in rows)
        means["n"] = len(rows)
        out[lang] = means
    return out


def show(title: str, data: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'language':11s} {'n':>4s} " + " ".join(f"{c:>17s}" for c in COLUMNS))
    for lang, m in data.items():
        cells = " ".join(
            f"{int(m[c]):>10d} of {int(m['needed']):>4d}" if c == "missing" else f"{m[c]:17.3f}" for c in COLUMNS
        )
        print(f"{lang:11s} {int(m['n']):4d} {cells}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("records", type=Path, help="bench/multifile_stages.py --out FILE")
    parser.add_argument("--json", type=Path, help="write the tables here")
    args = parser.parse_args()
    records = json.loads(args.records.read_text(encoding="utf-8"))
    if not records:
        print(f"multifile_ceiling: no record in {args.records}", file=sys.stderr)
        return 2
    data = {"all": table(records), "how": table([r for r in records if r.get("how")])}
    show("ALL ROWS", data["all"])
    show("HOW ROWS (repository-QA, 3+ needed files)", data["how"])
    if args.json:
        args.json.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

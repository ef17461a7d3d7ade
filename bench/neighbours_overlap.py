"""How the ``neighbours`` step's graph gain should follow the question's words: its top 10
recomputed from ``bench/multifile_stages.py`` records for each :data:`POWERS` value of
:data:`codeask.query.steps.neighbours.OVERLAP_POWER`, and the value chosen leave-one-repository-out.

The records must be taken with ``OVERLAP_POWER = 0`` (each linked file's recorded ``gain`` is then
the unscaled one). Per question the step's order is rebuilt as the step builds it: the first
:data:`~codeask.query.steps.neighbours.SEEDS` retrieved files keep their places, every other
retrieved or linked file is ranked by its retrieval score over the best file's plus its gain times
``(overlap / highest overlap of the question's linked files) ** power``; at most ten files not
retrieved enter (``retrieval.expand_files``). At power 0 this gives the recorded order back (checked).

Usage::

    python bench/neighbours_overlap.py RECORDS.json [...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

#: Powers tried; the first is the records' own (no scaling).
POWERS = (0.0, 0.5, 1.0, 1.5, 2.0)
SEEDS, NEW, FILES = 3, 10, 10


def order(record: dict, power: float) -> list[str]:
    """The ``neighbours`` step's file order of one question at ``power`` (module docstring)."""
    steps = {s["step"]: s for s in record["steps"]}
    files, scores = steps["retrieve"]["files"], steps["retrieve"]["scores"]
    boosted = {b["path"]: b for b in steps["neighbours"]["data"].get("boosted", [])}
    if not boosted:
        return steps["neighbours"]["files"]
    top = max(scores) or 1.0
    most = max(b["overlap"] for b in boosted.values())
    gain = {p: b["gain"] * ((b["overlap"] / most) ** power if most > 0 else 1.0) for p, b in boosted.items()}
    score = {f: s / top for f, s in zip(files, scores)}
    for path, g in gain.items():
        score[path] = score.get(path, 0.0) + g
    new = sorted((p for p in boosted if p not in files and gain[p] > 0), key=lambda p: -score[p])[:NEW]
    return files[:SEEDS] + sorted(files[SEEDS:] + new, key=lambda p: -score[p])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    records = [r for path in args.records for r in json.loads(path.read_text(encoding="utf-8"))]
    same = sum(order(r, 0.0)[:FILES] == r["steps"][-1]["files"][:FILES] for r in records)
    print(f"power 0 gives the recorded top {FILES} back in {same} of {len(records)} questions")
    won: dict[float, dict[str, float]] = {p: defaultdict(float) for p in POWERS}
    how: dict[float, float] = defaultdict(float)
    mrr: dict[float, float] = defaultdict(float)
    for r in records:
        need = set(r["needed_files"])
        for p in POWERS:
            top = order(r, p)[:FILES]
            ok = float(need <= set(top))
            won[p][r["repo"]] += ok
            how[p] += ok if r.get("how") else 0.0
            mrr[p] += next((1 / (i + 1) for i, f in enumerate(top) if f in need), 0.0)
    repos = sorted({r["repo"] for r in records})
    n, n_how = len(records), sum(1 for r in records if r.get("how"))
    result: dict[str, object] = {"rows": n, "how_rows": n_how, "per_power": {}, "loo": {}}
    for p in POWERS:
        total = sum(won[p].values())
        result["per_power"][str(p)] = {  # type: ignore[index]
            "all@10": round(total / n, 3),
            "how_all@10": round(how[p] / n_how, 3) if n_how else None,
            "mrr": round(mrr[p] / n, 3),
            "per_repo": {repo: won[p][repo] for repo in repos},
        }
        print(f"power {p}: all@10 {total / n:.3f} ({total:.0f}/{n}), how {how[p]:.0f}/{n_how}, MRR {mrr[p] / n:.3f}")
    held = 0.0
    for repo in repos:  # the power best on the other repositories' rows (ties: the lower)
        best = max(POWERS, key=lambda p: (sum(won[p][x] for x in repos if x != repo), -p))
        result["loo"][repo] = best  # type: ignore[index]
        held += won[best][repo]
    result["loo_all@10"] = round(held / n, 3)
    print(f"leave-one-repository-out: all@10 {held / n:.3f} ({held:.0f}/{n}), chosen {result['loo']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

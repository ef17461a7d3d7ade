"""Multi-file retrieval on the development set bench/multifile/set.jsonl (issue 29), per language.

Each row is a question whose answer needs several files (``needed_files``) of one repository tree
(bench/multifile/README.md says how the rows were made and how to materialize the trees: the folder
``--trees`` holds one folder per repository, named ``owner+name``). For every repository the tree is
indexed whole with codeask (the real embedder, keyword and vector phases, in a temporary cache dir
with an empty user-config dir: never the user's cache or settings), then every question is asked:

* retrieval as ``codeask ask --no-llm --max-files 10`` gives it (``Workspace.ask(no_llm=True,
  max_files=10)``: the ranked distinct files of the answer's sources);
* the real ask pipeline with an LLM: the project's fake OpenAI-compatible server
  (``tests/fake_llm.py``) as the endpoint, ``llm.context_tokens`` = ``--context-tokens`` (default
  128000, codeask's default for a hosted model; the fake server is on localhost, which would
  otherwise get the 4096 of a local one), ``llm.num_subquestions = 0`` (the fake model's
  subquestions would be noise) and every other setting at its default; the files of the answer's
  ``documents`` (what ``--json`` shows as the documents the LLM saw) are the prompt's files;
* whole-file BM25 over every UTF-8 text file of the tree (bench/multifile_score.py), the baseline.

Reported per language and overall (means over questions, depth 10): ``mrr`` (1 / rank of the first
needed file), ``all@10`` (share of questions with every needed file in the top 10), ``recall@10``
(share of needed files in the top 10, per question), ``any@10``, ``noncode@10`` (share of the top 10
that is not source code, by extension: bench/multifile_score.py ``CODE_EXTENSIONS``), ``files``
(distinct files returned, at most 10), and ``prompt_recall`` (share of needed files among the
prompt's files) with ``prompt_files``. The same again for the rows tagged ``hard`` (4+ needed
files) and ``how`` (repository-QA questions, 3+ needed files; also per repository, ``repos``),
under those JSON keys. Also per repository: files, chunks, index and ask seconds.

Usage::

    python bench/multifile.py --trees DIR [--label before] [--only go] [--limit 5] [--set FILE] \
        [--hard | --how] [--keep-index DIR]

Writes ``bench/results/multifile-<label>.json`` (with every question's rankings) and prints a
table. To measure other code, point ``PYTHONPATH`` at that checkout's ``server`` folder. On 12-30
questions per language, differences under ~.1 are noise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # common, multifile_score
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.fake_llm

from tests.fake_llm import FakeLLMServer

from codeask.eval.metrics import distinct_files
from codeask.workspace import Workspace
from common import RESULTS, peak_rss_mb, write_result
from multifile_score import BM25, mean, score, text_files

SET = Path(__file__).resolve().parent / "multifile" / "set.jsonl"
METRICS = ("mrr", "all@10", "recall@10", "any@10", "noncode@10", "files")
KEYS = {
    "mrr": "rr",
    "all@10": "all",
    "recall@10": "recall",
    "any@10": "any",
    "noncode@10": "noncode",
    "files": "returned",
}


def load_rows(path: Path, only: str | None, limit: int | None, hard: bool = False, how: bool = False) -> list[dict]:
    """The set's rows, those of language ``only`` if given (only the hard ones with ``hard``, only the
    how subset's with ``how``), at most ``limit`` per language."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept: list[dict] = []
    per_language: dict[str, int] = defaultdict(int)
    for row in rows:
        if (only and row["language"] != only) or (hard and not row.get("hard")) or (how and not row.get("how")):
            continue
        if limit is not None and per_language[row["language"]] >= limit:
            continue
        per_language[row["language"]] += 1
        kept.append(row)
    return kept


def workspace(
    root: Path, tmp: Path, llm: FakeLLMServer, context_tokens: int, extra: dict[str, object] | None = None
) -> Workspace:
    """A Workspace on ``root`` whose cache and user config live in ``tmp``, whose LLM is ``llm``, with
    the settings flags ``extra`` (``--set``)."""
    env = dict(os.environ)
    env.update(
        CODEASK_CACHE_DIR=str(tmp / "cache"),
        CODEASK_CONFIG_DIR=str(tmp / "config"),
        OPENAI_BASE_URL=llm.openai_base_url,
        OPENAI_API_KEY="bench-key",
    )
    for name in ("CODEASK_LLM", "CODEASK_MODEL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        env.pop(name, None)
    (tmp / "config").mkdir(exist_ok=True)
    flags = {"llm.provider": "openai", "llm.context_tokens": context_tokens, "llm.num_subquestions": 0, **(extra or {})}
    return Workspace([root], env=env, flags=flags, background_indexing=False)


def ask_one(ws: Workspace, bm25: BM25, row: dict) -> dict:
    """Every ranking of one question and its scores."""
    answer = ws.ask(row["question"], max_files=10, no_llm=True)
    ranked = distinct_files(s.path for s in answer.sources)
    prompted = ws.ask(row["question"])
    prompt_files = distinct_files(d["path"] for d in prompted.documents)
    need = set(row["needed_files"])
    baseline = bm25.rank(row["question"])
    return {
        "id": row["id"],
        "repo": row["repo"],
        "language": row["language"],
        "hard": bool(row.get("hard")),
        "how": bool(row.get("how")),
        "needed_files": row["needed_files"],
        "codeask": ranked[:10],
        "bm25": baseline,
        "prompt_files": prompt_files,
        "prompt_error": prompted.error,
        "scores": score(ranked, need),
        "bm25_scores": score(baseline, need),
        "prompt_recall": len(need & set(prompt_files)) / len(need),
    }


def run_repo(
    root: Path,
    rows: list[dict],
    llm: FakeLLMServer,
    context_tokens: int,
    keep: Path | None = None,
    extra: dict[str, object] | None = None,
) -> tuple[list[dict], dict]:
    """Index ``root`` in a temp cache (or in ``keep/<tree name>``, kept for the next run: an unchanged
    tree is then only walked) and ask its ``rows``; returns (per-question results, timings)."""
    with tempfile.TemporaryDirectory(prefix="codeask-multifile-") as tmp:
        folder = Path(tmp) if keep is None else keep / root.name
        folder.mkdir(parents=True, exist_ok=True)
        ws = workspace(root, folder, llm, context_tokens, extra)
        t0 = time.monotonic()
        stats = ws.index()
        index_s = time.monotonic() - t0
        bm25 = BM25(text_files(root))
        t1 = time.monotonic()
        results = [ask_one(ws, bm25, row) for row in rows]
        ask_s = time.monotonic() - t1
    timing = {
        "files": stats.files_seen,
        "chunks": stats.chunks_total,
        "index_seconds": round(index_s, 1),
        "ask_seconds": round(ask_s, 1),
        "questions": len(rows),
    }
    return results, timing


def summary(results: list[dict]) -> dict:
    """Means of the codeask, BM25 and prompt scores over ``results``."""
    codeask = [r["scores"] for r in results]
    bm25 = [r["bm25_scores"] for r in results]
    return {
        "questions": len(results),
        "needed_per_question": round(sum(len(r["needed_files"]) for r in results) / max(1, len(results)), 2),
        "codeask": {m: mean(codeask, KEYS[m]) for m in METRICS},
        "bm25-file": {m: mean(bm25, KEYS[m]) for m in METRICS},
        "prompt_recall": mean([{"v": r["prompt_recall"]} for r in results], "v"),
        "prompt_files": mean([{"v": float(len(r["prompt_files"]))} for r in results], "v"),
    }


def codeask_commit() -> str:
    """The last git commit that changed the codeask package being measured (not the bench's own
    commits); ``"unknown"`` outside a git checkout."""
    folder = Path(sys.modules["codeask"].__file__ or ".").parent
    done = subprocess.run(
        ["git", "-C", str(folder), "log", "-1", "--format=%H", "--", "."], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def print_table(by_language: dict[str, dict], overall: dict, first: str = "language") -> None:
    width = max([11, *map(len, by_language)])
    head = f"{first:{width}} {'n':>3} {'ranking':9} " + " ".join(f"{m:>10}" for m in METRICS) + f" {'prompt':>7}"
    print(head)
    print("-" * len(head))
    for name, s in [*sorted(by_language.items()), ("ALL", overall)]:
        for variant in ("codeask", "bm25-file"):
            cells = " ".join(f"{s[variant][m]:10.3f}" for m in METRICS)
            prompt = f"{s['prompt_recall']:7.3f}" if variant == "codeask" else ""
            print(f"{name:{width}} {s['questions']:3d} {variant:9} {cells} {prompt}")


def report(label: str, results: list[dict], repos: dict[str, dict], *, complete: bool, flags: dict) -> dict:
    """Summarize ``results`` and write them to ``bench/results/multifile-<label>.json`` (after every
    repository, so a run stopped half-way keeps what it measured: ``complete`` says which)."""
    languages = sorted({r["language"] for r in results})
    hard = [r for r in results if r["hard"]]
    how = [r for r in results if r.get("how")]
    data = {
        "label": label,
        "complete": complete,
        "codeask_commit": codeask_commit(),
        "languages": {lang: summary([r for r in results if r["language"] == lang]) for lang in languages},
        "overall": summary(results),
        "hard": {
            "languages": {lang: summary([r for r in hard if r["language"] == lang]) for lang in languages},
            "overall": summary(hard),
        },
        "how": {
            "languages": {lang: summary([r for r in how if r["language"] == lang]) for lang in languages},
            "overall": summary(how),
            "repos": {
                repo: summary([r for r in how if r["repo"] == repo]) for repo in sorted({r["repo"] for r in how})
            },
        },
        "repos": repos,
        "flags": flags,
        "questions": results,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    write_result(f"multifile-{label}", data)
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", type=Path, required=True, help="folder of materialized trees (owner+name)")
    parser.add_argument("--label", default="run", help="results go to bench/results/multifile-<label>.json")
    parser.add_argument("--only", help="one language (go, typescript, rust, java, c, python)")
    parser.add_argument("--limit", type=int, help="at most N questions per language")
    parser.add_argument("--set", type=Path, default=SET, help="the question set (JSONL)")
    parser.add_argument("--hard", action="store_true", help="only the hard rows (4+ needed files)")
    parser.add_argument("--how", action="store_true", help="only the how subset (repository-QA, 3+ needed files)")
    parser.add_argument("--keep-index", type=Path, help="keep each tree's index in DIR/<tree> for later runs")
    parser.add_argument("--flag", action="append", default=[], help="a setting for the run: KEY=JSON (repeatable)")
    parser.add_argument("--context-tokens", type=int, default=128_000, help="llm.context_tokens for the prompt run")
    args = parser.parse_args()
    rows = load_rows(args.set, args.only, args.limit, args.hard, args.how)
    if not rows:
        print(f"multifile: no question in {args.set} for language {args.only!r}", file=sys.stderr)
        return 2
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo"]].append(row)
    missing = [r for r in by_repo if not (args.trees / r.replace("/", "+")).is_dir()]
    if missing:
        print(
            f"multifile: no tree for {', '.join(missing)} under {args.trees} (see bench/multifile/README.md)",
            file=sys.stderr,
        )
        return 2
    extra = {k: json.loads(v) for k, v in (f.split("=", 1) for f in args.flag)}
    llm = FakeLLMServer()
    results: list[dict] = []
    repos: dict[str, dict] = {}
    try:
        for repo, repo_rows in by_repo.items():
            out, timing = run_repo(
                args.trees / repo.replace("/", "+"), repo_rows, llm, args.context_tokens, args.keep_index, extra
            )
            results.extend(out)
            repos[repo] = timing
            print(f"{repo}: {timing}", flush=True)
            data = report(args.label, results, repos, complete=len(repos) == len(by_repo), flags=extra)
    finally:
        llm.close()
    print_table(data["languages"], data["overall"])
    if data["hard"]["overall"]["questions"]:
        print("\nHARD subset (rows tagged hard: 4+ needed files)")
        print_table({k: v for k, v in data["hard"]["languages"].items() if v["questions"]}, data["hard"]["overall"])
    if data["how"]["overall"]["questions"]:
        print("\nHOW subset (rows tagged how: repository-QA questions, 3+ needed files)")
        print_table({k: v for k, v in data["how"]["languages"].items() if v["questions"]}, data["how"]["overall"])
        print("\nHOW subset by repository")
        print_table(data["how"]["repos"], data["how"]["overall"], "repository")
    print(f"\nwritten to {RESULTS / f'multifile-{args.label}.json'}")
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()  # as the CLI and the server do
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())

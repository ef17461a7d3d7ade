"""Hover quality without an LLM: is the symbol under the cursor what gets explained, and is the
related code code (not tests and docs)?

Hovers on named methods of the requests 2.34.2 and flask 3.1.3 sdists, at their definition and at a
call site, as the language server does (``symbol_span`` + ``explain(no_llm=True)``; code from before
``symbol_span`` existed falls back to ``enclosing_chunk``, so the same script measures both). Per
hover: whether the explained span is that symbol's definition (its symbol ends in the name and no
other definition of the same class is in it), its lines, the related sources and how many of them
match ``retrieval.downweight_patterns`` (tests, docs, examples, configs), and the seconds it took.

    python bench/explain.py [--label LABEL]

Prints a table and writes ``bench/results/explain-<label>.json``. Indexes live in
``~/.cache/codeask-bench/explain-index`` (``CODEASK_CACHE_DIR`` overrides).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from common import fetch_sdist, write_result

#: (sdist, file, symbol name, text on the hovered line; the hover rests on the name in it).
HOVERS = [
    ("requests==2.34.2", "src/requests/sessions.py", "rebuild_proxies", "def rebuild_proxies("),
    ("requests==2.34.2", "src/requests/sessions.py", "rebuild_proxies", "self.rebuild_proxies("),
    ("requests==2.34.2", "src/requests/sessions.py", "rebuild_auth", "def rebuild_auth("),
    ("requests==2.34.2", "src/requests/sessions.py", "rebuild_method", "self.rebuild_method("),
    ("requests==2.34.2", "src/requests/sessions.py", "get_redirect_target", "def get_redirect_target("),
    ("requests==2.34.2", "src/requests/sessions.py", "merge_environment_settings", "def merge_environment_settings("),
    ("requests==2.34.2", "src/requests/sessions.py", "prepare_request", "self.prepare_request("),
    ("requests==2.34.2", "src/requests/adapters.py", "cert_verify", "def cert_verify("),
    ("requests==2.34.2", "src/requests/adapters.py", "build_response", "self.build_response("),
    ("requests==2.34.2", "src/requests/models.py", "prepare_auth", "def prepare_auth("),
    ("requests==2.34.2", "src/requests/utils.py", "should_bypass_proxies", "def should_bypass_proxies("),
    ("flask==3.1.3", "src/flask/app.py", "full_dispatch_request", "def full_dispatch_request("),
    ("flask==3.1.3", "src/flask/app.py", "make_response", "self.make_response("),
    ("flask==3.1.3", "src/flask/app.py", "handle_user_exception", "def handle_user_exception("),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="run", help="result file suffix: bench/results/explain-LABEL.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("CODEASK_CACHE_DIR", str(Path.home() / ".cache" / "codeask-bench" / "explain-index"))

    from codeask.index.chunking.languages import language_for
    from codeask.index.chunking.symbols import definitions
    from codeask.query import explain as ex
    from codeask.query.steps.retrieve import HybridRetrieve
    from codeask.workspace import Workspace

    workspaces: dict[str, Workspace] = {}
    rows = []
    for pin, rel, name, needle in HOVERS:
        if pin not in workspaces:
            workspaces[pin] = Workspace([fetch_sdist(pin)])
            workspaces[pin].index()
        ws = workspaces[pin]
        down = HybridRetrieve(list, ws.settings.retrieval).downweighted
        path = str(Path(next(iter(ws.indexes))) / rel)
        text = Path(path).read_text(encoding="utf-8")
        line = next(i for i, row in enumerate(text.splitlines(), 1) if needle in row)
        t0 = time.perf_counter()
        if hasattr(ex, "symbol_span"):
            span = ex.symbol_span(ws, path, line, name)
        else:  # before symbol_span: the chunk around the cursor
            span = ex.enclosing_chunk(ws, path, line)
        result = ex.explain(ws, span, brief=True, no_llm=True)
        seconds = time.perf_counter() - t0
        inner = [d for d in definitions(span.text, language_for(path)) if d.name != name and "." not in d.symbol]
        right = span.symbol.rsplit(".", 1)[-1] == name and span.text.lstrip().startswith(("def ", "async def ", "@"))
        right = right and not inner
        related = [s.path for s in result.sources]
        rows.append(
            {
                "sdist": pin,
                "hover": f"{rel}:{line} {name}",
                "explained": f"{span.path}:{span.start_line}-{span.end_line} {span.symbol}",
                "symbol_right": right,
                "lines": span.end_line - span.start_line + 1,
                "related": related,
                "related_downweighted": sum(1 for p in related if down(p)),
                "seconds": round(seconds, 3),
            }
        )
        r = rows[-1]
        print(
            f"{'ok ' if right else 'BAD'} {r['hover']:<52} -> {r['explained']:<70} "
            f"related {len(related)} ({r['related_downweighted']} tests/docs) {seconds:5.2f}s",
            flush=True,
        )
    n_related = sum(len(r["related"]) for r in rows)
    summary = {
        "hovers": len(rows),
        "symbol_right": sum(r["symbol_right"] for r in rows),
        "related": n_related,
        "related_downweighted": sum(r["related_downweighted"] for r in rows),
        "median_seconds": sorted(r["seconds"] for r in rows)[len(rows) // 2],
        "load_average": os.getloadavg()[0],
    }
    print(
        f"\nsymbol explained: {summary['symbol_right']}/{summary['hovers']}; related tests/docs: "
        f"{summary['related_downweighted']}/{summary['related']}; median {summary['median_seconds']} s "
        f"(load {summary['load_average']:.1f})"
    )
    print(write_result(f"explain-{args.label}", {"label": args.label, "summary": summary, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

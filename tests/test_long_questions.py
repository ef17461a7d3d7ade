"""Long pasted questions: a 25,000-character bug report is answered from the same evidence as its
first 4,000 characters, as an argument or on standard input; 250,000 characters is one line, exit 2.
Report reading stays linear on adversarial input; what is searched and sent is a bounded digest.
Real parts: the CLI in a subprocess, LanceDB, the embedding model, the fake LLM server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codeask.query.digest import digest_question
from codeask.query.report import parse_question
from tests.long_report import ERROR_LINE, report, write_shop

SERVER = str(Path(__file__).resolve().parents[1] / "server")


def codeask(*args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": SERVER, "HTTP_PROXY": "http://127.0.0.1:9", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "codeask", *args], input=stdin, capture_output=True, text=True, env=full_env, timeout=900
    )


@pytest.fixture
def shop(tmp_path) -> Path:
    """The long report's shop, indexed into this test's cache (:func:`~tests.conftest.isolated_env`:
    a module-scoped index ran before it, into the user's real cache, and each test indexed again)."""
    root = write_shop(tmp_path / "shop")
    assert codeask("index", str(root)).returncode == 0
    return root


def ask_json(shop: Path, question: str, *, stdin: bool = False, env: dict | None = None) -> dict:
    args = ("ask", str(shop), "-" if stdin else question, "--json", *(() if env else ("--no-llm",)))
    proc = codeask(*args, stdin=question if stdin else None, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_long_report_finds_the_evidence_of_its_first_4000_characters(shop):
    text = report(25_000)
    assert len(text) >= 24_900 and ERROR_LINE in text[:4000]
    first = ask_json(shop, text[:4000])
    whole = ask_json(shop, text)
    piped = ask_json(shop, text, stdin=True)
    assert first["sources"][0]["path"] == "shop/pricing.py"
    for out in (whole, piped):
        assert out["sources"][0]["path"] == "shop/pricing.py"  # the same evidence, or more:
        assert {s["path"] for s in first["sources"][:3]} <= {s["path"] for s in out["sources"]}
        assert out["question_digest"]["chars_in"] == len(text)
        assert out["question_digest"]["chars_sent"] <= 4000
        assert "> **Question shortened:**" in out["markdown"]
    assert "question_digest" not in first  # within the digest: used whole


def test_the_model_gets_the_digest_with_the_evidence(shop, fake_llm):
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    out = ask_json(shop, report(25_000), stdin=True, env=env)
    assert out["answer"] == "FAKE ANSWER" and out["sources"][0]["path"] == "shop/pricing.py"
    for prompt in fake_llm.prompts():  # subquestions, then the answer
        assert ERROR_LINE in prompt and "apply_discount" in prompt
        assert prompt.count("shop.inventory reserved stock") <= 1  # the log collapsed
    assert len(fake_llm.prompts()[-1]) < 25_000


def test_over_the_cap_on_standard_input_is_one_line_exit_2(shop):
    proc = codeask("ask", str(shop), "-", stdin=report(250_000) + "x" * 250_000)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "characters long; the limit is 200,000" in lines[0], proc.stderr
    empty = codeask("ask", str(shop), "-", stdin="  \n")
    assert empty.returncode == 2 and "the question is empty" in empty.stderr


ADVERSARIAL = {
    "unclosed comments": "<!--" * 62_500,
    "exception names": "Invalid" * 35_700 + "!",
    "messages": "".join(f"ValueError: bad value {i}\n" for i in range(10_000)),
    "frames": "".join(f'  File "/src/m{i % 50}.py", line {i}, in f{i}\n    x()\n' for i in range(5_000)),
    "one long line": "x" + " " * 250_000 + "x",
    "dotted paths": "(" + "/a" * 125_000 + ".py!",
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_report_reading_over_250k_adversarial_characters(name):
    text = ADVERSARIAL[name]
    parts = parse_question(text)  # linear: a quadratic pattern would not return in a test run
    digest = digest_question(text, 4000)
    assert digest.chars_in == len(text) and digest.chars_sent == len(digest.text) <= 4000
    if name == "messages":
        assert len(parts.messages) == 10_000 and parts.messages[0] == "ValueError: bad value 0"
    if name == "frames":
        assert len(parts.frames) == 5_000 and parts.frames[0].line == 4_999  # innermost first
    if name == "unclosed comments":
        assert parts.search_text == text  # an unclosed comment stays


def test_the_digest_keeps_prose_and_evidence_and_collapses_logs():
    text = report(25_000)
    digest = digest_question(text, 4000)
    assert digest.shortened and digest.chars_sent <= 4000
    kept = digest.text
    assert kept.startswith("Checkout crashes when a customer applies an expired coupon")
    assert 'File "/srv/app/shop/pricing.py", line 9, in apply_discount' in kept and ERROR_LINE in kept
    assert kept.count('File "/srv/app/shop/shipping.py", line 6') == 1  # the recursion, once
    assert kept.count("stock sync lagging behind") == 1  # a repeated warning, once
    assert "lines left out ...]" in kept
    assert f"checkout failed: {ERROR_LINE}" in kept  # the error near the log's end
    short = "Where is the coupon expiry checked?"
    assert digest_question(short, 4000).text == short and not digest_question(short, 4000).shortened


async def test_the_editor_and_mcp_take_the_same_long_report(shop):
    from mcp import Client

    from tests.test_lsp import cmd, session, wait_indexed
    from tests.test_mcp import server_params, wait_ready

    text = report(25_000)
    async with session(shop) as client:
        await wait_indexed(client)
        out = await cmd(client, "codeask.ask", {"question": text, "no_llm": True})
        assert out["sources"][0]["path"] == "shop/pricing.py"
        assert out["question_digest"]["chars_in"] == len(text) and "Question shortened" in out["markdown"]
    async with Client(server_params(shop)) as mcp:
        await wait_ready(mcp)
        asked = await mcp.call_tool("ask_codebase", {"question": text})
        assert not asked.is_error, asked.content
        result = asked.structured_content
        assert result["sources"][0]["path"] == "shop/pricing.py"
        assert result["question_digest"]["chars_in"] == len(text) and "Question shortened" in result["markdown"]

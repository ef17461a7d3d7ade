"""codeask.query.explain without the language server: related code, the prompt, the fallback, hover chunks."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from codeask.llm import CancelToken
from codeask.query.explain import ExplainCache, enclosing_chunk, explain, identifiers, make_span, symbol_span
from codeask.query.pipeline import Cancelled
from codeask.query.steps.explain_answer import BRIEF_REPLY_TOKENS, CUT_MARK, CachedReply, cut_at_sentence
from codeask.workspace import Workspace

#: Seconds before a wait is a hang (never a speed goal).
HANG = 60


def wait_until(condition, timeout: float = HANG) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


@pytest.fixture
def indexed(sample_workspace):
    ws = Workspace([sample_workspace])
    ws.index()
    return ws


def test_identifiers_skip_keywords_and_builtins():
    got = identifiers("subtotal = sum(price * quantity for _, price, quantity in self.items)\nreturn apply_discount(subtotal, coupon)")
    assert got[0] == "apply_discount"
    assert {"subtotal", "price", "quantity", "coupon", "items"} <= set(got)
    assert not {"sum", "for", "in", "self", "return", "_"} & set(got)


def test_span_related_excludes_own_chunk(indexed, sample_workspace):
    cart = sample_workspace / "src/shop/cart.py"
    line = cart.read_text().splitlines().index("        return apply_discount(subtotal, coupon)") + 1
    span = make_span(indexed, str(cart), line - 1, line)
    assert span.path == "src/shop/cart.py" and "return apply_discount" in span.text and span.own_ids
    docs = explain(indexed, span, no_llm=True).sources
    assert docs[0].path == "src/shop/pricing.py" and docs[0].symbol == "apply_discount"
    assert all(not (d.path == span.path and d.start_line <= line <= d.end_line) for d in docs)


def test_explain_without_llm_lists_locations(indexed, sample_workspace):
    pricing = sample_workspace / "src/shop/pricing.py"
    span = make_span(indexed, str(pricing), 6, 9)
    result = explain(indexed, span)
    assert result.llm is None and result.error is None
    assert "Related code" in result.markdown
    assert f"({(sample_workspace / 'src/shop/cart.py').as_uri()}#L" in result.markdown  # the place that uses it
    assert result.sources[0].path == "src/shop/cart.py"


def test_a_file_outside_the_workspace_is_named_and_linked_by_its_absolute_path(indexed, tmp_path):
    outside = tmp_path / "elsewhere" / "helpers.py"
    outside.parent.mkdir()
    outside.write_text("def apply_coupon_twice(cart):\n    return cart\n", encoding="utf-8")
    span = make_span(indexed, str(outside), 1, 2)
    assert span.path == "" and span.label == f"{outside}:1-2"
    markdown = explain(indexed, span).markdown
    assert f"[{outside}:1-2]({outside.as_uri()}#L1-L2)" in markdown.splitlines()[0]


def test_explain_with_llm_prompt_and_cache(sample_workspace, fake_llm):
    ws = Workspace([sample_workspace], editor={"llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "t"}})
    ws.index()
    cart = sample_workspace / "src/shop/cart.py"
    span = enclosing_chunk(ws, str(cart), 18)
    cache = ExplainCache()
    result = explain(ws, span, brief=True, cache=cache)
    assert result.markdown.startswith("FAKE ANSWER") and result.sources
    prompt = fake_llm.prompts()[-1]
    assert "File: src/shop/cart.py (lines 1-19)" in prompt and "Keep it under 80 words" in prompt
    assert "def apply_discount(amount, coupon):" in prompt
    again = explain(ws, span, brief=True, cache=cache)
    assert again.cached and again.markdown == result.markdown and len(fake_llm.requests) == 1

    fake_llm.reply_with("Applies the coupon through the pricing rules [1].")
    linked = explain(ws, span, brief=False)
    first = linked.sources[0]
    assert f"[[1]]({first.uri}" in linked.markdown  # the model's [1]: a link to the first document it saw

    fake_llm.fail_next(401, "bad key", times=5)
    failed = explain(ws, span, brief=False, cache=cache)
    assert "bad key" in failed.error and "src/shop/pricing.py" in failed.markdown and failed.sources


def test_enclosing_chunk_of_unsaved_buffer(indexed, sample_workspace):
    shipping = sample_workspace / "src/shop/shipping.py"
    buffer = shipping.read_text() + "\n\ndef insurance_fee(value):\n    return value * 0.01\n"
    last = len(buffer.splitlines())
    span = enclosing_chunk(indexed, str(shipping), last, text=buffer)
    assert span is not None and "insurance_fee" in span.text and span.end_line == last
    saved = enclosing_chunk(indexed, str(shipping), 5)
    assert saved.symbol == "shipping_cost" or "shipping_cost" in saved.text


def test_selection_lines_are_editor_lines(indexed, sample_workspace):
    """Issue 18.2: a selection below a form feed / U+2028 line is the text the editor shows there."""
    shipping = sample_workspace / "src/shop/shipping.py"
    buffer = "# page one\f\n# a\u2028b\ndef paged_fee():\n    return 1\n"
    span = make_span(indexed, str(shipping), 3, 4, text=buffer)
    assert span.text == "def paged_fee():\n    return 1"
    hovered = enclosing_chunk(indexed, str(shipping), 4, text=buffer)
    assert hovered is not None and hovered.end_line == 4 and "# a\u2028b" in hovered.text


# ------------------------------------------------------------------------------------------------
# the symbol under the cursor, ranking like ask, budget, honest endings, cancellation

REDIRECTS = '''"""Redirect handling."""


class RedirectMixin:
    """Rebuilds a request for the next hop of a redirect."""

    def rebuild_auth(self, prepared, response):
        """Drop the Authorization header when the redirect leaves the original host."""
        if "Authorization" in prepared.headers and leaves_host(prepared.url, response.url):
            del prepared.headers["Authorization"]

    def rebuild_proxies(self, prepared, proxies):
        """Pick the proxy for the new URL from the environment and ``proxies``."""
        scheme = prepared.url.split(":", 1)[0]
        return proxies.get(scheme) or environment_proxy(scheme)

    def resolve_redirects(self, response, prepared):
        """Follow redirects one hop at a time."""
        self.rebuild_auth(prepared, response)
        prepared.proxies = self.rebuild_proxies(prepared, {})
        return prepared
'''

CLIENT = '''from shop.redirects import RedirectMixin


def next_hop(mixin, prepared):
    return mixin.rebuild_proxies(prepared, {"https": "http://proxy:3128"})
'''


def selection_of(prompt: str) -> str:
    """The code block of an explain prompt (between ``File:`` and the constraints)."""
    return prompt.split("File:", 1)[1].split("## Constraints", 1)[0]


def line_col(text: str, needle: str) -> tuple[int, int]:
    """1-based line and 0-based column of the first ``needle``."""
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i, line.index(needle)
    raise AssertionError(needle)


@pytest.fixture
def redirects(sample_workspace):
    (sample_workspace / "src/shop/redirects.py").write_text(REDIRECTS)
    (sample_workspace / "src/shop/client.py").write_text(CLIENT)
    return sample_workspace


def test_hover_span_is_the_method_under_the_cursor(redirects):
    ws = Workspace([redirects])
    ws.index()
    path = str(redirects / "src/shop/redirects.py")
    chunk = enclosing_chunk(ws, path, line_col(REDIRECTS, "def rebuild_proxies")[0])
    assert "def rebuild_auth" in chunk.text  # the chunk holds both methods: not what a hover explains
    for needle in ("def rebuild_proxies", "self.rebuild_proxies("):  # its name, a call in the same class
        line, _ = line_col(REDIRECTS, needle)
        span = symbol_span(ws, path, line, "rebuild_proxies")
        assert (span.symbol, span.definition) == ("RedirectMixin.rebuild_proxies", True)
        assert span.text.lstrip().startswith("def rebuild_proxies") and "rebuild_auth" not in span.text
        assert (span.start_line, span.end_line) == (12, 15)
    # a call in another file: the definition found through the index
    line, _ = line_col(CLIENT, "mixin.rebuild_proxies")
    span = symbol_span(ws, str(redirects / "src/shop/client.py"), line, "rebuild_proxies")
    assert span.path == "src/shop/redirects.py" and span.symbol == "RedirectMixin.rebuild_proxies"
    # a local name, or a keyword-like one: the function around it
    line, _ = line_col(REDIRECTS, "scheme = prepared")
    assert symbol_span(ws, path, line, "scheme").symbol == "RedirectMixin.rebuild_proxies"
    line, _ = line_col(REDIRECTS, "self.rebuild_auth(prepared")
    assert symbol_span(ws, path, line, "self").symbol == "RedirectMixin.resolve_redirects"


def test_explaining_a_method_sends_that_method_not_its_neighbour(redirects, fake_llm):
    ws = Workspace([redirects], editor={"llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "t"}})
    ws.index()
    path = str(redirects / "src/shop/redirects.py")
    span = symbol_span(ws, path, line_col(REDIRECTS, "def rebuild_proxies")[0], "rebuild_proxies")
    result = explain(ws, span, brief=True)
    sent = selection_of(fake_llm.prompts()[-1])
    assert "the definition of `RedirectMixin.rebuild_proxies`" in sent
    assert "return proxies.get(scheme) or environment_proxy(scheme)" in sent
    assert "rebuild_auth" not in sent and "Authorization" not in sent
    assert result.to_json()["selection"] == {
        "path": "src/shop/redirects.py", "root": str(redirects), "start_line": 12, "end_line": 15,
        "symbol": "RedirectMixin.rebuild_proxies", "definition": True,
    }
    assert result.finish_reason == "stop" and not result.truncated


TEST_FILE = '''from shop.cart import Cart
from shop.pricing import apply_discount


def test_total_applies_discount_to_subtotal():
    cart = Cart()
    cart.items = [("pen", 2.0, 3)]
    subtotal = sum(price * quantity for _, price, quantity in cart.items)
    assert cart.total("SAVE10") == apply_discount(subtotal, "SAVE10")
    assert apply_discount(subtotal, None) == subtotal
    assert apply_discount(subtotal, "HALF") == subtotal / 2
'''


def test_related_code_is_ranked_like_ask(sample_workspace):
    """Tests and docs that repeat the selection's names rank below the code (retrieval.downweight_patterns)."""
    (sample_workspace / "tests").mkdir()
    (sample_workspace / "tests/test_cart.py").write_text(TEST_FILE)
    (sample_workspace / "docs").mkdir()
    (sample_workspace / "docs/discounts.md").write_text(
        "# Discounts\n\n`Cart.total` sums price * quantity of the items into a subtotal, then calls\n"
        "`apply_discount(subtotal, coupon)`; see apply_discount for the coupon rates.\n"
    )
    cart = sample_workspace / "src/shop/cart.py"
    line, _ = line_col(cart.read_text(), "def total")

    def related(**retrieval) -> dict[str, float]:
        ws = Workspace([sample_workspace], flags={f"retrieval.{k}": v for k, v in retrieval.items()})
        ws.index()
        return {s.path: s.score for s in explain(ws, symbol_span(ws, str(cart), line, "total"), no_llm=True).sources}

    unweighted = related(downweight_patterns=[])
    assert not next(iter(unweighted)).startswith("src/"), unweighted  # the test spells the selection's names
    ranked = related()
    assert next(iter(ranked)) == "src/shop/pricing.py", ranked  # the definition the selection uses
    assert list(ranked).index("tests/test_cart.py") > list(unweighted).index("tests/test_cart.py")
    # The doc is no graph neighbour: it follows the callers and callees either way, with a lower score.
    code = "src/shop/pricing.py"
    doc = "docs/discounts.md"
    assert ranked[doc] / ranked[code] < unweighted[doc] / unweighted[code], (unweighted, ranked)


def test_hover_reply_cut_at_max_tokens_ends_on_a_sentence(sample_workspace, fake_llm):
    ws = Workspace([sample_workspace], editor={"llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "t"}})
    ws.index()
    fake_llm.reply_with("Sums the items. Then applies the coupon's discount to the subtotal and retu")
    fake_llm.stream_script = {"end": "length"}
    cart = sample_workspace / "src/shop/cart.py"
    span = symbol_span(ws, str(cart), line_col(cart.read_text(), "def total")[0], "total")
    brief = explain(ws, span, brief=True)
    assert brief.markdown.startswith(f"Sums the items.{CUT_MARK}\n") and "retu" not in brief.markdown
    out = brief.to_json()
    assert out["truncated"] and out["finish_reason"] == "length" and out["cut_reason"]
    assert fake_llm.requests[-1]["max_tokens"] == BRIEF_REPLY_TOKENS
    full = explain(ws, span)  # not brief: the text as it came, marked as cut off
    assert "and retu\n\n> **Answer cut off** (" in full.markdown and full.truncated


def test_cut_at_sentence():
    assert cut_at_sentence("One. Two is cu") == f"One.{CUT_MARK}"
    assert cut_at_sentence("It returns `x`. See:\n```python\nx = f(") == f"It returns `x`.{CUT_MARK}"
    assert cut_at_sentence("no sentence ended here") == f"no sentence ended{CUT_MARK}"


def test_a_long_selection_is_capped_to_the_model_context(sample_workspace, fake_llm):
    body = "".join(f"    total_{i} = compute_part({i}, weight_kg) * rate_table[{i}]\n" for i in range(400))
    (sample_workspace / "src/shop/huge.py").write_text(f"def huge_rate(weight_kg, rate_table):\n{body}    return 0\n")
    llm = {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "t", "contextTokens": 2048}
    ws = Workspace([sample_workspace], editor={"llm": llm})
    ws.index()
    fake_llm.context_limit = 2048  # words: a prompt over the context gets llama.cpp's 400
    span = make_span(ws, str(sample_workspace / "src/shop/huge.py"), 1, 402)
    result = explain(ws, span)
    assert result.error is None and result.markdown.startswith("FAKE ANSWER")
    assert result.selection_cut and result.to_json()["selection_cut"]
    prompt = fake_llm.prompts()[-1]
    assert "(Only the first lines of the code are shown here" in prompt
    assert "total_0 =" in prompt and "total_399 =" not in prompt
    assert len(prompt) // 3 < 2048  # the calibrated estimate codeask budgets with


def test_cancelling_an_explain_closes_the_llm_stream(sample_workspace, fake_llm):
    ws = Workspace([sample_workspace], editor={"llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "t"}})
    ws.index()
    fake_llm.stream_delay = 0.1
    fake_llm.reply_with(" ".join(f"word{i}" for i in range(600)))  # a long stream
    token = CancelToken()
    span = make_span(ws, str(sample_workspace / "src/shop/cart.py"), 16, 19)
    outcome: list = []

    def run():
        try:
            outcome.append(explain(ws, span, cancelled=token))
        except Cancelled as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    wait_until(lambda: any(r.get("stream") for r in fake_llm.requests))
    token.cancel()
    worker.join(HANG)
    assert not worker.is_alive() and isinstance(outcome[0], Cancelled), outcome
    wait_until(lambda: fake_llm.disconnects)  # the server saw the stream closed


def test_explain_cache_is_an_lru():
    cache = ExplainCache(size=2)
    replies = {k: CachedReply(k, "stop", None, "m") for k in "abc"}
    cache.put("a", replies["a"])
    cache.put("b", replies["b"])
    assert cache.get("a") is replies["a"]  # now the most recently used
    cache.put("c", replies["c"])
    assert cache.get("b") is None and cache.get("a") is replies["a"] and cache.get("c") is replies["c"]


def test_cli_explain_json_reports_a_cut_off_explanation(sample_workspace, llm_env, capsys):
    import json

    from codeask.cli import main

    llm_env.reply_with("Sums the items. Then applies the coupon and retu")
    llm_env.stream_script = {"end": "length"}
    assert main(["explain", str(sample_workspace), "src/shop/cart.py:16-19", "--json", "--brief"]) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["markdown"].startswith(f"Sums the items.{CUT_MARK}") and out["truncated"]
    assert out["finish_reason"] == "length" and out["selection"]["symbol"] == "Cart.total"
    assert "codeask: explanation cut off (" in captured.err
    llm_env.reset()
    assert main(["explain", str(sample_workspace), "src/shop/cart.py:16-19", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["finish_reason"] == "stop" and not out["truncated"] and "cut_reason" not in out


SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.mark.parametrize("brief", [True, False])
def test_explain_prompt_snapshot(brief):
    """The built-in explain prompt for a fixed span and documents: a template change is a reviewed
    diff (regenerate with CODEASK_UPDATE_SNAPSHOTS=1)."""
    from codeask.query.explain import Span
    from codeask.query.options import ExplainSelection, RetrievalOptions
    from codeask.query.pipeline import Document, Query
    from codeask.query.steps.explain_answer import ExplainAnswer
    from codeask.query.templates import Templates

    span = Span("src/shop/redirects.py", "/ws", "/ws/src/shop/redirects.py", 12, 15,
                "\n".join(REDIRECTS.splitlines()[11:15]),
                symbol="RedirectMixin.rebuild_proxies", language="python", definition=True)
    docs = [Document("src/shop/client.py", "/ws", 4, 5, "next_hop", "python", "\n".join(CLIENT.splitlines()[3:5]))]
    selection = Document(span.path, span.root, 12, 14, span.symbol, "python", "\n".join(span.text.splitlines()[:3]))
    step = ExplainAnswer(None, Templates(None), None, brief=brief)
    prompt = step.prompt(Query("explain", options=RetrievalOptions(selection=ExplainSelection(span, brief))), selection, docs, cut=not brief)
    snapshot = SNAPSHOTS / f"explain-{'brief' if brief else 'full'}.txt"
    if os.environ.get("CODEASK_UPDATE_SNAPSHOTS"):
        snapshot.write_text(prompt, encoding="utf-8")
    assert prompt == snapshot.read_text(encoding="utf-8")


def test_related_code_lists_callers_and_callees_before_code_that_shares_words(sample_workspace):
    """Hover's related code (README: "its callers and the definitions it calls first, from the symbol
    graph"): a module that repeats the selection's words but never calls it comes after the caller."""
    (sample_workspace / "src/shop/receipt.py").write_text(
        '"""Receipt lines."""\n\nCOUPON_RATES = {"SAVE10": 0.10, "HALF": 0.50}\n\n\n'
        "def coupon_line(amount, coupon):\n"
        '    """The amount the coupon\'s percentage takes off; unknown coupons take off nothing."""\n'
        "    rate = COUPON_RATES.get(coupon, 0.0)\n"
        "    reduced = round(amount * (1 - rate), 2)\n"
        '    return f"{coupon}: {amount - reduced:.2f}"\n'
    )
    ws = Workspace([sample_workspace])
    ws.index()
    pricing = sample_workspace / "src/shop/pricing.py"
    line, _ = line_col(pricing.read_text(), "def apply_discount")
    paths = [s.path for s in explain(ws, symbol_span(ws, str(pricing), line, "apply_discount"), no_llm=True).sources]
    assert "src/shop/receipt.py" in paths, paths  # it is related by its words
    assert paths[0] == "src/shop/cart.py", paths  # the caller (Cart.total) first


def test_related_code_lists_a_caller_in_the_selections_own_file(sample_workspace):
    """A caller in the same module is related code too: a newcomer's hover over requests'
    ``should_strip_auth`` left out ``rebuild_auth``, further down the same file."""
    fillers = "".join(f"def ledger_entry_{i}(book):\n    return book.entries[{i}] * {i + 2}\n\n\n" for i in range(30))
    text = (
        "def mask_card_number(number):\n"
        '    """All but the last four digits hidden."""\n'
        '    return "*" * (len(number) - 4) + number[-4:]\n\n\n'
        f"{fillers}"
        "def receipt_footer(card):\n"
        '    return "paid with " + mask_card_number(card.number)\n'
    )
    cards = sample_workspace / "src/shop/cards.py"
    cards.write_text(text)
    for shop in ("books", "games", "shoes", "toys", "tools", "plants"):  # six callers in other files fill a hover's six places
        (sample_workspace / f"src/shop/{shop}.py").write_text(
            f"from shop.cards import mask_card_number\n\n\ndef {shop}_receipt(order):\n"
            f'    return "{shop}: " + mask_card_number(order.card)\n'
        )
    ws = Workspace([sample_workspace])
    ws.index()
    line, _ = line_col(text, "def mask_card_number")
    caller, _ = line_col(text, "def receipt_footer")
    sources = explain(ws, symbol_span(ws, str(cards), line, "mask_card_number"), no_llm=True).sources
    found = [(s.path, s.start_line, s.end_line) for s in sources]
    # among the callers (it was left out: edges within the selection's file were dropped)
    assert any(p == "src/shop/cards.py" and start <= caller + 1 <= end for p, start, end in found), found

"""codeask.query.explain without the language server: related code, the prompt, the fallback, hover chunks."""

from __future__ import annotations

import pytest

from codeask.query.explain import ExplainCache, enclosing_chunk, explain, identifiers, make_span, related
from codeask.workspace import Workspace


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
    docs = related(indexed, span)
    assert docs[0].path == "src/shop/pricing.py" and docs[0].symbol == "apply_discount"
    assert all(d.id not in span.own_ids for d in docs)
    assert all(not (d.path == span.path and d.start_line <= line <= d.end_line) for d in docs)


def test_explain_without_llm_lists_locations(indexed, sample_workspace):
    pricing = sample_workspace / "src/shop/pricing.py"
    span = make_span(indexed, str(pricing), 6, 9)
    result = explain(indexed, span)
    assert result.llm is None and result.error is None
    assert "Related code" in result.markdown
    assert f"({(sample_workspace / 'src/shop/cart.py').as_uri()}#L" in result.markdown  # the place that uses it
    assert result.sources[0].path == "src/shop/cart.py"


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

"""``codeask.ask`` streams its answer to the editor (``codeask/answerDelta`` notifications, issue 26)
over stdio with pytest-lsp, real LanceDB and the embedding model; the LLM is ``fake_llm``."""

from __future__ import annotations

import asyncio

from tests.test_lsp import cmd, llm_options, session, wait_indexed

ANSWER = (
    "The coupon is applied in Cart.total [1]: the subtotal of price times quantity goes to "
    "apply_discount [2], which takes the coupon's percentage off and never goes below zero."
)


def delta_params(params) -> tuple[str, str]:
    """``(askId, delta)`` of a notification's params, whichever shape the client's converter gave."""
    get = params.get if isinstance(params, dict) else lambda key: getattr(params, key)
    return get("askId"), get("delta")


async def test_ask_streams_its_answer_in_order(sample_workspace, fake_llm):
    fake_llm.reply_with(ANSWER)
    async with session(sample_workspace, options=llm_options(fake_llm)) as client:
        got: list[tuple[str, str]] = []
        answered = asyncio.Event()

        @client.feature("codeask/answerDelta")
        def on_delta(params):
            assert not answered.is_set(), "a delta arrived after the answer"
            got.append(delta_params(params))

        await wait_indexed(client)
        question = "How is the coupon discount applied to the cart total?"
        answer = await cmd(client, "codeask.ask", {"question": question, "askId": "ask-7"})
        answered.set()
        assert answer["answer"] and "error" not in answer
        assert {ask_id for ask_id, _ in got} == {"ask-7"}
        assert len(got) > 1  # the fake server sends the answer in pieces of three words
        assert "".join(delta for _, delta in got).strip() == answer["answer"]

        # no askId (older clients), or no LLM: no notifications
        got.clear()
        fake_llm.reset()
        again = await cmd(client, "codeask.ask", question)
        assert again["answer"] and fake_llm.requests and got == []
        quiet = await cmd(client, "codeask.ask", {"question": question, "askId": "ask-8", "no_llm": True})
        assert quiet["llm"] is None and got == []

        # an askId that is not a string is refused with one line
        try:
            await cmd(client, "codeask.ask", {"question": question, "askId": 8})
        except Exception as exc:  # the client raises the error response
            assert "askId must be a string" in str(exc)
        else:
            raise AssertionError("a numeric askId was accepted")

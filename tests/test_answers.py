"""Honest answers: numbered citations checked, prompts fitted to the model's context, cut-off
answers reported, sources shown before the LLM answers (fake LLM through the real SDK clients)."""

from __future__ import annotations

import json

import pytest

from codeask.query.budget import budget_for, fit_documents
from codeask.query.citations import check_citations
from codeask.query.pipeline import Document
from codeask.workspace import Workspace

pytest_plugins = ["tests.conftest_llm"]


def _doc(path, start=1, lines=10):
    content = "\n".join(f"line {i} of {path}" for i in range(start, start + lines))
    return Document(path, "/ws", start, start + lines - 1, "", "python", content, 1.0)


def test_citations_become_links_and_invalid_ones_are_removed():
    docs = [_doc("a.py"), _doc("b.py", 20)]
    text = (
        "The cart total applies the coupon [1].\n\nShipping is priced by weight [2][7].\n\n"
        "Nothing cited here.\n\n```python\nitems[1]\n```\n\nAlso `x[2]` is code."
    )
    check = check_citations(text, docs)
    assert check.valid == [1, 2] and check.invalid == [7]
    assert f"coupon [[1]]({docs[0].uri})." in check.markdown
    assert f"weight [[2]]({docs[1].uri})." in check.markdown and "[7]" not in check.markdown
    assert "items[1]" in check.markdown and "`x[2]`" in check.markdown  # code is left alone
    assert check.share == pytest.approx(2 / 4)  # 4 paragraphs outside code, 2 cite


def test_citation_lists_and_list_items():
    docs = [_doc("a.py"), _doc("b.py"), _doc("c.py")]
    check = check_citations("- first point [1, 3]\n- second point\n- third [2]", docs)
    assert check.valid == [1, 3, 2] and check.share == pytest.approx(2 / 3, abs=1e-3)
    assert check_citations("", docs).share == 0.0


def _code(path, content, symbol=""):
    lines = content.count("\n") + 1
    return Document(path, "/ws", 1, lines, symbol, "python", content, 1.0)


def test_paragraphs_without_citations_get_them_attributed_from_the_names_they_use():
    docs = [
        _code(
            "src/app/client.py",
            "from app.auth import rebuild_auth\n\nclass Client:\n    def send(self):\n"
            "        rebuild_auth(self.request)\n        return self.adapter.send_request()\n",
        ),
        _code("src/app/auth.py", "def rebuild_auth(request):\n    request.headers.pop('Authorization')\n"),
        _code("src/app/adapter.py", "DEFAULT_RETRIES = 3\n\ndef send_request():\n    return open_socket()\n"),
        _code("src/app/util.py", "def helper():\n    return open_socket()\n"),
    ]
    text = (
        "The header is dropped by `rebuild_auth` when a redirect leaves the host.\n\n"  # defined in [2], used in [1]
        "Retries default to DEFAULT_RETRIES, and Client.send sends it.\n\n"  # a constant [3]; Client.send -> [1]
        "The model cited this one [4] and names rebuild_auth too.\n\n"  # a model citation, but [4] is not [2]
        "Both end in open_socket and `len` of the list.\n\n"  # open_socket in [3] and [4]: ambiguous; len: builtin
        "See app/auth.py for details."  # a path: [2]
    )
    check = check_citations(text, docs)
    got = [(a.paragraph, a.n, a.name, a.how) for a in check.attributed]
    assert got == [
        (0, 2, "rebuild_auth", "defined"),
        (1, 3, "DEFAULT_RETRIES", "defined"),
        (1, 1, "Client.send", "defined"),
        (2, 2, "rebuild_auth", "defined"),
        (4, 2, "app/auth.py", "path"),
    ]
    assert check.valid == [4] and check.share == pytest.approx(1 / 5) and check.mismatched == [2]
    assert check.attributed_share == pytest.approx(3 / 5)  # paragraphs 0, 1 and 4
    lines = check.markdown.split("\n\n")
    assert lines[0].endswith(f"leaves the host. *(named here: [[2]]({docs[1].uri}))*")
    assert lines[1].endswith(f"*(named here: [[3]]({docs[2].uri}), [[1]]({docs[0].uri}))*")
    # the model's [4] names what [2] alone defines: re-pointed, and the change recorded
    assert lines[2] == (
        f"The model cited this one [[2]]({docs[1].uri}) and names rebuild_auth too. "
        "*(re-pointed from [4]: `rebuild_auth` is defined in [2])*"
    )
    assert check.repointed == [{"paragraph": 2, "from": 4, "to": 2, "name": "rebuild_auth"}]
    assert "named here" not in lines[3]


def test_model_citations_that_contradict_the_names_used_are_flagged():
    docs = [
        _code("src/app/client.py", "class Client:\n    def send(self):\n        pass\n"),
        _code("src/app/auth.py", "def rebuild_auth(request):\n    pass\n"),
    ]
    # a small model citing [1] everywhere: the second item names what [2] defines
    check = check_citations("- [1] `Client.send` sends it.\n- [1] `rebuild_auth` drops the header.", docs)
    assert check.share == 1.0 and check.attributed_share == 0.0
    assert check.mismatched == [1] and check.mismatched_share == 0.5
    assert [(a.paragraph, a.n, a.name) for a in check.attributed] == [(1, 2, "rebuild_auth")]
    first, second = check.markdown.splitlines()
    assert "named here" not in first and "re-pointed" not in first
    assert second == (
        f"- [[2]]({docs[1].uri}) `rebuild_auth` drops the header. "
        "*(re-pointed from [1]: `rebuild_auth` is defined in [2])*"
    )


def test_a_citation_that_names_none_of_the_cited_code_is_shown_unverified():
    docs = [
        _code("src/app/client.py", "class Client:\n    def send(self):\n        pass\n"),
        _code("src/app/util.py", "def pause():\n    pass\n"),
        _code("src/app/more.py", "def rebuild_auth():\n    pass\n\ndef strip_auth():\n    rebuild_auth()\n"),
    ]
    # `rebuild_auth` is in [3], not in [2]: the paragraph's [3] is right, its [2] is flagged
    check = check_citations("Redirects call `rebuild_auth` [2][3].\n\nSending is plain [1].", docs)
    assert check.unverified == [{"paragraph": 0, "n": 2}] and check.repointed == []
    assert check.markdown.splitlines()[0] == (
        f"Redirects call `rebuild_auth` [[2]]({docs[1].uri}) *(unverified)*[[3]]({docs[2].uri})."
    )
    assert check.markdown.splitlines()[2] == f"Sending is plain [[1]]({docs[0].uri})."  # no code named: a link
    # defined by no document at all and cited elsewhere: unverified, never a plain link
    lone = check_citations("It calls `retry_forever` [1].", docs)
    assert lone.unverified == [{"paragraph": 0, "n": 1}] and "*(unverified)*" in lone.markdown


def test_the_note_after_a_cut_line_with_an_open_backtick_stays_outside_the_code():
    docs = [_code("src/app/auth.py", "def rebuild_auth(request):\n    request.headers.pop('Authorization')\n")]
    check = check_citations("The header is dropped by `rebuild_auth` when `redirect_", docs)  # cut mid-name
    assert check.markdown.endswith(f"when `redirect_` *(named here: [[1]]({docs[0].uri}))*")


def test_a_name_mentioned_in_one_document_only_is_attributed_to_it():
    docs = [_code("a.py", "x = session.merge_cookies(jar)\n"), _code("b.py", "def other():\n    pass\n")]
    check = check_citations("Cookies go through merge_cookies.", docs)
    assert [(a.n, a.how) for a in check.attributed] == [(1, "mentioned")]
    # mentioned by two documents, defined by none: nothing is attributed
    docs.append(_code("c.py", "merge_cookies(a, b)\n"))
    assert check_citations("Cookies go through merge_cookies.", docs).attributed == []


def test_budget_leaves_room_for_the_reply():
    assert budget_for(8192, 1024).reply == 1024 and budget_for(8192, 1024).prompt == 8192 - 1024 - 64
    small = budget_for(1024, 1024)
    assert small.reply == 512 and small.prompt == 1024 - 512 - 64


def test_fit_drops_lowest_ranked_documents_then_shortens():
    docs = [_doc("a.py", lines=40), _doc("b.py", lines=40), _doc("c.py", lines=40), _doc("d.py", lines=40)]
    count = len  # one token per character: easy to reason about

    def render(ds):
        return "\n".join(d.content for d in ds)

    whole = len(render(docs[:2]))
    kept, _, tokens = fit_documents(docs, render, count, whole)
    assert [d.path for d in kept] == ["a.py", "b.py"] and tokens <= whole
    kept, _, tokens = fit_documents(docs, render, count, whole // 2)
    assert [d.path for d in kept] == ["a.py", "b.py"] and tokens <= whole // 2
    shortened = [d for d in kept if d.end_line - d.start_line + 1 < 40]
    assert shortened, "the longest document was cut"
    for d in shortened:  # its line range follows its content
        assert len(d.content.splitlines()) == d.end_line - d.start_line + 1
    kept, _, _ = fit_documents(docs, render, count, 10**6, max_documents=3)
    assert len(kept) == 3


def _workspace(root, fake_llm, **llm):
    options = {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "k", "numSubquestions": 0} | llm
    ws = Workspace([root], editor={"llm": options})
    ws.index(embed=False)
    return ws


def test_answer_with_numbered_citations(sample_workspace, fake_llm):
    ws = _workspace(sample_workspace, fake_llm)
    fake_llm.reply_with("The discount comes from the coupon [1]. It is capped [9].")
    answer = ws.ask("How is the coupon discount applied to the cart total?")
    out = answer.to_json()
    assert out["citations"] == 1.0 and out["invalid_citations"] == [9]
    assert out["documents"][0]["n"] == 1 and out["documents"][0]["uri"] == answer.sources[0].uri
    assert f"[[1]]({answer.sources[0].uri})" in answer.markdown
    assert "that do not exist were removed: [9]" in answer.markdown
    assert out["answer"].startswith("The discount comes from the coupon [1].")  # the model's text


def test_every_cited_span_opens_on_the_definition_the_question_is_about(sample_workspace, fake_llm):
    """A span is cut by chunks: pricing.py's opens on its module docstring and ``COUPONS``, cart.py's on
    its docstring and imports. Each source and span carries ``open_line``, where the editors open it:
    the line the definition its label names starts on, inside the cited lines; the same with an LLM
    (the sources as sent) and without one."""
    ws = _workspace(sample_workspace, fake_llm)
    fake_llm.reply_with("The cart total applies the coupon [1].")
    question = "How is the coupon discount applied to the cart total?"
    for answer in (ws.ask(question), ws.ask(question, no_llm=True)):
        out = answer.to_json()
        code = [s for s in out["sources"] + out["also_relevant"] if s["path"].endswith(".py")]
        assert {"src/shop/pricing.py", "src/shop/cart.py"} <= {s["path"] for s in code}
        for source in code:
            assert source["open_line"] == source["spans"][0]["open_line"]
            for span in source["spans"]:
                assert span["start_line"] < span["open_line"] <= span["end_line"], span  # each opens on a docstring
                line = (sample_workspace / source["path"]).read_text().splitlines()[span["open_line"] - 1]
                assert line.lstrip().startswith(("def ", "class ")) and span["symbol"].split(".")[-1] in line, (span, line)


def test_no_usable_llm_gives_the_sources_and_the_error_when_asked_to(sample_workspace):
    """An explicit provider without a key: the CLI's ask raises (it reports it before indexing);
    the editor and MCP servers ask with ``sources_on_llm_error`` and get the ranked sources."""
    from codeask.llm import LLMError

    ws = Workspace([sample_workspace], env={}, flags={"llm.provider": "openai"})
    ws.index(embed=False)
    question = "How is the coupon discount applied to the cart total?"
    with pytest.raises(LLMError, match=r"llm\.provider is openai but no key is set"):
        ws.ask(question)
    answer = ws.ask(question, sources_on_llm_error=True)
    assert answer.llm is None and answer.error is not None
    assert answer.error.startswith("llm.provider is openai but no key is set")
    assert "src/shop/pricing.py" in [s.path for s in answer.sources]
    assert f"**LLM error:** {answer.error}" in answer.markdown


def test_answer_without_model_citations_gets_attributed_ones(sample_workspace, fake_llm):
    ws = _workspace(sample_workspace, fake_llm)
    fake_llm.reply_with(
        "The cart total sums the items and calls `apply_discount` with the coupon.\n\nUnknown coupons change nothing."
    )
    answer = ws.ask("How is the coupon discount applied to the cart total?")
    out = answer.to_json()
    numbers = {d["path"]: d["n"] for d in out["documents"]}
    assert "src/shop/pricing.py" in numbers and "src/shop/cart.py" in numbers
    n = numbers["src/shop/pricing.py"]  # defines apply_discount; cart.py only imports and calls it
    assert out["citations"] == 0.0 and out["citations_attributed"] == 0.5 and out["citations_any"] == 0.5
    assert out["citations_mismatched"] == 0.0
    assert out["attributed_citations"] == [{"paragraph": 0, "n": n, "name": "apply_discount", "how": "defined"}]
    uri = out["documents"][n - 1]["uri"]
    assert f"with the coupon. *(named here: [[{n}]]({uri}))*" in answer.markdown
    assert out["answer"].startswith("The cart total sums the items")  # the model's text is unchanged


def test_truncated_answer_is_reported_everywhere(sample_workspace, fake_llm, capsys, monkeypatch):
    from codeask.cli import main

    (sample_workspace / ".codeask.toml").write_text("[llm]\nnum_subquestions = 0\n", encoding="utf-8")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    fake_llm.reply_with("The coupon is applied in Cart.total which calls")
    fake_llm.stream_script = {"end": "length"}
    assert main(["ask", str(sample_workspace), "How is the coupon applied?", "--json"]) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["truncated"] is True and out["finish_reason"] == "length"
    assert out["cut_reason"] == "the max_tokens limit was reached"
    assert "> **Answer cut off** (the max_tokens limit was reached)." in out["markdown"]
    err = captured.err
    assert "codeask: answer cut off (the max_tokens limit was reached)" in err
    # the sources were shown before the answer's LLM call
    assert err.index("Sources (the answer follows):") < err.index("answer cut off")
    assert "src/shop/" in err


def test_broken_stream_is_reported_with_what_happened(sample_workspace, fake_llm):
    ws = _workspace(sample_workspace, fake_llm)  # codeask.llm.MAX_RETRIES retries: none once text arrived
    fake_llm.reply_with("one two three four five six seven eight nine ten")
    fake_llm.stream_script = {"break_after": 2}
    answer = ws.ask("coupon discount")
    assert answer.answer == "one two three four five six"
    assert answer.truncated and answer.finish_reason == "error"
    assert answer.cut_reason.startswith("connected, then the stream broke after 2 tokens")
    assert len(fake_llm.requests) == 1


def test_context_overflow_is_retried_once_with_half_the_documents(sample_workspace, fake_llm):
    # The endpoint claims a large context, but the server refuses long prompts: the count was off.
    ws = _workspace(sample_workspace, fake_llm, contextTokens=100000)
    plain = ws.ask("coupon discount shipping cart price")
    sent = len(plain.documents)
    assert sent >= 2
    words = len(fake_llm.prompts()[-1].split())
    fake_llm.reset()
    fake_llm.context_limit = words - 10
    answer = ws.ask("coupon discount shipping cart price")
    assert answer.error is None and answer.answer == "FAKE ANSWER"
    assert len(fake_llm.requests) == 2 and len(answer.documents) == max(1, sent // 2)


def test_small_context_gets_fewer_documents(sample_workspace, fake_llm):
    big = _workspace(sample_workspace, fake_llm, contextTokens=100000).ask("coupon discount shipping cart price")
    small = _workspace(sample_workspace, fake_llm, contextTokens=1500, maxTokens=200).ask(
        "coupon discount shipping cart price"
    )
    assert len(small.documents) == 1 < len(big.documents)
    # the sources are what was sent; the rest of what retrieval found is listed apart
    assert [(s.path, s.start_line) for s in small.sources] == [(d["path"], d["start_line"]) for d in small.documents]
    assert {s.path for s in small.sources + small.also_relevant} == {s.path for s in big.sources}
    assert "Also relevant, not sent to the model:" in small.markdown
    assert "Also relevant" not in big.markdown and big.also_relevant == []


def test_a_citation_of_a_document_defining_a_name_it_uses_agrees_when_two_define_it():
    # one function sent in two windows (issue 30: requests' Session.prepare_request, its first lines
    # and the rest), both labelled by it; the model cites the second one for what the function does
    head = _code(
        "src/requests/sessions.py",
        "def prepare_request(self, request):\n    p = PreparedRequest()\n",
        "Session.__enter__, Session.prepare_request",
    )
    rest = _code(
        "src/requests/sessions.py",
        "    merged = merge_cookies(self.cookies, request.cookies)\n    return p\n",
        "Session.__enter__, Session.prepare_request",
    )
    other = _code("src/requests/models.py", "class Response:\n    pass\n", "Response")
    text = (
        "- [2] `Session.prepare_request` merges cookies into the `PreparedRequest`.\n- [3] `merge_cookies` merges them."
    )
    check = check_citations(text, [head, rest, other])
    assert check.mismatched == [1] and check.unverified == [{"paragraph": 1, "n": 3}]  # [3] defines neither
    first = check.markdown.splitlines()[0]
    assert first.startswith(f"- [[2]]({rest.uri}) `Session.prepare_request`") and "named here" not in first


def test_a_definition_outranks_its_files_path_when_re_pointing():
    """Two windows of one file: the paragraph names the file's path first, then a method the first
    window defines, and cites the second (the class head). It is re-pointed to the window defining
    the method (the path's attribution had taken that window's place, so it was only mismatched)."""
    docs = [
        _code("src/flask/app.py", "def send_static_file(self, filename):\n    return send_from_directory(filename)\n"),
        _code("src/flask/app.py", "class Flask(App):\n    static_folder = None\n"),
    ]
    check = check_citations("- [2] In `flask/app.py`, `send_static_file` serves the static files.", docs)
    assert check.repointed == [{"paragraph": 0, "from": 2, "to": 1, "name": "send_static_file"}]

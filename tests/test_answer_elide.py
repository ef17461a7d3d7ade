"""A local model's tokens carry more of the code the question needs (issue 30: the key facts sat in
lines the time budget cut, behind long docstrings, and in extra spans of the best files that the budget
dropped before weaker whole documents). Through the project's fake server and the real ``openai`` client."""

from __future__ import annotations

from pathlib import Path

from codeask.llm import Speed
from codeask.query.pipeline import Document, Query
from codeask.workspace import Workspace
from tests.answering import answer_step
from tests.test_answer_focus import _seed_speed

#: A function whose 40-line docstring names none of the question's words, then the call that answers it.
DOCSTRING = "".join(
    f"    Lorem ipsum dolor sit amet number {i}, consectetur adipiscing elit sed do.\n" for i in range(40)
)
MODULE = (
    "def retry_policy(value):\n"
    '    """Return the value after the checks.\n\n'
    f"{DOCSTRING}"
    '    """\n'
    "    return apply_backoff_limit(int(value))\n"
)


def test_a_long_docstring_is_left_out_of_a_tight_document_so_its_code_is_sent(tmp_path, fake_llm):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "net.py").write_text(MODULE, encoding="utf-8")
    options = {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "k", "numSubquestions": 0}
    _seed_speed(fake_llm, Speed(30.0, 4.0))  # 20 s read ~570 tokens: one tight document of ~20 short lines
    fake_llm.reply_with("- [1] `retry_policy` calls `apply_backoff_limit`.")
    ws = Workspace([root], editor={"llm": options})
    ws.index(embed=False)
    answer = ws.ask("How is the retry policy applied?").to_json()
    prompt = fake_llm.user_prompts()[-1]
    assert "return apply_backoff_limit(int(value))" in prompt  # the code after the docstring
    assert '    """Return the value after the checks.' in prompt  # its first line stays
    assert "    … lines 3-43 left out (docstring)" in prompt and "number 5," not in prompt
    # the source keeps the true lines and text: the range sent covers the call, its text is as indexed
    sent = answer["documents"][0]
    assert sent["start_line"] == 1 and sent["end_line"] >= MODULE.count("\n")
    assert "number 5," in answer["sources"][0]["content"] and "left out" not in answer["sources"][0]["content"]


def _fit(fake_llm, tmp_path: Path, question: str, documents: list[Document], speed: Speed) -> list[Document]:
    """The documents :meth:`SimpleAnswer.fit` sends for ``question`` at the endpoint's ``speed``."""
    step = answer_step(fake_llm, tmp_path, speed=speed, context_tokens=8192)
    query = Query(question)
    query.retrieved("retrieve", documents)
    return step.fit(query)[1]


def _function(name: str, body: str, lines: int = 12) -> str:
    return f"def {name}(request):\n" + "".join(f"    step_{i} = request.value + {i}\n" for i in range(lines)) + body


def test_an_extra_span_of_the_best_file_is_kept_over_a_lower_ranked_whole_document(tmp_path, fake_llm):
    best = Document("sessions.py", "/ws", 1, 14, "send", "python", _function("send", "    return request\n"), 1.0)
    extra = replace_lines(best, 60, "prepare_request", "    return merge_cookies(request)\n")
    docs = [best, extra]
    docs += [replace_lines(best, 1, f"other_{i}", "    return None\n", path=f"m{i}.py", score=0.5) for i in range(6)]
    sent = _fit(fake_llm, tmp_path, "How are cookies kept?", docs, Speed(40.0, 8.0))
    assert 2 <= len(sent) < len(docs)
    assert any(d.path == "sessions.py" and d.start_line == 60 for d in sent)  # the span ranked second is sent
    assert all(d.path in {"sessions.py", "m0.py", "m1.py", "m2.py", "m3.py"} for d in sent)  # by rank


def replace_lines(doc: Document, start: int, name: str, body: str, **changes) -> Document:
    """A document like ``doc`` holding one function ``name`` from line ``start``, a ``widen`` span
    (``extra``) unless ``path`` changes."""
    content = _function(name, body)
    fields = {"extra": "path" not in changes, **changes}
    return Document(
        fields.get("path", doc.path), doc.root, start, start + content.count("\n") - 1, name, "python", content,
        fields.get("score", 0.9), extra=fields["extra"],
    )  # fmt: skip


def test_the_other_documents_are_cut_to_what_the_best_window_calls_not_to_words_in_its_comments(tmp_path, fake_llm):
    best_code = (
        "def full_dispatch(request):\n"
        "    # other_thing(request) used to run here, if (request.late) said so\n"
        '    note = "see other_thing(request)"\n'
        "    return finalize(request)\n"
    )
    best = Document("app.py", "/ws", 1, 4, "full_dispatch", "python", best_code, 1.0)
    helpers = _function("other_thing", "    return request\n", 14) + "\n" + _function("finalize", "    return 1\n", 14)
    second = Document("helpers.py", "/ws", 1, helpers.count("\n"), "", "python", helpers, 0.9)
    sent = _fit(fake_llm, tmp_path, "What happens after dispatch?", [best, second], Speed(40.0, 8.0))
    kept = next(d for d in sent if d.path == "helpers.py")
    assert kept.content.splitlines()[0] == "def finalize(request):"  # not other_thing, named only in words


def test_tokens_a_document_leaves_unused_go_to_the_next_ones(tmp_path, fake_llm):
    second = Document("m.py", "/ws", 1, 81, "walk", "python", _function("walk", "    return 1\n", 80), 0.9)
    tiny = Document("a.py", "/ws", 1, 2, "keep", "python", "def keep(request):\n    return request\n", 1.0)
    big = Document("a.py", "/ws", 1, 81, "keep", "python", _function("keep", "    return 1\n", 80), 1.0)
    question, speed = "How are cookies kept?", Speed(60.0, 8.0)
    after_tiny = _fit(fake_llm, tmp_path, question, [tiny, second], speed)[1]
    after_big = _fit(fake_llm, tmp_path, question, [big, second], speed)[1]
    assert after_tiny.path == after_big.path == "m.py"
    # the best document's share is planned at twice the others'; what the tiny one left is not lost
    assert after_tiny.end_line > after_big.end_line


def test_a_document_is_parsed_once_however_often_its_quiet_runs_are_read(monkeypatch):
    """The read-back of issue 30's elision: ``focus`` costs a window by its quiet runs, ``tighten`` and
    every try of the prompt's fitting loop show the document again; each was one tree-sitter parse."""
    from codeask.query import elide
    from codeask.query.focus import focus, question_terms, shown

    parses: list[bytes] = []
    real = elide.parser_for

    class Counting:
        def __init__(self, parser):
            self.parser = parser

        def parse(self, data: bytes):
            parses.append(data)
            return self.parser.parse(data)

    monkeypatch.setattr(elide, "parser_for", lambda language: Counting(real(language)))
    text = MODULE + "# read by test_a_document_is_parsed_once only\n"  # text no other test parses
    doc = Document("net.py", "/ws", 1, len(text.splitlines()), "retry_policy", "python", text, 1.0)
    terms = question_terms("How is the retry policy applied?")
    first = shown(doc, terms)
    assert "left out (docstring)" in first.content
    assert all(shown(doc, terms) == first for _ in range(3))
    kept = focus(doc, terms, tokens=60)
    assert "apply_backoff_limit" in kept.content
    assert len(parses) == 1

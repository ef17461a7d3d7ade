"""A local model's tokens carry more of the code the question needs (issue 30: the key facts sat in
lines the time budget cut, behind long docstrings, and in extra spans of the best files that the budget
dropped before weaker whole documents). Through the project's fake server and the real ``openai`` client."""

from __future__ import annotations

from codeask.llm import Speed
from codeask.workspace import Workspace
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

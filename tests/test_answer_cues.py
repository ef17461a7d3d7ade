"""The answer template lists the code the documents sent show on the question, each name with the
number of its snippet (:mod:`codeask.query.cues`): issue 30's small local model wrote "the URL rule"
beside ``req.url_rule`` and "the Authorization header is removed" beside ``should_strip_auth``.
Through ``SimpleAnswer.prompt`` with the project's fake server and the real ``openai`` client."""

from __future__ import annotations

from codeask.query.cues import MAX_CUES, code_cues, cue_line
from codeask.query.focus import question_terms
from codeask.query.pipeline import Document, Query
from tests.answering import answer_step

QUESTION = "What happens to the Authorization header when a redirect goes to another host?"

REBUILD = '''def rebuild_auth(self, prepared_request, response):
    """When being redirected we may want to strip authentication."""
    headers: structures.CaseInsensitiveDict = prepared_request.headers
    url = prepared_request.url
    if "Authorization" in headers and self.should_strip_auth(response.request.url, url):
        # If we get redirected to a new host, strip the header.
        del headers["Authorization"]
    new_auth = get_netrc_auth(url) if self.trust_env else None
'''

STRIP = '''def should_strip_auth(self, old_url: str, new_url: str) -> bool:
    """Decide whether Authorization header should be removed when redirecting"""
    old_parsed = urlparse(old_url)
    new_parsed = urlparse(new_url)
    if old_parsed.hostname != new_parsed.hostname:
        raise RedirectHostChanged(DEFAULT_PORTS)
'''


def _documents() -> list[Document]:
    return [
        Document("sessions.py", "/ws", 282, 289, "SessionRedirectMixin.rebuild_auth", "python", REBUILD, 1.0),
        Document("sessions.py", "/ws", 154, 159, "SessionRedirectMixin.should_strip_auth", "python", STRIP, 0.5),
    ]


def test_cues_are_the_definitions_then_the_code_named_on_lines_about_the_question():
    cues = code_cues(_documents(), question_terms(QUESTION))
    # the labels first, each at its document; then the names of code on the question's lines
    assert cues[:2] == [(1, "rebuild_auth"), (2, "should_strip_auth")]
    names = [name for _, name in cues]
    assert "hostname" not in names  # an attribute without an inner underscore or capital reads as a word
    assert "CaseInsensitiveDict" not in names  # a type in an annotation (on a line about headers) is no call
    assert "RedirectHostChanged" in names and "DEFAULT_PORTS" in names  # a class raised, a constant
    assert names.count("should_strip_auth") == 1  # at its first document only, though line 5 of [1] calls it
    # local variables and parameters (old_parsed, prepared_request, new_url) are not code to look up,
    # nor what lines off the question name (get_netrc_auth, trust_env: no word of the question there)
    assert not {"old_parsed", "prepared_request", "new_url", "get_netrc_auth", "trust_env"} & set(names)
    assert cue_line(cues[:2]) == "[1] `rebuild_auth`, [2] `should_strip_auth`"
    assert cue_line([]) == ""


def test_cues_stop_at_their_limit_in_document_order():
    many = [
        Document(f"m{i}.py", "/ws", 1, 2, f"Handler.step_{i}", "python", f"def step_{i}():\n    pass\n", 1.0)
        for i in range(MAX_CUES + 3)
    ]
    cues = code_cues(many, question_terms("How are the steps run?"))
    assert cues == [(i, f"step_{i - 1}") for i in range(1, MAX_CUES + 1)]
    # a dunder label and a label that is not one identifier are never listed
    odd = [Document("a.py", "/ws", 1, 2, "Thing.__init__, (top level)", "python", "x = 1\n", 1.0)]
    assert code_cues(odd, question_terms("What is x?")) == []


def test_the_answer_prompt_lists_the_cues_after_the_format(tmp_path, fake_llm):
    step = answer_step(fake_llm, tmp_path)
    query = Query(QUESTION)
    query.retrieved("retrieve", _documents())
    ask = step.prompt(query, _documents()).rsplit("## Answer", 1)[1]
    assert (
        "Never go through the snippets one by one. Code the snippets show for this question: "
        "[1] `rebuild_auth`, [2] `should_strip_auth`, " in ask
    )
    assert ask.rstrip().endswith("Name each one a point relies on, in backticks, with its snippet's number.")
    # without documents (the prompt's frame) there is nothing to list
    assert "Code the snippets show" not in step.prompt(query, [])
    # a summary replaced the documents: no names either
    query.transformed_response("summary", "A summary of the code.")
    assert "Code the snippets show" not in step.prompt(query)

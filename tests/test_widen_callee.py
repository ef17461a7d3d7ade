"""The definition the best span calls in its own file is one of its file's spans (issue 29, finding 10).

``Session.send`` picks its adapter in ``Session.get_adapter``, one call away in the same file; the
file's other chunks that share more of the question's words took the ``widen`` step's places, so
"how does Session.send pick an adapter?" was answered without it. ``widen`` now adds, after each
kept file's best span, the definition of that file the span calls (surely) holding most of the
question's words (:mod:`codeask.query.steps.callee_spans`). Real parts: the engine indexing a temp
workspace keyword-only into LanceDB (the ``isolated_env`` cache) with its symbol graph, asked
through the real pipeline.
"""

from __future__ import annotations

from pathlib import Path

from codeask.workspace import Workspace
from tests.workspaces import write_tree


def _function(name: str, lines: list[str], filler: int = 36, param: str = "request") -> str:
    """A Python function ``name`` of ``param`` holding ``lines``, padded to its own chunk."""
    body = "".join(f"    total = total + {i}\n" for i in range(filler))
    text = "".join(f"    {line}\n" for line in lines)
    return f"def {name}({param}):\n{text}    total = 0\n{body}    return total\n\n\n"


def _cited(root: Path, question: str, name: str) -> bool:
    """Whether the first source of ``question`` asked of ``root`` (``src/session.py``) cites the
    line defining ``name`` in one of its spans."""
    ws = Workspace([root])
    ws.index(embed=False)
    source = ws.ask(question, no_llm=True, max_files=3).sources[0]
    assert source.path == "src/session.py", source.path
    lines = (root / source.path).read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.startswith(f"def {name}("))
    return any(x["start_line"] <= line <= x["end_line"] for x in source.spans)


def test_the_best_spans_own_callee_holding_a_question_word_is_cited(tmp_path: Path) -> None:
    words = "# send request: send the request, send it again, pick how to send the request"
    session = (
        _function("send_request", [words, words, "adapter = transport_for(request)"])
        + _function("log_request", ["# send request log: log each request send, pick a level"] * 2)
        + _function("retry_request", ["# send request again: retry the request send, pick a delay"] * 2)
        + _function("transport_for", ["# the transport of a url: the first prefix that matches"], param="url")
    )
    root = write_tree(tmp_path / "ws", {"src/session.py": session, "src/other.py": "def other():\n    return 1\n"})
    assert _cited(root, "how does send_request pick a transport", "transport_for")
    # a callee sharing no word of the question is no span of its own (send_request, named, still leads)
    assert not _cited(root, "how does send_request pick a level", "transport_for")

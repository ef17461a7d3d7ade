"""A caller question's retrieved file is cited at its caller, not at the span that only names the symbol.

Retrieval ranks a file by its words; for "who calls route_context" the span with the most of them
may hold the name only in a comment (chi's ``Mux.ServeHTTP``: "Fetch a RouteContext object from the
sync pool"), while the call is in another definition of that file (``Mux.Mount``). The file keeps
its rank; its first cited span is the calling definition, the retrieved span an added one after
it (:func:`codeask.query.steps.callers.with_sites`). Real parts: the engine indexing a temp workspace
keyword-only into LanceDB (the ``isolated_env`` cache) with its symbol graph, asked through the
real pipeline.
"""

from __future__ import annotations

from pathlib import Path

from tests.workspaces import indexed


def _function(name: str, lines: list[str], filler: int = 40) -> str:
    """A Python function ``name`` holding ``lines``, padded to about ``filler`` lines (its own chunk)."""
    body = "".join(f"    total = total + {i}\n" for i in range(filler))
    return (
        f"def {name}(request):\n"
        + "".join(f"    {line}\n" for line in lines)
        + f"    total = 0\n{body}    return total\n\n\n"
    )


def test_a_retrieved_file_is_cited_first_at_the_definition_calling_the_symbol(tmp_path: Path) -> None:
    serve = _function("serve", ["# who calls route_context? serve takes a route_context from the pool:"] * 3)
    mount = _function("mount", ["ctx = route_context(request)"])
    files = {"src/ctx.py": "def route_context(request):\n    return request.ctx\n", "src/mux.py": serve + mount}
    ws = indexed(tmp_path / "ws", files)
    answer = ws.ask("who calls route_context", no_llm=True, max_files=5)
    mux = next((s for s in answer.sources if s.path == "src/mux.py"), None)
    assert mux is not None, [s.path for s in answer.sources]
    call = (serve + mount).splitlines().index("    ctx = route_context(request)") + 1
    first = mux.spans[0]
    # the file's first citation holds the call and names its caller; where it merges with serve's
    # neighbouring span (steps/widen.merge_spans) it names both, in the file's order
    assert first["start_line"] <= call <= first["end_line"], (call, mux.spans)
    assert "mount" in first["symbol"].split(", "), mux.spans


def test_with_a_short_max_files_the_files_holding_callers_come_first(tmp_path: Path) -> None:
    """``--max-files 3`` on requests' "who calls should_strip_auth" listed ``auth.py`` (no caller, retrieved
    for its words) before ``tests/test_requests.py`` (five callers): the ``expand`` step kept the retrieved
    files before the caller files it added."""
    redirect = _function("rebuild_auth", ["if should_strip_auth(request.old, request.new):", "    total = 1"])
    strip = "def should_strip_auth(old, new):\n    return old != new\n\n\n"
    words = _function("auth_header", ["# should we strip auth? strip_auth decides when auth should strip"] * 3)
    calls = (
        "from web.redirect import should_strip_auth\n\n\ndef test_host_change():\n    assert should_strip_auth(1, 2)\n"
    )
    notes = {f"web/notes_{i}.py": f'"""Should we strip auth? ({i})"""\n\n\nNOTE_{i} = "strip auth"\n' for i in range(4)}
    files = {"web/redirect.py": strip + redirect, "web/auth.py": words, "tests/test_strip.py": calls, **notes}
    ws = indexed(tmp_path / "ws", files)
    answer = ws.ask("who calls should_strip_auth", no_llm=True, max_files=3)
    paths = [s.path for s in answer.sources]
    assert paths == ["web/redirect.py", "tests/test_strip.py", "web/auth.py"], paths

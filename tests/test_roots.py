"""How roots are named in citations (issue 18.8 and 18.9): real folders, LanceDB in a temp dir,
keyword search (no vectors, so no model is needed)."""

from __future__ import annotations

from pathlib import Path

from codeask.query.explain import explain, make_span
from codeask.query.pipeline import root_labels
from codeask.workspace import Workspace


def project(root: Path, function: str) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src/app.py").write_text(f"def {function}(order):\n    return order.total\n", encoding="utf-8")
    return root


def test_roots_sharing_a_folder_name_are_told_apart_in_labels(tmp_path):
    """Issue 18.9: both sources were labelled ``src/app.py:1-2``; only the URIs differed."""
    first = project(tmp_path / "work" / "app", "settle_invoice")
    second = project(tmp_path / "forks" / "app", "settle_refund")
    ws = Workspace([first, second])
    ws.index(embed=False)
    answer = ws.ask("settle_invoice settle_refund", no_llm=True)
    labels = {s.root: s.label for s in answer.sources}
    assert labels == {str(first): "work/app/src/app.py", str(second): "forks/app/src/app.py"}
    assert "[work/app/src/app.py:1-2](" in answer.markdown and "[forks/app/src/app.py:1-2](" in answer.markdown
    assert all(s.path == "src/app.py" for s in answer.sources)  # the relative path is unchanged
    # explain names the root the same way
    span = make_span(ws, str(first / "src/app.py"), 1, 2)
    assert span.label == "work/app/src/app.py:1-2"
    related = explain(ws, span)
    assert "forks/app/src/app.py:1-2" in related.markdown


def test_root_labels():
    assert root_labels(["/w/app"]) == {"/w/app": ""}
    assert root_labels(["/w/api", "/w/web"]) == {"/w/api": "api", "/w/web": "web"}
    assert root_labels(["/a/x/app", "/b/x/app", "/c/web"]) == {
        "/a/x/app": "a/x/app", "/b/x/app": "b/x/app", "/c/web": "web",
    }


def test_symlinked_root_keeps_the_name_the_client_used(tmp_path):
    """Issue 18.8: citations used the resolved real path, so editors opened a second tab."""
    real = project(tmp_path / "real" / "shop", "settle_invoice")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    ws = Workspace([link])
    stats = ws.index(embed=False)
    assert stats.files_changed == 1
    answer = ws.ask("settle_invoice", no_llm=True)
    source = answer.sources[0]
    assert (source.root, source.path) == (str(link), "src/app.py")
    assert source.uri == (link / "src/app.py").as_uri() + "#L1-L2"
    assert f"]({(link / 'src/app.py').as_uri()}#L1-L2 \"codeask:" in answer.markdown
    # the same folder by its real name is the same root, and a path by either name belongs to it
    assert ws.add_root(real) is ws.indexes[str(link)] and len(ws.indexes) == 1
    assert ws.root_for(real / "src/app.py") is ws.indexes[str(link)]
    # an edit saved through either name updates the one index
    (real / "src/app.py").write_text("def settle_invoice(order):\n    return order.net\n", encoding="utf-8")
    assert ws.update_paths([link / "src/app.py"]).files_changed == 1
    assert "order.net" in ws.ask("settle_invoice", no_llm=True).sources[0].content
    span = make_span(ws, str(link / "src/app.py"), 1, 2)
    assert (span.root, span.path, span.abs_path) == (str(link), "src/app.py", str(link / "src/app.py"))

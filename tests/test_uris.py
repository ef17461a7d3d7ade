"""One path <-> URI conversion (codeask.uris): round trips and markdown links for awkward paths,
on the unit level and end to end through ``codeask ask --json`` on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from codeask.uris import file_uri, markdown_link, uri_to_path

NAMES = [
    "with space.py",
    "hash#tag.py",
    "per%cent.py",
    "paren(1).py",
    "close)paren.py",
    "semi;colon.py",
    "amp&ersand.py",
    "equals=sign.py",
    "nön-ascii_ü.py",
    "日本語.py",
    "brack[et].py",
    "all #%();&= é.py",
]


def link_targets(markdown: str) -> list[str]:
    """The hrefs of every link in ``markdown``, as a CommonMark parser reads them."""
    hrefs = []
    parser = MarkdownIt("commonmark")
    parser.validateLink = lambda url: True  # markdown-it refuses file: links by default; editors allow them
    for token in parser.parse(markdown):
        for child in token.children or []:
            if child.type == "link_open":
                hrefs.append(child.attrs["href"])
    return hrefs


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_and_markdown_link(tmp_path, name):
    path = str(tmp_path / "dir (x)#1" / name)
    uri = file_uri(path, 3, 7)
    assert uri.startswith("file:///") and uri.endswith("#L3-L7")
    assert uri_to_path(uri) == path
    assert uri_to_path(file_uri(path)) == path
    assert not any(c in uri.removesuffix("#L3-L7") for c in " ()#;&=[]")  # all percent-encoded
    md = f"Answer.\n\nSources:\n1. {markdown_link(name + ':3-7', uri)}\n"
    [href] = link_targets(md)
    assert uri_to_path(href) == path


def test_other_schemes_are_not_paths():
    assert uri_to_path("untitled:Untitled-1") is None and uri_to_path("") is None


def test_cli_sources_and_links_open_the_right_file(tmp_path, capsys):
    from codeask.cli import main

    root = tmp_path / "proj (copy) #2"
    files = {}
    for i, name in enumerate(NAMES):
        path = root / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def ledger_reconcile_{i}(entries):\n    '''Reconcile the ledger entries.'''\n    return sorted(entries)\n", encoding="utf-8")
        files[f"src/{name}"] = path
    assert main(["ask", str(root), "reconcile the ledger entries", "--json", "--no-llm", "--max-files", str(len(NAMES)), "--top-k", "50"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {s["path"] for s in out["sources"]} == set(files)
    for source in out["sources"]:
        assert Path(uri_to_path(source["uri"])) == files[source["path"]]
    hrefs = link_targets(out["markdown"])
    assert len(hrefs) >= len(NAMES)
    assert {Path(uri_to_path(h)) for h in hrefs} == set(files.values())

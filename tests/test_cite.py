"""Answers that stay true: Sources are the documents the model was sent, citations carry anchors
that re-find the code after edits (LSP ``codeask.resolveCitation``, MCP ``resolve_citation``), and
``codeask cite-check`` checks the links to code in markdown files. The fake LLM is the only stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from codeask.cli import main
from codeask.lines import split_lines
from codeask.query.anchors import anchor, resolve, text_hash
from tests.test_lsp import cmd, session, uri, wait_indexed
from tests.test_mcp import server_params, wait_ready

pytest_plugins = ["tests.conftest_llm"]

QUESTION = "How are the coupon rules applied to the cart total?"
#: A prompt of 4096 - 1024 - 64 = 3008 tokens holds 3008 // 700 = 4 documents (codeask.query.budget.TOKENS_PER_DOCUMENT).
FOUR_DOCUMENTS = "[llm]\nnum_subquestions = 0\ncontext_tokens = 4096\nmax_tokens = 1024\n"


def rule(i: int) -> str:
    return (
        f"def coupon_rule_{i}(cart):\n"
        f'    """Apply coupon rule {i} to the cart total."""\n'
        f"    total = cart.total\n"
        f"    return total - {i}\n"
    )


@pytest.fixture
def coupons(tmp_path) -> Path:
    """Seven files that all answer :data:`QUESTION`, with a budget that sends 4 of them."""
    root = tmp_path / "coupons"
    (root / "rules").mkdir(parents=True)
    for i in range(1, 8):
        (root / "rules" / f"rule{i}.py").write_text(rule(i), encoding="utf-8")
    (root / ".codeask.toml").write_text(FOUR_DOCUMENTS, encoding="utf-8")
    return root


def check_four_sent(out: dict, prompt: str) -> None:
    """``sources`` are exactly the 4 documents of the prompt, numbered as sent; the other retrieved
    files are in ``also_relevant`` and under its heading, and not in the prompt."""
    assert len(out["documents"]) == 4 and len(out["sources"]) == 4
    assert [(s["path"], s["start_line"]) for s in out["sources"]] == [
        (d["path"], d["start_line"]) for d in out["documents"]
    ]
    for n, s in enumerate(out["sources"], 1):
        assert f"[{n}] {s['path']}:{s['start_line']}-{s['end_line']}" in prompt
        assert s["spans"][0]["anchor"]["hash"] == text_hash(s["content"].splitlines())
    sent = {s["path"] for s in out["sources"]}
    left = [s["path"] for s in out["also_relevant"]]
    assert left and not sent & set(left) and sent | set(left) == {f"rules/rule{i}.py" for i in range(1, 8)}
    assert all(f"{path}:" not in prompt for path in left)
    sources, also = out["markdown"].split("\nSources:\n")[1].split("Also relevant, not sent to the model:\n")
    assert [line[:3] for line in sources.splitlines() if line] == ["1. ", "2. ", "3. ", "4. "]
    assert all(path in also for path in left)
    assert all(s["path"] not in also for s in out["sources"])


# ------------------------------------------------------------------------------- the engine


def test_resolve_finds_moved_changed_and_gone_code():
    text = "import os\n\n" + rule(1) + "\n" + rule(2)
    lines = text.splitlines()
    digest = text_hash(lines[7:11])  # coupon_rule_2, lines 8-11
    assert resolve(text, "python", 8, 11, "coupon_rule_2", digest).status == "same"
    moved = resolve("# a\n# b\n" + text, "python", 8, 11, "coupon_rule_2", digest)
    assert (moved.status, moved.start_line, moved.end_line) == ("moved", 10, 13)
    changed = resolve("# a\n" + text.replace("total - 2", "total * 2"), "python", 8, 11, "coupon_rule_2", digest)
    assert (changed.status, changed.start_line, changed.note) == ("changed", 9, "changed since the answer")
    gone = resolve(text.replace("coupon_rule_2", "other"), "python", 8, 11, "coupon_rule_2", digest)
    assert gone.status == "gone" and gone.note.startswith("gone since the answer")


GO_PAIR = (  # chi's mux.go: a span packing two methods, each with its doc comment
    "// updateSubRoutes updates data on child routers.\n"
    "func (mx *Mux) updateSubRoutes(fn func(subMux *Mux)) {\n\tfor _, r := range mx.routes {\n\t\tfn(r)\n\t}\n}\n\n"
    "// updateRouteHandler builds the single mux handler.\n"
    "func (mx *Mux) updateRouteHandler() {\n\tmx.handler = chain(mx.middlewares)\n}\n"
)


def test_a_packed_span_is_re_found_whole_and_its_open_line_moves_with_it():
    """A newcomer edited inside ``updateSubRoutes`` of a span labelled ``Mux.updateSubRoutes,
    Mux.updateRouteHandler``: the anchor's symbol names two definitions, the lookup took it for one,
    found none, and opened ``updateRouteHandler``'s last line ("gone"). Each name is looked up now:
    the span is "changed", from the first's definition to the last's; ``open_line`` moves with the
    span, and opens a changed one on the first line of the definition it opened on (not the first's)."""
    text = "package chi\n\n" + GO_PAIR
    lines = split_lines(text)
    digest, symbol = text_hash(lines[2:13]), "Mux.updateSubRoutes, Mux.updateRouteHandler"
    assert resolve(text, "go", 3, 13, symbol, digest, open_line=10).open_line == 10
    moved = resolve("// one\n// two\n" + text, "go", 3, 13, symbol, digest, open_line=10)
    assert (moved.status, moved.start_line, moved.open_line) == ("moved", 5, 12)
    edited = text.replace("\t\tfn(r)\n", "\t\t// each router\n\t\tfn(r)\n")
    changed = resolve(edited, "go", 3, 13, symbol, digest, open_line=10)
    assert (changed.status, changed.start_line, changed.end_line, changed.open_line) == ("changed", 4, 14, 12)
    assert resolve(edited, "go", 3, 13, symbol, digest).open_line == 4  # no open line given: the first


def test_a_span_ending_on_a_blank_line_resolves_as_the_same_code():
    """A chunk's stored content is its lines joined with line ends, so a last blank line leaves only a
    final line end, and packed definitions lose the blank lines between them; the anchor must still
    match the file's lines (found by a newcomer: every such source of a fresh answer on the requests
    sdist failed cite-check as 'changed')."""
    text = rule(1) + "\n" + rule(2)  # coupon_rule_1 on lines 1-4, line 5 blank
    stored = "\n".join(text.splitlines()[0:5])  # lines 1-5 as a chunk holds them
    digest = anchor(stored, "coupon_rule_1")["hash"]
    assert resolve(text, "python", 1, 5, "coupon_rule_1", digest).status == "same"
    moved = resolve("# a\n" + text, "python", 1, 5, "coupon_rule_1", digest)
    assert (moved.status, moved.start_line, moved.end_line) == ("moved", 2, 6)
    packed = "\n".join(line for line in text.splitlines()[0:10] if line)  # lines 1-10 without the blank
    digest = anchor(packed, "")["hash"]
    assert resolve(text, "python", 1, 10, "", digest).status == "same"


def test_code_moved_down_by_blank_lines_is_found_on_its_first_line():
    """The anchor's hash skips blank lines, so a span ending on blank lines hashes alike one, two and
    three lines further: after five blank lines put above the file, a newcomer's ``:CodeaskOpenCitation``
    (and ``cite-check``) opened flask's ``AppContext`` (238-286) at 241, two blank lines above the
    class, now at 243."""
    text = "import os\n\n\n" + rule(1) + "\n\n" + rule(2)  # coupon_rule_1 on lines 4-7, then 2 blank lines
    lines = text.splitlines()
    digest = text_hash(lines[3:9])  # lines 4-9: the rule and the two blank lines after it
    assert resolve(text, "python", 4, 9, "coupon_rule_1", digest).status == "same"
    moved = resolve("\n" * 5 + text, "python", 4, 9, "coupon_rule_1", digest)
    assert (moved.status, moved.start_line, moved.end_line) == ("moved", 9, 14)
    one = resolve("\n" + text, "python", 4, 9, "coupon_rule_1", digest)  # one line down: not "same" on the blank
    assert (one.status, one.start_line) == ("moved", 5)


# ------------------------------------------------------------------------------- cite-check


def test_cite_check_names_wrong_links_and_where_the_code_is_now(tmp_path, capsys):
    (tmp_path / "adapters.py").write_text(
        "import os\n\n\ndef send(request):\n    return request\n\n\nclass Adapter:\n    def close(self):\n        pass\n",
        encoding="utf-8",
    )
    doc = tmp_path / "guide.md"
    doc.write_text(
        "# Adapters\n\n[`Adapter.close`](adapters.py#L9-L10) closes; [send](adapters.py#L1-L3) sends.\n"
        "```\nnot a link: adapters.py:99\n```\nIn code, `[send](adapters.py#L4)` is no link.\n",
        encoding="utf-8",
    )
    assert main(["cite-check", str(doc)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{doc}:3: [send](adapters.py#L1-L3): send is defined at lines 4-5"]

    source = tmp_path / "adapters.py"
    source.write_text("#\n" * 10 + source.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["cite-check", str(doc), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [(p["text"], p["now"]) for p in problems] == [("`Adapter.close`", [19, 20]), ("send", [14, 15])]

    assert main(["cite-check", str(tmp_path / "missing.md")]) == 2
    assert "missing.md is not a file" in capsys.readouterr().err


def test_cite_check_checks_the_anchors_of_an_answer_codeask_wrote(coupons, llm_env, capsys):
    assert main(["ask", str(coupons), QUESTION, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    saved = coupons / "answer.md"
    saved.write_text(out["markdown"], encoding="utf-8")
    assert main(["cite-check", str(saved)]) == 0
    first = coupons / out["sources"][0]["path"]
    first.write_text(first.read_text(encoding="utf-8").replace("cart.total", "cart.subtotal"), encoding="utf-8")
    assert main(["cite-check", str(saved)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and "changed since the answer: now lines 1-4" in lines[0]


def test_cite_check_checks_every_link_of_an_answer_without_an_llm(coupons, capsys):
    """Without an LLM the answer links each span twice: in its numbered list (with the snippet) and
    under ``Sources:``. The numbered list's links carried no anchor, so after an edit cite-check
    flagged only the ``Sources:`` one (a newcomer's find)."""
    assert main(["ask", str(coupons), QUESTION, "--json", "--no-llm"]) == 0
    out = json.loads(capsys.readouterr().out)
    saved = coupons / "answer.md"
    saved.write_text(out["markdown"], encoding="utf-8")
    assert main(["cite-check", str(saved)]) == 0
    first = out["sources"][0]
    path = coupons / first["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("cart.total", "cart.subtotal"), encoding="utf-8")
    assert main(["cite-check", str(saved)]) == 1
    flagged = [line for line in capsys.readouterr().out.splitlines() if "changed since the answer" in line]
    link = f"[{first['path']}:{first['start_line']}-{first['end_line']}]"
    assert len([line for line in flagged if link in line]) == 2, flagged  # the numbered item's and the Sources one


# ------------------------------------------------------------------------------- the front doors


def test_cli_sources_are_the_four_documents_sent(coupons, llm_env, capsys):
    assert main(["ask", str(coupons), QUESTION, "--json"]) == 0
    check_four_sent(json.loads(capsys.readouterr().out), llm_env.prompts()[-1])


def test_cli_without_an_llm_lists_every_file_as_before(coupons, capsys):
    assert main(["ask", str(coupons), QUESTION, "--json", "--no-llm"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["sources"]) == 7 and out["also_relevant"] == [] and "Also relevant" not in out["markdown"]


async def test_lsp_sources_and_citations_resolved_after_edits(coupons, fake_llm):
    options = {"llm": {"provider": "openai", "baseUrl": fake_llm.openai_base_url, "apiKey": "k"}}
    async with session(coupons, options=options) as client:
        await wait_indexed(client, vectors=False)
        out = await cmd(client, "codeask.ask", QUESTION)
        check_four_sent(out, fake_llm.prompts()[-1])
        assert len(out["locations"]) == 4

        cited = out["sources"][1]
        path = coupons / cited["path"]
        anchor = cited["spans"][0]["anchor"]
        lines = {"start_line": cited["start_line"], "end_line": cited["end_line"], "open_line": cited["open_line"]}
        args = {"uri": uri(path), **lines, **anchor}
        found = await cmd(client, "codeask.resolveCitation", args)
        assert found["status"] == "same" and found["start_line"] == cited["start_line"]
        assert found["open_line"] == cited["open_line"]

        path.write_text("# moved down\n" * 10 + path.read_text(encoding="utf-8"), encoding="utf-8")
        found = await cmd(client, "codeask.resolveCitation", args)
        assert (found["status"], found["start_line"], found["end_line"]) == (
            "moved",
            cited["start_line"] + 10,
            cited["end_line"] + 10,
        )
        assert found["location"]["range"]["start"]["line"] == cited["start_line"] + 9  # 0-based
        assert found["open_line"] == cited["open_line"] + 10

        path.write_text(path.read_text(encoding="utf-8").replace("return total -", "return total +"), encoding="utf-8")
        found = await cmd(client, "codeask.resolveCitation", args)
        assert found["status"] == "changed" and found["note"] == "changed since the answer"
        assert found["start_line"] == 11 and found["uri"].endswith(f"#L11-L{found['end_line']}")
        assert found["open_line"] == 11  # a changed definition opens on its first line


async def test_mcp_sources_and_resolve_citation(coupons, llm_env):
    async with Client(server_params(coupons)) as client:
        await wait_ready(client)
        asked = await client.call_tool("ask_codebase", {"question": QUESTION})
        assert not asked.is_error, asked.content
        out = asked.structured_content
        out["documents"] = [{"path": s["path"], "start_line": s["start_line"]} for s in out["sources"]]
        check_four_sent(out, llm_env.prompts()[-1])
        cited = out["sources"][0]
        target = coupons / cited["path"]
        target.write_text("\n" * 10 + target.read_text(encoding="utf-8"), encoding="utf-8")
        anchor = cited["spans"][0]["anchor"]
        found = await client.call_tool(
            "resolve_citation",
            {"path": cited["path"], "start_line": cited["start_line"], "end_line": cited["end_line"],
             "open_line": cited["open_line"], **anchor},
        )  # fmt: skip
        assert not found.is_error, found.content
        assert found.structured_content["status"] == "moved"
        assert found.structured_content["start_line"] == cited["start_line"] + 10
        assert found.structured_content["open_line"] == cited["open_line"] + 10
        refused = await client.call_tool("resolve_citation", {"path": "../outside.py", "start_line": 1, "end_line": 2})
        assert refused.is_error and "outside the workspace" in refused.content[0].text


# ------------------------------------------------------------------------------- freshness


def test_answer_says_which_sources_changed_since_indexed_and_why_not_reindexed(coupons):
    import subprocess
    import sys

    from codeask.workspace import Workspace

    ws = Workspace([coupons])
    ws.index(embed=False)
    fresh = ws.ask(QUESTION, no_llm=True)
    assert fresh.stale_sources == [] and "Changed on disk" not in fresh.markdown
    changed = coupons / "rules/rule3.py"
    changed.write_text(rule(3).replace("total - 3", "total - 30"), encoding="utf-8")
    (coupons / "rules/rule5.py").unlink()
    answer = ws.ask(QUESTION, no_llm=True).to_json()
    assert sorted((s["path"], s["reason"]) for s in answer["stale_sources"]) == [
        ("rules/rule3.py", "changed"),
        ("rules/rule5.py", "deleted"),
    ]
    assert "not_reindexed" not in answer
    assert "> **Changed on disk since indexed:**" in answer["markdown"] and "not re-indexed yet" in answer["markdown"]

    index = next(iter(ws.indexes.values()))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import filelock, sys, time; lock = filelock.FileLock(sys.argv[1]); lock.acquire(); print('held', flush=True); time.sleep(120)",
         str(index.index_dir / "write.lock")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        locked = ws.ask(QUESTION, no_llm=True).to_json()
    finally:
        holder.kill()
        holder.wait()
    assert locked["not_reindexed"] == "another process holds the index lock"
    assert "it could not be re-indexed first: another process holds the index lock" in locked["markdown"]


def test_documents_the_budget_shortened_are_named_and_listed_as_sent():
    from codeask.query.budget import shorten
    from codeask.query.pipeline import Document, Query
    from codeask.query.result import Answer

    long = Document("a.py", "/ws", 10, 29, "run", "python", "\n".join(f"x{i} = {i}" for i in range(20)), 1.0)
    other = Document("b.py", "/ws", 1, 2, "", "python", "y = 1\nz = 2", 0.5)
    q = Query("q")
    q.retrieved("retrieve", [long, other])
    q.prompt_documents = [shorten(long, 5)]
    q.answered("answer", "It runs [1].")
    out = Answer.from_query(q).to_json()
    assert [(s["path"], s["start_line"], s["end_line"]) for s in out["sources"]] == [("a.py", 10, 14)]
    assert out["sources"][0]["spans"][0]["anchor"]["hash"] == text_hash([f"x{i} = {i}" for i in range(5)])
    assert out["cut_documents"] == [
        {"n": 1, "path": "a.py", "start_line": 10, "end_line": 14, "indexed_start_line": 10, "indexed_end_line": 29}
    ]
    assert "> **Cut to fit the model's context:** [1] `a.py` to lines 10-14." in out["markdown"]
    assert [s["path"] for s in out["also_relevant"]] == ["b.py"]

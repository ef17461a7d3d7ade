"""Every bad input to the CLI is one ``codeask`` line on stderr and an exit code (2 usage, 1 failure),
never a traceback; and an answer says what it stands on (the ``"index"`` state, why it is empty)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.test_cli import codeask


def one_line(proc, code: int) -> str:
    """The single stderr line of a failed run, after checking the exit code and that no traceback leaked."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_or_blank_question_is_a_usage_error(sample_workspace, question):
    line = one_line(codeask("ask", str(sample_workspace), question, "--no-llm", check=False), 2)
    assert "question is empty" in line


@pytest.mark.parametrize("command", ["ask", "index", "status", "eval"])
def test_empty_folder_argument_is_a_usage_error(tmp_path, command):
    """``Path("")`` is the current folder: an empty folder argument must not index where the shell is."""
    extra = {"ask": ["coupons"], "eval": ["--questions", "q.json"]}.get(command, [])
    proc = codeask(command, "", *extra, cwd=tmp_path, check=False)
    line = one_line(proc, 2)
    assert line.startswith(f"codeask {command}: error:") and "folder argument is empty" in line
    assert f"codeask {command} --help" in line
    assert list(tmp_path.iterdir()) == []


def test_usage_errors_are_one_line_naming_the_help(sample_workspace):
    line = one_line(codeask("ask", str(sample_workspace), "x", "--top-k", "0", check=False), 2)
    assert line == "codeask ask: error: argument --top-k: must be at least 1: 0 (codeask ask --help shows the usage)"
    line = one_line(codeask("frobnicate", check=False), 2)
    assert line.startswith("codeask: error: argument COMMAND: invalid choice: 'frobnicate'")


def test_question_over_the_limit_is_refused_before_indexing(sample_workspace, isolated_env):
    # over 128 KiB an argument is refused by Linux itself: a long question comes on standard input
    proc = codeask("ask", str(sample_workspace), "-", "--no-llm", check=False, stdin="why?" * 50_001)
    line = one_line(proc, 2)
    assert "200,004 characters" in line and "200,000" in line and "retrieval.max_question_chars" in line
    assert proc.stdout == ""
    assert not any(isolated_env.glob("*/lance")), "nothing was indexed for a refused question"
    (sample_workspace / ".codeask.toml").write_text("[retrieval]\nmax_question_chars = 4000\n", encoding="utf-8")
    assert "4,000" in one_line(codeask("ask", str(sample_workspace), "why?" * 5000, "--no-llm", check=False), 2)
    (sample_workspace / ".codeask.toml").write_text("[retrieval]\nmax_question_chars = 300000\n", encoding="utf-8")
    out = codeask("ask", str(sample_workspace), "-", "--no-llm", "--json", check=False, stdin="why?" * 50_001)
    assert out.returncode == 0 and json.loads(out.stdout)["question_digest"]["chars_in"] == 200_004


def test_cache_dir_that_is_a_file(sample_workspace, tmp_path):
    afile = tmp_path / "cache-file"
    afile.write_text("not a folder", encoding="utf-8")
    commands = (
        ["index", str(sample_workspace)],
        ["ask", str(sample_workspace), "coupons", "--no-llm"],
        ["status", str(sample_workspace)],  # not "not indexed", exit 0
        ["status", str(sample_workspace), "--json"],
    )
    for command in commands:
        line = one_line(codeask(*command, env={"CODEASK_CACHE_DIR": str(afile)}, check=False), 1)
        assert f"the cache dir {afile}" in line and "CODEASK_CACHE_DIR" in line and "is a file" in line


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_cache_dir_that_cannot_be_created(sample_workspace, tmp_path, where):
    if where == "under-a-file":
        (tmp_path / "f").write_text("x", encoding="utf-8")
        cache = tmp_path / "f" / "cache"
    else:
        cache = Path("/proc/codeask-cache")  # not creatable, even by root
    line = one_line(
        codeask("ask", str(sample_workspace), "coupons", env={"CODEASK_CACHE_DIR": str(cache)}, check=False), 1
    )
    assert f"cannot create the cache dir {cache}" in line and "CODEASK_CACHE_DIR" in line


def test_a_file_given_as_the_folder(sample_workspace):
    file = sample_workspace / "src/shop/cart.py"
    for command in (["ask", str(file), "coupons"], ["index", str(file)], ["status", str(file)]):
        line = one_line(codeask(*command, check=False), 1)
        assert f"not a folder: {file} is a file" in line and line.endswith(f"({file.parent})")
    (sample_workspace / "pyproject.toml").write_text("[project]\nname = 'shop'\n", encoding="utf-8")
    line = one_line(codeask("ask", str(file), "coupons", check=False), 1)  # the project holding it, not its folder
    assert f"not a folder: {file} is a file" in line and line.endswith(f"({sample_workspace})")


@pytest.mark.parametrize(
    "target,says",
    [
        ("src/shop/cart.py:9000-9010", "line 9000 is past the end of src/shop/cart.py"),
        ("src/shop/cart.py:abc", "bad line range 'abc'"),
        ("src/shop/cart.py:30-10", "bad line range '30-10'"),
    ],
)
def test_explain_bad_line_range_is_a_usage_error(sample_workspace, target, says):
    line = one_line(codeask("explain", str(sample_workspace), target, "--no-llm", check=False), 2)
    assert line.startswith("codeask explain: error:") and says in line and "codeask explain --help" in line


def test_explain_range_running_past_the_end_is_cut_at_the_last_line(sample_workspace):
    count = len((sample_workspace / "src/shop/cart.py").read_text(encoding="utf-8").splitlines())
    proc = codeask("explain", str(sample_workspace), f"src/shop/cart.py:{count}-{count + 50}", "--no-llm", "--json")
    out = json.loads(proc.stdout)
    assert (out["selection"]["start_line"], out["selection"]["end_line"]) == (count, count), out["selection"]


def test_explain_an_empty_target_is_a_usage_error_and_a_folder_is_named_as_one(sample_workspace):
    line = one_line(codeask("explain", str(sample_workspace), "", "--no-llm", check=False), 2)
    assert "the file to explain is empty" in line and "codeask explain --help" in line
    line = one_line(codeask("explain", str(sample_workspace), "src/shop", "--no-llm", check=False), 1)
    assert "is a folder, not a file" in line


def test_explain_counts_lines_as_codeask_cites_them(sample_workspace):
    """A form feed or U+2028 does not end a line (codeask.lines): a file of 3 lines ending in one
    is 3 lines long, so line 3 is in range and line 4 is past the end."""
    odd = sample_workspace / "src/shop/odd.py"
    odd.write_text("x = 1\f\ny = '\u2028'\nz = 3\n", encoding="utf-8")
    out = json.loads(codeask("explain", str(sample_workspace), "src/shop/odd.py:3-9", "--no-llm", "--json").stdout)
    assert (out["selection"]["start_line"], out["selection"]["end_line"]) == (3, 3)
    line = one_line(codeask("explain", str(sample_workspace), "src/shop/odd.py:4", "--no-llm", check=False), 2)
    assert "past the end" in line and "3 lines" in line


def test_ask_no_update_on_a_never_indexed_folder_says_how_to_index(sample_workspace, isolated_env):
    line = one_line(codeask("ask", str(sample_workspace), "coupons", "--no-llm", "--no-update", check=False), 1)
    assert "has no index yet" in line and f"codeask index {sample_workspace}" in line
    assert not any(isolated_env.iterdir()), "no empty index folder is left behind"


def test_missing_folder(tmp_path):
    line = one_line(codeask("status", str(tmp_path / "missing"), check=False), 1)
    assert "workspace folder not found" in line


@pytest.mark.parametrize(
    "command, other, flag", [("ask", "how are coupons applied", "--no-update"), ("related", "apply_coupon", "--json")]
)
def test_the_folder_given_second_is_named_with_the_command_in_order(
    sample_workspace, isolated_env, command, other, flag
):
    """``codeask ask "question" FOLDER`` said only "workspace folder not found: <cwd>/question"; now one
    usage line shows the command in order, flags and all, and nothing is indexed."""
    line = one_line(codeask(command, "--json", other, str(sample_workspace), flag, check=False), 2)
    assert f"the folder comes first (codeask {command} --json {sample_workspace} {shlex.quote(other)} {flag})" in line
    assert not any(isolated_env.iterdir())


@pytest.mark.parametrize("provider,variable", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_explicit_provider_without_a_key_is_an_error(sample_workspace, isolated_env, provider, variable):
    proc = codeask("ask", str(sample_workspace), "coupons", "--provider", provider, check=False)
    line = one_line(proc, 1)
    assert f"llm.provider is {provider}" in line and variable in line
    assert proc.stdout == "", "no silent answer without the LLM"
    assert not any(isolated_env.glob("*/lance")), "it fails before indexing"
    proc = codeask("ask", str(sample_workspace), "coupons", env={"CODEASK_LLM": provider}, check=False)
    assert f"llm.provider is {provider}" in one_line(proc, 1)
    # --no-llm asks for no LLM: the provider setting does not matter then
    assert codeask("ask", str(sample_workspace), "coupons", "--provider", provider, "--no-llm").returncode == 0


def test_a_broken_lancedb_table_is_named(sample_workspace, isolated_env):
    codeask("index", str(sample_workspace), "--no-embed")
    status = json.loads(codeask("status", str(sample_workspace), "--json").stdout)
    data = list(Path(status["index_dir"]).glob("lance/*.lance/data/*.lance"))
    assert data
    for f in data:
        f.write_bytes(b"garbage")
    proc = codeask("ask", str(sample_workspace), "coupons", "--no-llm", "--no-update", check=False)
    line = one_line(proc, 1)
    assert str(sample_workspace) in line and status["index_dir"] in line and "codeask clean" in line


def test_a_broken_manifest_names_the_index(sample_workspace):
    codeask("index", str(sample_workspace), "--no-embed")
    index_dir = Path(json.loads(codeask("status", str(sample_workspace), "--json").stdout)["index_dir"])
    (index_dir / "manifest.sqlite").unlink()
    (index_dir / "manifest.sqlite").mkdir()  # SQLite cannot open it now
    line = one_line(codeask("ask", str(sample_workspace), "coupons", "--no-llm", check=False), 1)
    assert str(index_dir) in line and str(sample_workspace) in line and "codeask clean" in line


def test_codeask_own_files_are_not_indexed(sample_workspace):
    (sample_workspace / ".codeask.toml").write_text("[retrieval]\ntop_k = 20\n", encoding="utf-8")
    (sample_workspace / ".codeaskignore").write_text("*.log\n", encoding="utf-8")
    (sample_workspace / "sub").mkdir()
    (sample_workspace / "sub/.codeask.toml").write_text("[retrieval]\nmax_files = 3\n", encoding="utf-8")
    stats = json.loads(codeask("index", str(sample_workspace), "--json", "--no-embed").stdout)
    assert not [p for p in stats["paths_changed"] if p.rpartition("/")[2] in (".codeask.toml", ".codeaskignore")]
    assert stats["files_skipped"].get("excluded", 0) >= 3
    walked = sum(1 for p in sample_workspace.rglob("*") if p.is_file())
    assert stats["files_indexed"] + sum(stats["files_skipped"].values()) == walked  # the counts add up
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(stats["files_skipped"].items()))
    line = codeask("index", str(sample_workspace), "--no-embed").stdout.strip()
    assert line.startswith(
        f"{stats['files_indexed']} files indexed (0 changed, 0 removed; skipped "
        f"{sum(stats['files_skipped'].values())}: {skipped}); "
    ), line
    out = json.loads(codeask("ask", str(sample_workspace), "retrieval top_k max_files", "--no-llm", "--json").stdout)
    assert all(not s["path"].endswith((".codeask.toml", ".codeaskignore")) for s in out["sources"])


def test_an_empty_folder_says_nothing_was_indexable(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = json.loads(codeask("ask", str(empty), "where is the main loop?", "--no-llm", "--json").stdout)
    assert out["sources"] == [] and "no files were found" in out["answer"]
    assert out["index"]["files_indexed"] == 0


def test_a_binary_only_folder_says_how_many_files_were_skipped_and_why(tmp_path):
    root = tmp_path / "blobs"
    root.mkdir()
    for i in range(3):
        (root / f"b{i}.dat").write_bytes(b"\x00\x01\x02" * 100)
    (root / ".env").write_text("TOKEN=x\n", encoding="utf-8")
    out = json.loads(codeask("ask", str(root), "where is the main loop?", "--no-llm", "--json").stdout)
    assert out["sources"] == []
    assert "4 files skipped" in out["answer"] and "binary 3" in out["answer"] and "secret 1" in out["answer"]
    plain = codeask("ask", str(root), "where is the main loop?", "--no-llm").stdout
    assert "binary 3" in plain


def test_no_match_says_how_many_files_were_searched(tmp_path):
    root = tmp_path / "one"
    root.mkdir()
    (root / "a.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    codeask("index", str(root), "--no-embed")
    # keyword-only index, a question with no word in common: the dense side has no vectors to match
    out = json.loads(codeask("ask", str(root), "zzyzx qwertyuiop", "--no-llm", "--json", "--no-update").stdout)
    assert out["index"] == {"state": "keyword-only", "files_indexed": 1, "vectors_pending": 1}
    assert out["sources"] == [] and "among the 1 indexed files" in out["answer"]
    assert "> **Index:** keyword search only" in out["markdown"]


def test_every_ask_result_carries_the_index_state(sample_workspace):
    codeask("index", str(sample_workspace), "--no-embed")
    out = json.loads(codeask("ask", str(sample_workspace), "coupons", "--no-llm", "--json", "--no-update").stdout)
    assert out["index"]["state"] == "keyword-only" and out["index"]["vectors_pending"] > 0
    assert out["index"]["files_indexed"] == 4
    assert "keyword search only" in out["markdown"]
    text = codeask("ask", str(sample_workspace), "coupons", "--no-llm").stdout
    assert "> **Index:**" not in text  # ask brought it up to date: ready, no note
    out = json.loads(codeask("ask", str(sample_workspace), "coupons", "--no-llm", "--json").stdout)
    assert out["index"] == {"state": "ready", "files_indexed": 4, "vectors_pending": 0}

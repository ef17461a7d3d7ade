"""The CLI contract on a real codebase (the requests 2.34.2 sdist) and on small folders."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

REDIRECT_Q = "How does a session decide whether to follow a redirect?"


def codeask(
    *args: str, env: dict | None = None, check: bool = True, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``python -m codeask ARGS`` (in ``cwd``, default this process's; ``stdin`` on its standard
    input) with the network made unreachable through a dead proxy."""
    full_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        **(env or {}),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "codeask", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=900,
        cwd=cwd,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"codeask {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def requests_copy(tmp_path_factory, requests_sdist) -> Path:
    root = tmp_path_factory.mktemp("cli") / "requests-2.34.2"
    shutil.copytree(requests_sdist, root)
    return root


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cli-cache"))


@pytest.mark.slow
def test_requests_sdist_index_ask_and_incremental_updates(requests_copy, module_cache, monkeypatch):
    monkeypatch.setenv("CODEASK_CACHE_DIR", module_cache)
    cold = json.loads(codeask("index", str(requests_copy), "--json").stdout)
    assert cold["files_changed"] == cold["files_seen"] - sum(cold["files_skipped"].values()) or cold["files_changed"] > 30
    assert cold["chunks_embedded"] > 100 and cold["vectors_pending"] == 0
    for key in ("files_seen", "files_changed", "files_removed", "files_skipped", "chunks_embedded",
                "chunks_deleted", "chunks_total", "seconds"):
        assert key in cold

    again = json.loads(codeask("index", str(requests_copy), "--json").stdout)
    assert (again["files_changed"], again["chunks_embedded"]) == (0, 0)

    out = json.loads(codeask("ask", str(requests_copy), REDIRECT_Q, "--no-llm", "--json").stdout)
    assert set(out) >= {"question", "answer", "markdown", "subquestions", "sources"}
    paths = [s["path"] for s in out["sources"]]
    assert "src/requests/sessions.py" in paths[:5]
    assert len(paths) == len(set(paths))
    for s in out["sources"]:
        parsed = urlparse(s["uri"])
        assert parsed.scheme == "file" and parsed.fragment == f"L{s['start_line']}-L{s['end_line']}"
        lines = Path(unquote(parsed.path)).read_text(encoding="utf-8", errors="replace").splitlines()
        assert 1 <= s["start_line"] <= s["end_line"] <= len(lines)
        assert s["content"] == "\n".join(lines[s["start_line"] - 1 : s["end_line"]])
        assert f"]({s['uri']} \"codeask:" in out["markdown"]  # each link with its anchor as its title

    # Append a function to one file: 1 file re-indexed, few chunks embedded, found first.
    utils = requests_copy / "src/requests/utils.py"
    original = utils.read_text(encoding="utf-8")
    utils.write_text(original + "\n\ndef frobnicate_proxy_headers(headers):\n    return dict(headers)\n", encoding="utf-8")
    edit = json.loads(codeask("index", str(requests_copy), "--json").stdout)
    assert edit["files_changed"] == 1
    assert edit["chunks_embedded"] <= cold["chunks_embedded"] / 10
    out = json.loads(codeask("ask", str(requests_copy), "frobnicate_proxy_headers", "--no-llm", "--json").stdout)
    assert out["sources"][0]["path"] == "src/requests/utils.py"
    assert "def frobnicate_proxy_headers" in out["sources"][0]["content"]

    utils.write_text(original, encoding="utf-8")
    out = json.loads(codeask("ask", str(requests_copy), "frobnicate_proxy_headers", "--no-llm", "--json").stdout)
    assert all("frobnicate_proxy_headers" not in s["content"] for s in out["sources"])

    (requests_copy / "src/requests/hooks.py").unlink()
    removed = json.loads(codeask("index", str(requests_copy), "--json").stdout)
    assert removed["files_removed"] == 1 and removed["paths_removed"] == ["src/requests/hooks.py"]
    out = json.loads(codeask("ask", str(requests_copy), "dispatch_hook default_hooks", "--no-llm", "--json").stdout)
    assert "src/requests/hooks.py" not in [s["path"] for s in out["sources"]]

    status = json.loads(codeask("status", str(requests_copy), "--json").stdout)
    assert status["chunks_total"] == removed["chunks_total"]
    assert status["embedding_model"] == "all-MiniLM-L6-v2"
    assert Path(status["index_dir"]).parent == Path(module_cache)
    assert not Path(status["index_dir"]).is_relative_to(requests_copy)


def test_ask_through_an_openai_compatible_server(sample_workspace, fake_llm):
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    out = json.loads(codeask("ask", str(sample_workspace), "How are coupons applied?", "--json", env=env).stdout)
    assert out["answer"] == "FAKE ANSWER" and out["llm"].startswith("openai:")
    assert len(fake_llm.requests) == 2
    assert out["markdown"].startswith("FAKE ANSWER\n\nSources:\n1. [")


def test_ask_through_anthropic_env(sample_workspace, fake_llm):
    env = {"CODEASK_LLM": "anthropic", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url}
    out = json.loads(codeask("ask", str(sample_workspace), "How are coupons applied?", "--json", env=env).stdout)
    assert out["llm"].startswith("anthropic:") and out["answer"] == "FAKE ANSWER"
    assert [c["path"] for c in fake_llm.calls] == ["/v1/messages", "/v1/messages"]


def test_bad_key_is_one_line_naming_provider_and_model(sample_workspace, fake_llm):
    fake_llm.fail_next(401, "invalid api key", times=10)
    env = {"OPENAI_API_KEY": "sk-secret-value", "OPENAI_BASE_URL": fake_llm.openai_base_url, "CODEASK_MODEL": "gpt-x"}
    proc = codeask("ask", str(sample_workspace), "coupons", env=env, check=False)
    assert proc.returncode == 1
    err = [line for line in proc.stderr.splitlines() if line.startswith("codeask:")]
    assert len(err) == 1 and "openai" in err[0] and "gpt-x" in err[0] and "401" in err[0]
    assert "sk-secret-value" not in proc.stderr + proc.stdout
    assert "Sources:" in proc.stdout  # the sources are still printed


def test_exit_codes(tmp_path):
    assert codeask("ask", check=False).returncode == 2
    assert codeask("index", "--top-k", "x", str(tmp_path), check=False).returncode == 2
    proc = codeask("index", str(tmp_path / "missing"), check=False)
    assert proc.returncode == 1 and proc.stderr.strip().count("\n") == 0 and "not found" in proc.stderr


def test_index_of_two_folders_reports_each_folder(tmp_path):
    """``codeask index A B`` says what each folder's run did (``roots`` in --json, a line each), beside the sum."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, names in ((first, ("alpha",)), (second, ("beta", "gamma"))):
        folder.mkdir()
        for name in names:
            (folder / f"{name}.py").write_text(f"def {name}():\n    return {name!r}\n")
    cold = json.loads(codeask("index", str(first), str(second), "--json").stdout)
    by_root = {Path(r["root"]).name: r for r in cold["roots"]}
    assert sorted(by_root) == ["first", "second"] and all("roots" not in r for r in cold["roots"])
    assert (by_root["first"]["files_changed"], by_root["second"]["files_changed"]) == (1, 2)
    assert sum(r["chunks_total"] for r in cold["roots"]) == cold["chunks_total"]
    assert sum(r["chunks_embedded"] for r in cold["roots"]) == cold["chunks_embedded"] > 0
    (second / "gamma.py").write_text("def gamma():\n    return 'changed'\n")
    lines = codeask("index", str(first), str(second)).stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == [str(first), str(second), "all"]
    assert "(0 changed" in lines[0] and "(1 changed" in lines[1] and "(1 changed" in lines[2]
    alone = json.loads(codeask("index", str(first), "--json").stdout)
    assert alone["roots"] == [] and alone["root"] == str(first)


@pytest.mark.slow
def test_kill_9_during_flask_index_then_index_matches_a_clean_index(tmp_path, flask_sdist):
    killed = tmp_path / "killed" / "flask-3.1.3"
    clean = tmp_path / "clean" / "flask-3.1.3"
    shutil.copytree(flask_sdist, killed)
    shutil.copytree(flask_sdist, clean)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for delay in (1.0, 2.5, 6.0):  # listing/phase 1, around the phase switch, phase 2
        proc = subprocess.Popen([sys.executable, "-m", "codeask", "index", str(killed)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    codeask("index", str(killed), "--no-embed", "--json")
    codeask("index", str(clean), "--no-embed", "--json")
    after_kill = json.loads(codeask("status", str(killed), "--json").stdout)
    fresh = json.loads(codeask("status", str(clean), "--json").stdout)
    assert (after_kill["files"], after_kill["chunks_total"]) == (fresh["files"], fresh["chunks_total"])
    assert after_kill["files"] > 150

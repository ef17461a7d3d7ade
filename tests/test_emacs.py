"""Real Emacs (``emacs --batch``, Debian's ``emacs-nox`` with ``elpa-eglot``) with
``editors/emacs/codeask.el`` loaded, against ``python -m codeask serve`` over stdio: eglot connects,
``codeask.ask`` (workspace/executeCommand) answers, the Locations eglot received name the cited
files and lines, and ``M-x codeask-ask`` shows the answer and an xref list of them
(tests/emacs/test_ask.el prints what it saw).

Outside CI the test skips when ``emacs`` is missing; in CI (``CI=true``, as ``.ci/run`` runs, which
installs it) a missing ``emacs`` is a failure. An ``emacs`` without eglot fails it everywhere (the
output says ``Cannot open load file ... eglot``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeask import __version__

HERE = Path(__file__).parent / "emacs"
PACKAGE = Path(__file__).parents[1] / "editors" / "emacs" / "codeask.el"
#: Hang guard for the whole Emacs run, seconds (indexing and one ask on a busy machine; not a speed check).
HANG_GUARD = 600


def emacs_binary() -> str:
    """``emacs`` on PATH; skips without one, fails in CI (``CI=true``)."""
    found = shutil.which("emacs")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but emacs is missing (.ci/run installs emacs-nox and elpa-eglot)", pytrace=False)
        pytest.skip("needs emacs with eglot (Debian: apt-get install emacs-nox elpa-eglot)")
    return found


def run_emacs(emacs: str, workspace: Path, file: Path, question: str, home: Path) -> subprocess.CompletedProcess:
    """``emacs --batch -l codeask.el -l test_ask.el`` in ``workspace``, with its own HOME (nothing
    written to the user's ``~/.emacs.d``)."""
    env = {
        **os.environ,
        "HOME": str(home),
        "CODEASK_EMACS_PY": sys.executable,
        "CODEASK_EMACS_FILE": str(file),
        "CODEASK_EMACS_QUESTION": question,
    }
    cmd = [emacs, "--batch", "-l", str(PACKAGE), "-l", str(HERE / "test_ask.el")]
    return subprocess.run(cmd, cwd=workspace, env=env, capture_output=True, text=True, timeout=HANG_GUARD)


def printed(stdout: str, kind: str) -> list[list[str]]:
    """The fields of every ``KIND ...`` line test_ask.el printed."""
    return [line.split()[1:] for line in stdout.splitlines() if line.startswith(kind + " ")]


def test_eglot_ask_returns_locations(sample_workspace: Path, tmp_path: Path) -> None:
    emacs = emacs_binary()
    # a git repository, so project.el (and eglot's rootUri) is the whole folder, not the file's
    subprocess.run(["git", "init", "-q", str(sample_workspace)], check=True)
    cart = sample_workspace / "src/shop/cart.py"
    proc = run_emacs(emacs, sample_workspace, cart, "How is the coupon discount applied?", tmp_path / "home")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert printed(proc.stdout, "SERVER") == [["codeask", __version__]]
    sources = printed(proc.stdout, "SOURCE")
    locations = printed(proc.stdout, "LOCATION")
    assert sources, proc.stdout
    # one Location per source span, same order: the file and the span's first line
    assert locations == [[path, start] for path, start, _end in sources]
    files = {Path(path) for path, _line in locations}
    assert files <= {
        sample_workspace / rel
        for rel in ("src/shop/cart.py", "src/shop/pricing.py", "src/shop/shipping.py", "README.md")
    }
    # M-x codeask-ask: the answer in *codeask*, one xref item per location, at the line the span's
    # labelled definition starts on (pricing.py's span opens on its docstring: the item, on the def)
    xrefs = printed(proc.stdout, "XREF")
    assert [Path(f) for f, *_ in xrefs] == [Path(f) for f, _ in locations]
    for (_path, start, end), (_, line, *_summary) in zip(sources, xrefs):
        assert int(start) <= int(line) <= int(end)
    pricing = next(x for x in xrefs if x[0].endswith("pricing.py"))  # its summary: file, line, label
    assert pricing[2:] == [f"pricing.py:{pricing[1]}", "apply_discount"], pricing
    assert (sample_workspace / "src/shop/pricing.py").read_text().splitlines()[int(pricing[1]) - 1].startswith("def apply_discount(")
    assert int(printed(proc.stdout, "ANSWER")[0][0]) > 0
    assert printed(proc.stdout, "XREFS") == [[str(len(locations))]]
    # the function that applies the coupon is among the cited lines
    pricing = sample_workspace / "src/shop/pricing.py"
    def_line = pricing.read_text().splitlines().index("def apply_discount(amount, coupon):") + 1
    assert any(Path(path) == pricing and int(start) <= def_line <= int(end) for path, start, end in sources), sources

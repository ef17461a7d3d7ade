"""The endpoint's speed from a real llama.cpp server (``xllamacpp``, SmolLM2-135M, as in
``tests/test_llama_real.py``): measured from the ``timings`` llama.cpp sends on its last stream chunk,
through the real ``openai`` client, and cached for the next ask. Skips (or fails under
``CODEASK_REQUIRE_LLAMA=1``) as that tier does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codeask.llm.speed import CACHE_FILE, SpeedCache
from tests.llama_server import LlamaServer
from tests.test_llama_real import llm_for, start_server

PROMPT = "Here is a list of fruit: " + ", ".join(f"fruit number {i}" for i in range(60)) + ". Name three of them."


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LlamaServer]:
    srv = start_server(tmp_path_factory.mktemp("llama") / "server.log")
    try:
        yield srv
    finally:
        srv.stop()


def test_speed_comes_from_llama_cpp_timings(server: LlamaServer, tmp_path) -> None:
    llm = llm_for(server)
    first = llm.generate(PROMPT, max_tokens=24)
    assert first.speed is not None and first.speed.prompt and first.speed.generated
    # The same prompt again is read from llama.cpp's prompt cache: its timings count a token or two
    # read, which says nothing of the prompt speed (the call's own clock would have given a rate).
    again = llm.generate(PROMPT, max_tokens=24)
    assert again.speed is not None and again.speed.prompt is None and again.speed.generated
    assert llm.speed() is not None and llm.speed().prompt == first.speed.prompt
    cache = SpeedCache(tmp_path / CACHE_FILE, load=lambda: 0.5)  # the load now as when measured
    assert cache.record(llm, llm.speed()) == llm.speed() == cache.get(llm)

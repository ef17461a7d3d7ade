"""The LLM layer driven through the real ``openai`` and ``anthropic`` SDK clients against the
local fake server (no network)."""

from __future__ import annotations

import time

import pydantic
import pytest

from codeask.llm import LLM, LLMError, make_llm
from codeask.llm.shared import extract_json_object
from codeask.settings import LLMSettings, ResolvedLLM, load_settings
from tests.fake_llm import DEFAULT_ANSWER, DEFAULT_FOLLOWUPS, FakeLLMServer

pytest_plugins = ["tests.conftest_llm"]

KEY = "sk-test-SECRET-key-1234567890"
PROVIDERS = ["openai", "anthropic"]


class Followups(pydantic.BaseModel):
    """Follow-up questions about the code."""

    questions: list[str]
    confidence: float


def base_url(server: FakeLLMServer, provider: str) -> str:
    return server.openai_base_url if provider == "openai" else server.anthropic_base_url


def llm_for(
    server: FakeLLMServer,
    provider: str,
    *,
    key: str | None = KEY,
    model: str = "test-model",
    max_retries: int = 0,
    **settings,
) -> LLM:
    options = {"timeout": 5.0} | settings
    resolved = ResolvedLLM(provider=provider, model=model, api_key=key, base_url=base_url(server, provider))
    return make_llm(resolved, LLMSettings(**options), max_retries=max_retries)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete(fake_llm: FakeLLMServer, provider: str) -> None:
    llm = llm_for(fake_llm, provider)
    assert isinstance(llm, LLM)
    assert llm.describe() == f"{provider}:test-model"
    assert llm.complete("What does foo do?", system="You answer questions about code.") == DEFAULT_ANSWER
    (request,) = fake_llm.requests
    assert request["model"] == "test-model"
    assert request["max_tokens"] == 1024
    assert fake_llm.prompts() == ["You answer questions about code.\nWhat does foo do?"]
    if provider == "anthropic":
        assert request["system"] == "You answer questions about code."


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_scripted_and_max_tokens(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.responder = lambda request: "echo: " + request["messages"][-1]["content"]
    llm = llm_for(fake_llm, provider, max_tokens=77)
    assert llm.complete("hello") == "echo: hello"
    assert llm.complete("again", max_tokens=5) == "echo: again"
    assert [r["max_tokens"] for r in fake_llm.requests] == [77, 5]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_default_followups(fake_llm: FakeLLMServer, provider: str) -> None:
    llm = llm_for(fake_llm, provider)
    assert llm.complete("Write 3 follow-up questions about: foo") == DEFAULT_FOLLOWUPS


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream(fake_llm: FakeLLMServer, provider: str) -> None:
    text = "The `parse` function reads the config file,\nthen validates it. Done."
    fake_llm.reply_with(text)
    llm = llm_for(fake_llm, provider)
    deltas = list(llm.stream("How is the config parsed?", system="be brief"))
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert fake_llm.requests[0]["stream"] is True


@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.reply_with({"questions": ["What calls it?", "Where is it set?"], "confidence": 0.5})
    llm = llm_for(fake_llm, provider)
    result = llm.structured("Suggest follow-ups", Followups, system="json please")
    assert isinstance(result, Followups)
    assert result.questions == ["What calls it?", "Where is it set?"]
    assert result.confidence == 0.5
    (request,) = fake_llm.requests
    if provider == "openai":
        fmt = request["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["name"] == "Followups"
        assert fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["schema"]["additionalProperties"] is False
        assert set(fmt["json_schema"]["schema"]["required"]) == {"questions", "confidence"}
    else:
        assert request["tool_choice"] == {"type": "tool", "name": "Followups"}
        (tool,) = request["tools"]
        assert tool["input_schema"]["properties"].keys() == {"questions", "confidence"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_from_prose(fake_llm: FakeLLMServer, provider: str) -> None:
    """Servers that ignore response_format / tools answer in text: the first JSON object wins."""
    fake_llm.reply_with('Here you go:\n```json\n{"questions": ["q1"], "confidence": 1}\n```\nBye')
    result = llm_for(fake_llm, provider).structured("x", Followups)
    assert result == Followups(questions=["q1"], confidence=1.0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_invalid_reply(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.reply_with({"questions": "not a list"})
    with pytest.raises(LLMError) as info:
        llm_for(fake_llm, provider).structured("x", Followups)
    message = str(info.value)
    assert message.startswith(f"{provider} model 'test-model'")
    assert "Followups" in message and "\n" not in message


def test_structured_without_response_format_support(fake_llm: FakeLLMServer) -> None:
    """An OpenAI-compatible server that rejects response_format: asked again in words."""
    fake_llm.fail_next(400, "Unrecognized request argument supplied: response_format")
    fake_llm.reply_with('{"questions": ["a"], "confidence": 0.1}')
    llm = llm_for(fake_llm, "openai")
    assert llm.structured("x", Followups).questions == ["a"]
    first, second = fake_llm.requests
    assert "response_format" in first and "response_format" not in second
    assert "JSON schema" in second["messages"][0]["content"]
    llm.structured("y", Followups)  # remembered: no more response_format
    assert "response_format" not in fake_llm.requests[-1]


def test_openai_switches_to_max_completion_tokens(fake_llm: FakeLLMServer) -> None:
    fake_llm.fail_next(
        400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )
    assert llm_for(fake_llm, "openai").complete("x") == DEFAULT_ANSWER
    first, second = fake_llm.requests
    assert "max_tokens" in first and "max_tokens" not in second
    assert second["max_completion_tokens"] == 1024


def test_anthropic_drops_refused_temperature(fake_llm: FakeLLMServer) -> None:
    fake_llm.fail_next(400, "temperature: Extra inputs are not permitted")
    assert llm_for(fake_llm, "anthropic").complete("x") == DEFAULT_ANSWER
    first, second = fake_llm.requests
    assert first["temperature"] == 0.0 and "temperature" not in second


@pytest.mark.parametrize("provider", PROVIDERS)
def test_server_error_is_retried(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.fail_next(500, "upstream hiccup")
    llm = llm_for(fake_llm, provider, max_retries=2)
    assert llm.complete("x") == DEFAULT_ANSWER
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limit_retried_then_reported(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.fail_next(429, "rate limit reached", times=3, retry_after=0.01)
    llm = llm_for(fake_llm, provider, max_retries=1)
    with pytest.raises(LLMError) as info:
        llm.complete("x")
    assert len(fake_llm.requests) == 2
    assert info.value.status == 429
    assert "429 rate limit reached" in str(info.value)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_auth_error(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.fail_next(401, f"invalid api key {KEY}")
    llm = llm_for(fake_llm, provider, max_retries=3)
    with pytest.raises(LLMError) as info:
        llm.complete("x")
    message = str(info.value)
    assert message.startswith(f"{provider} model 'test-model' at {base_url(fake_llm, provider)}: 401 ")
    assert "invalid api key" in message
    assert KEY not in message and KEY not in repr(info.value) and KEY not in repr(llm)
    assert "\n" not in message
    assert info.value.provider == provider and info.value.model == "test-model"
    assert len(fake_llm.requests) == 1  # 401 is not retried


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unknown_model_while_streaming(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.fail_next(404, "model 'nope' not found")
    with pytest.raises(LLMError, match=r"404 model 'nope' not found") as info:
        list(llm_for(fake_llm, provider, model="nope").stream("x"))
    assert info.value.status == 404


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unreachable_server(provider: str) -> None:
    server = FakeLLMServer()
    server.close()  # the port is now closed
    llm = llm_for(server, provider, timeout=1.0, max_retries=1)
    with pytest.raises(LLMError) as info:
        llm.complete("x")
    message = str(info.value)
    assert message.startswith(f"{provider} model 'test-model' at http://127.0.0.1:{server.port}")
    assert "connect" in message and KEY not in message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout(fake_llm: FakeLLMServer, provider: str) -> None:
    def slow(request: dict) -> str:
        time.sleep(1.5)
        return "too late"

    fake_llm.responder = slow
    llm = llm_for(fake_llm, provider, timeout=0.3, max_retries=2)
    with pytest.raises(LLMError, match=r"no first token after 0\.\d+s .*llm\.first_token_timeout"):
        llm.complete("x")
    assert len(fake_llm.requests) == 1  # waiting for the first token is not retried


def test_placeholder_key_for_local_server(fake_llm: FakeLLMServer) -> None:
    llm = llm_for(fake_llm, "openai", key=None)
    assert llm.complete("x") == DEFAULT_ANSWER
    assert fake_llm.calls[0]["headers"]["authorization"] == "Bearer codeask-no-key"


def test_make_llm_from_settings(fake_llm: FakeLLMServer) -> None:
    settings = load_settings(
        env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url},
        flags={"llm.model": "claude-test"},
    )
    llm = make_llm(settings.resolved_llm(), settings.llm, max_retries=0)
    assert llm.describe() == "anthropic:claude-test"
    assert llm.complete("x") == DEFAULT_ANSWER
    headers = fake_llm.calls[0]["headers"]
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))


def test_make_llm_rejects_unknown_provider() -> None:
    with pytest.raises(LLMError, match="unknown LLM provider 'mystery'"):
        make_llm(ResolvedLLM("mystery", "m", KEY, None), LLMSettings())


def test_extract_json_object() -> None:
    assert extract_json_object('{"a": 1}') == {"a": 1}
    assert extract_json_object('noise {"a": {"b": [1, 2]}} trailing {"c": 3}') == {"a": {"b": [1, 2]}}
    assert extract_json_object("```json\n{\"a\": 2}\n```") == {"a": 2}
    with pytest.raises(ValueError):
        extract_json_object("no json here")
    with pytest.raises(ValueError, match="cut off"):  # never an inner object of a cut-off reply
        extract_json_object('{"verdicts": [{"claim": "a", "supported": false}, {"claim": "b')


# --- streamed calls: finish reasons, broken streams, timeouts, cancellation -------------------

LONG = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_generate_records_finish_reason_and_deltas(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.reply_with(LONG)
    seen: list[str] = []
    done = llm_for(fake_llm, provider).generate("x", on_delta=seen.append)
    assert done.text == LONG == "".join(seen)
    assert done.finish_reason == "stop" and not done.truncated and done.cut_reason() is None
    assert done.tokens == len(seen) == 5
    assert fake_llm.requests[0]["stream"] is True


@pytest.mark.parametrize("provider", PROVIDERS)
def test_length_finish_is_truncated(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.reply_with(LONG)
    fake_llm.stream_script = {"end": "length"}
    done = llm_for(fake_llm, provider).generate("x", max_tokens=7)
    assert done.text == LONG
    assert done.finish_reason == "length" and done.truncated
    assert "max_tokens" in done.cut_reason()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_without_final_event_is_incomplete(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.reply_with(LONG)
    fake_llm.stream_script = {"end": "no_final"}
    done = llm_for(fake_llm, provider).generate("x")
    assert done.text == LONG
    assert done.finish_reason == "incomplete" and done.truncated
    assert done.cut_reason() == "the stream ended without its final event"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_broken_stream_keeps_the_text_and_says_what_happened(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.reply_with(LONG)
    fake_llm.stream_script = {"break_after": 2}
    done = llm_for(fake_llm, provider, max_retries=3).generate("x")
    assert done.text == "one two three four five six "
    assert done.finish_reason == "error" and done.truncated
    assert done.error.startswith("connected, then the stream broke after 2 tokens")
    assert len(fake_llm.requests) == 1  # never retried once text arrived


@pytest.mark.parametrize("provider", PROVIDERS)
def test_idle_gap_between_tokens(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.reply_with(LONG)
    fake_llm.stream_script = {"stall_after": 1, "stall_seconds": 3.0}
    done = llm_for(fake_llm, provider, timeout=0.5, first_token_timeout=30).generate("x")
    assert done.text == "one two three "
    assert done.finish_reason == "error"
    assert "after 1 tokens: no data for 0.5s (llm.timeout, CODEASK_LLM_TIMEOUT)" in done.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_slow_first_token_within_its_own_timeout(fake_llm: FakeLLMServer, provider: str) -> None:
    """The idle gap does not apply before the first token: a long prompt evaluation is fine."""
    fake_llm.stream_script = {"first_delay": 1.0}
    done = llm_for(fake_llm, provider, timeout=0.3, first_token_timeout=30).generate("x")
    assert done.text == DEFAULT_ANSWER and done.finish_reason == "stop"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_mid_stream_closes_the_connection(fake_llm: FakeLLMServer, provider: str) -> None:
    from codeask.llm import Cancelled, CancelToken

    fake_llm.reply_with(" ".join(["word"] * 300))
    fake_llm.stream_delay = 0.05
    token = CancelToken()
    seen: list[str] = []

    def on_delta(delta: str) -> None:
        seen.append(delta)
        if len(seen) == 2:
            token.cancel()

    with pytest.raises(Cancelled):
        llm_for(fake_llm, provider).generate("x", on_delta=on_delta, cancel=token)
    assert len(seen) == 2
    deadline = time.monotonic() + 30
    while not fake_llm.disconnects and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(fake_llm.disconnects) == 1  # the server saw the client go away


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_while_waiting_for_the_first_token(fake_llm: FakeLLMServer, provider: str) -> None:
    import threading

    from codeask.llm import Cancelled

    fake_llm.stream_script = {"first_delay": 5.0}
    event = threading.Event()

    def cancel_once_sent() -> None:
        while not fake_llm.requests:
            time.sleep(0.01)
        event.set()

    threading.Thread(target=cancel_once_sent, daemon=True).start()
    with pytest.raises(Cancelled):
        llm_for(fake_llm, provider, first_token_timeout=60).complete("x", cancel=event)
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_context_overflow_is_its_own_error(fake_llm: FakeLLMServer, provider: str) -> None:
    from codeask.llm import ContextLengthError

    fake_llm.context_limit = 5
    with pytest.raises(ContextLengthError, match="exceeds the available context size") as info:
        llm_for(fake_llm, provider, max_retries=2).complete("a prompt of more than five words here")
    assert info.value.status == 400
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_reply_cut_off_is_an_error(fake_llm: FakeLLMServer, provider: str) -> None:
    fake_llm.stream_script = {"end": "length"}
    with pytest.raises(LLMError, match=r"reply for Followups was cut off \(the max_tokens limit was reached"):
        llm_for(fake_llm, provider).structured("x", Followups)


def test_llm_limits_from_the_environment() -> None:
    settings = load_settings(
        env={
            "CODEASK_LLM_TIMEOUT": "90", "CODEASK_LLM_MAX_RETRIES": "0", "CODEASK_LLM_FIRST_TOKEN_TIMEOUT": "600",
            "CODEASK_LLM_CONNECT_TIMEOUT": "3", "CODEASK_LLM_MAX_TOKENS": "300", "CODEASK_LLM_CONTEXT_TOKENS": "2048",
        }
    )
    llm = settings.llm
    assert (llm.timeout, llm.first_token_timeout) == (90.0, 600.0)
    assert (llm.max_tokens, llm.context_tokens) == (300, 2048)
    # the connect timeout and the retries are no longer settings: one warning each, naming the variable
    # the user set, nothing else lost
    assert settings.warnings == [
        "environment: `$CODEASK_LLM_CONNECT_TIMEOUT (llm.connect_timeout)` is no longer a setting"
        " (now codeask.llm.CONNECT_TIMEOUT); ignored",
        "environment: `$CODEASK_LLM_MAX_RETRIES (llm.max_retries)` is no longer a setting"
        " (now codeask.llm.MAX_RETRIES); ignored",
    ]


def test_first_token_deadline_scales_with_the_prompt(fake_llm: FakeLLMServer) -> None:
    llm = llm_for(fake_llm, "openai", timeout=60)
    local_small, local_big = llm.first_token_deadline(100), llm.first_token_deadline(4000)
    assert 60 < local_small < local_big
    # a local 1.5B model on 2 busy CPU cores evaluated prompts at 4.8 tokens/s at its slowest here
    assert local_big > 60 + 4000 / 4.8
    hosted = make_llm(ResolvedLLM("openai", "m", KEY, "https://api.example.com/v1"), LLMSettings(timeout=60))
    assert hosted.first_token_deadline(4000) == 60 + 4000 / 200
    fixed = llm_for(fake_llm, "openai", first_token_timeout=7)
    assert fixed.first_token_deadline(10**6) == 7

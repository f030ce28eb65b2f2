"""OpenAICompatBackend against a real HTTP server on 127.0.0.1: answers, garbage, retries, timeouts."""

from __future__ import annotations

import math
import socket
import time

import pytest

from ace_core.errors import ConfigError
from ace_core.llm.backend import NOT_SCORED, LLMBackend, LLMError
from ace_core.llm.openai_compat import OpenAICompatBackend, parse_label

LABELS = ["A", "B", "C"]
PROMPT = [{"role": "user", "content": "Which action? A, B or C. Answer with the letter only."}]


def backend_for(server, **options) -> OpenAICompatBackend:
    options = {"backoff": 0.01, "timeout": 5.0} | options
    return OpenAICompatBackend(server.url, "served-model", **options)


def test_chat_through_the_server_matches_the_model_in_process(model_server, grid_prompt):
    backend = backend_for(model_server)
    assert isinstance(backend, LLMBackend) and not backend.supports_finetuning
    text = backend.chat(grid_prompt, max_new_tokens=5)
    assert text == model_server.backend.chat(grid_prompt, max_new_tokens=5)
    sent = model_server.requests[-1]
    assert sent["model"] == "served-model"
    assert sent["messages"] == grid_prompt
    assert sent["max_tokens"] == 5 and sent["temperature"] == 0.0


def test_choose_parses_the_reply_strictly(chat_server):
    backend = backend_for(chat_server, logprobs=False)
    chat_server.script = [("json", 200, chat_server.reply(" B) reconnect line 7"))]
    assert backend.choose(PROMPT, LABELS) == (1, [NOT_SCORED, 0.0, NOT_SCORED])
    assert "logprobs" not in chat_server.requests[-1]
    chat_server.script = [("json", 200, chat_server.reply("I would pick B"))]
    with pytest.raises(
        LLMError, match=r"answered 'I would pick B', which is none of the labels \['A', 'B', 'C'\]"
    ):
        backend.choose(PROMPT, LABELS)


def test_choose_uses_logprobs_when_the_server_gives_them(chat_server):
    backend = backend_for(chat_server)
    # The reply names B; the scores come from the first token's top log-probs.
    chat_server.script = [
        ("json", 200, chat_server.reply("B", top_logprobs={"B": -0.2, "A": -1.9, " B": -3.0}))
    ]
    index, scores = backend.choose(PROMPT, LABELS)
    assert index == 1
    assert scores[0] == pytest.approx(-1.9)
    assert scores[1] == pytest.approx(-0.2 + math.log(1 + math.exp(-2.8)))
    assert scores[2] == NOT_SCORED
    assert chat_server.requests[-1]["logprobs"] is True and chat_server.requests[-1]["top_logprobs"] == 20
    # A reply that is not a label falls back to the log-probs.
    chat_server.script = [
        ("json", 200, chat_server.reply("Hmm, let me think", top_logprobs={"Hmm": -0.1, "C": -2.0}))
    ]
    assert backend.choose(PROMPT, LABELS)[0] == 2


def test_choose_drops_logprobs_when_the_server_rejects_them(chat_server):
    backend = backend_for(chat_server)
    chat_server.script = [
        ("json", 400, {"error": {"message": "logprobs are not supported"}}),
        ("json", 200, chat_server.reply("C")),
        ("json", 200, chat_server.reply("A")),
    ]
    assert backend.choose(PROMPT, LABELS)[0] == 2
    assert backend.choose(PROMPT, LABELS)[0] == 0
    assert ["logprobs" in body for body in chat_server.requests] == [True, False, False]


def test_garbage_bodies_are_llm_errors_without_retry(chat_server):
    backend = backend_for(chat_server, max_retries=3)
    chat_server.script = [("raw", 200, b"<html>proxy error</html>")]
    with pytest.raises(LLMError, match="not JSON: b'<html>proxy error</html>'"):
        backend.chat(PROMPT, max_new_tokens=4)
    chat_server.script = [("json", 200, {"choices": []})]
    with pytest.raises(LLMError, match=r"no choices\[0\].message.content"):
        backend.chat(PROMPT, max_new_tokens=4)
    chat_server.script = [("json", 200, chat_server.reply(None))]
    with pytest.raises(LLMError, match="content is NoneType, not text"):
        backend.chat(PROMPT, max_new_tokens=4)
    assert len(chat_server.requests) == 3


def test_server_errors_are_retried_then_succeed(chat_server):
    backend = backend_for(chat_server, max_retries=2)
    chat_server.script = [
        ("json", 500, {"error": {"message": "engine overloaded"}}),
        ("json", 429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
        ("json", 200, chat_server.reply("hello")),
    ]
    assert backend.chat(PROMPT, max_new_tokens=4) == "hello"
    assert len(chat_server.requests) == 3


def test_retries_are_bounded(chat_server):
    backend = backend_for(chat_server, max_retries=2)
    chat_server.script = [("json", 503, {"error": {"message": "warming up"}})] * 5
    with pytest.raises(LLMError, match=r"after 3 attempt\(s\); last: HTTP 503: warming up"):
        backend.chat(PROMPT, max_new_tokens=4)
    assert len(chat_server.requests) == 3


def test_client_errors_are_not_retried_and_the_key_stays_secret(chat_server):
    backend = OpenAICompatBackend(chat_server.url, "served-model", "sk-secret-123", backoff=0.01)
    chat_server.script = [("json", 401, {"error": {"message": "invalid API key"}})]
    with pytest.raises(LLMError, match="HTTP 401: invalid API key") as caught:
        backend.chat(PROMPT, max_new_tokens=4)
    assert len(chat_server.requests) == 1
    assert chat_server.headers[0]["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret" not in str(caught.value) and "sk-secret" not in repr(backend)


def test_timeout(chat_server):
    backend = backend_for(chat_server, timeout=0.3, max_retries=1)
    chat_server.script = [
        ("sleep", 5.0),
        ("json", 200, chat_server.reply("late")),
        ("json", 200, chat_server.reply("ok")),
    ]
    started = time.monotonic()
    # The first attempt times out, the retry gets the next scripted answer (long before the
    # late one: a margin of seconds for a loaded machine).
    assert backend.chat(PROMPT, max_new_tokens=4) == "ok"
    assert time.monotonic() - started < 4.0
    backend = backend_for(chat_server, timeout=0.3, max_retries=0)
    chat_server.script = [("sleep", 1.0)]
    with pytest.raises(LLMError, match=r"after 1 attempt\(s\); last: no answer within the 0.3 s timeout"):
        backend.chat(PROMPT, max_new_tokens=4)


def test_a_dropped_connection_is_retried(chat_server):
    backend = backend_for(chat_server, max_retries=1)
    chat_server.script = [("close",), ("json", 200, chat_server.reply("ok"))]
    assert backend.chat(PROMPT, max_new_tokens=4) == "ok"
    chat_server.script = [("close",), ("close",)]
    with pytest.raises(LLMError, match=r"after 2 attempt\(s\); last: connection broken \(RemoteDisconnected"):
        backend.chat(PROMPT, max_new_tokens=4)


def test_dead_server():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAICompatBackend(
        f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff=0.01, timeout=5.0
    )
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"after 2 attempt\(s\); last: cannot connect"):
        backend.choose(PROMPT, LABELS)
    assert time.monotonic() - started < 4.0  # refused at once, not timed out (twice 5 s)


def test_settings_from_environment_and_model_discovery(chat_server, monkeypatch):
    monkeypatch.setenv("GRIDACE_LLM_BASE_URL", chat_server.url + "/chat/completions")
    monkeypatch.setenv("GRIDACE_LLM_API_KEY", "env-key")
    monkeypatch.delenv("GRIDACE_LLM_MODEL", raising=False)
    backend = OpenAICompatBackend()
    assert backend.base_url == chat_server.url
    assert backend.name == "tiny-llama"  # the first model the server lists
    monkeypatch.setenv("GRIDACE_LLM_MODEL", "env-model")
    backend = OpenAICompatBackend()
    chat_server.script = [("json", 200, chat_server.reply("ok"))]
    assert backend.chat(PROMPT, max_new_tokens=2) == "ok"
    assert chat_server.requests[-1]["model"] == "env-model"
    assert chat_server.headers[-1]["Authorization"] == "Bearer env-key"


def test_missing_or_bad_settings(monkeypatch):
    monkeypatch.delenv("GRIDACE_LLM_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="set GRIDACE_LLM_BASE_URL"):
        OpenAICompatBackend(model="m")
    with pytest.raises(ConfigError, match="http:// or https://"):
        OpenAICompatBackend("localhost:8000/v1", "m")
    with pytest.raises(ConfigError, match="max_retries=11 is out of range"):
        OpenAICompatBackend("http://localhost:1/v1", "m", max_retries=11)
    with pytest.raises(ConfigError, match="timeout"):
        OpenAICompatBackend("http://localhost:1/v1", "m", timeout=0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("B", 1),
        ("  b ", 1),
        ('"C"', 2),
        ("(A)", 0),
        ("**B**", 1),
        ("C.", 2),
        ("B) reconnect line 7", 1),
        ("A: split", 0),
        ("Answer: B", None),
        ("D", None),
        ("", None),
        ("ABC", None),
        ("B split", None),
    ],
)
def test_parse_label(text, expected):
    assert parse_label(text, LABELS) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("reconnect line 1", 0),
        ("reconnect line 10.", 1),
        ('"Reconnect line 10"', 1),
        ("reconnect line", None),
    ],
)
def test_parse_label_reads_an_option_copied_as_text(text, expected):
    assert parse_label(text, ["reconnect line 1.", "reconnect line 10."]) == expected


def test_a_chatty_reply_is_not_read_as_option_i():
    labels = list("ABCDEFGHIJKL")
    assert parse_label("I would pick option C because it relieves line 4", labels) is None
    assert parse_label("I", labels) == 8
    assert parse_label("I) reconnect line 7", labels) == 8


def test_parse_label_with_multi_character_labels():
    labels = ["1", "12", "do nothing"]
    assert parse_label("12", labels) == 1
    assert parse_label("1, because", labels) == 0
    assert parse_label("Do nothing.", labels) == 2

"""LLM backend for any OpenAI-compatible chat-completions server: vLLM, Ollama, llama.cpp, OpenAI.

Point GridACE at a bigger model on a GPU box (or a hosted API) without code changes:
``base_url`` (with its ``/v1``), ``model`` and ``api_key`` come from arguments or from the
environment variables ``GRIDACE_LLM_BASE_URL``, ``GRIDACE_LLM_MODEL`` and ``GRIDACE_LLM_API_KEY``.
Only the standard library is used (urllib), so nothing more needs installing.

Each request has a timeout and bounded retries with exponential backoff on connection errors,
timeouts, HTTP 408/429/5xx. Everything else that is not a well-formed answer raises
:class:`~ace_core.llm.backend.LLMError` at once, with what was received.

:meth:`OpenAICompatBackend.choose` asks for the label at temperature 0 and parses the reply
strictly; when the server returns log-probabilities (``logprobs``/``top_logprobs``), they give the
per-label scores and decide when the reply itself is not a label.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import time
import urllib.error
import urllib.request
from typing import Any

from ace_core.errors import ConfigError
from ace_core.llm.backend import NOT_SCORED, LLMError, check_generation, check_labels, check_messages
from ace_core.llm.observe import observed

ENV_BASE_URL = "GRIDACE_LLM_BASE_URL"
ENV_MODEL = "GRIDACE_LLM_MODEL"
ENV_API_KEY = "GRIDACE_LLM_API_KEY"
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_BACKOFF_SECONDS = 30.0
TOP_LOGPROBS = 20  # the largest value OpenAI and vLLM's default accept
_WRAPPERS = "`'\"*([ "
_TRAILERS = "`'\"*)]:.,;! "


class HTTPStatusError(LLMError):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class OpenAICompatBackend:
    """Chat and choice scoring through ``POST {base_url}/chat/completions``."""

    supports_finetuning = False
    adapter_version = ""

    def __init__(
        self,
        base_url: str = "",
        model: str = "",
        api_key: str = "",
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        logprobs: bool = True,
        choose_max_tokens: int = 0,
    ) -> None:
        base_url = (base_url or os.environ.get(ENV_BASE_URL, "")).strip().rstrip("/")
        if not base_url:
            raise ConfigError(
                f"no server URL for the openai backend: pass base_url or set {ENV_BASE_URL}, "
                "e.g. http://localhost:8000/v1 (vLLM) or http://localhost:11434/v1 (Ollama)"
            )
        if not re.match(r"^https?://[^/]+", base_url):
            raise ConfigError(
                f"base_url={base_url!r} is not accepted; give an http:// or https:// URL ending in /v1"
            )
        # Accept the full endpoint too: people paste what their server's docs show.
        self.base_url = re.sub(r"/chat/completions$", "", base_url)
        self._api_key = api_key or os.environ.get(ENV_API_KEY, "")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError(f"timeout={timeout!r} is not accepted; give seconds > 0")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or not 0 <= max_retries <= 10:
            raise ConfigError(f"max_retries={max_retries!r} is out of range; accepted: 0 to 10")
        if not isinstance(backoff, int | float) or not 0 <= backoff <= MAX_BACKOFF_SECONDS:
            raise ConfigError(
                f"backoff={backoff!r} is out of range; accepted: 0 to {MAX_BACKOFF_SECONDS} seconds"
            )
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.logprobs = bool(logprobs)
        if (
            isinstance(choose_max_tokens, bool)
            or not isinstance(choose_max_tokens, int)
            or choose_max_tokens < 0
        ):
            raise ConfigError(
                f"choose_max_tokens={choose_max_tokens!r} is not accepted; 0 (automatic) or more"
            )
        self.choose_max_tokens = choose_max_tokens
        self.model = (model or os.environ.get(ENV_MODEL, "")).strip() or self._served_model()
        self.name = self.model

    def __repr__(self) -> str:  # never shows the API key
        return f"OpenAICompatBackend(base_url={self.base_url!r}, model={self.model!r})"

    @observed("openai")
    def chat(self, messages: list[dict], *, max_new_tokens: int, temperature: float = 0.0) -> str:
        check_generation(max_new_tokens, temperature)
        payload = {
            "model": self.model,
            "messages": check_messages(messages),
            "max_tokens": max_new_tokens,
            "temperature": float(temperature),
        }
        return _reply_text(self._request("/chat/completions", payload), self.model).strip()

    @observed("openai")
    def choose(self, messages: list[dict], labels: list[str]) -> tuple[int, list[float]]:
        labels = check_labels(labels)
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": check_messages(messages),
            # Room for the label and a little punctuation; a chatty model gets cut off early.
            "max_tokens": self.choose_max_tokens or min(64, 8 + max(len(label) for label in labels)),
            "temperature": 0.0,
        }
        data = None
        if self.logprobs:
            try:
                data = self._request(
                    "/chat/completions", payload | {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
                )
            except HTTPStatusError as error:
                if error.status not in (400, 422):
                    raise
        if data is None:
            data = self._request("/chat/completions", payload)
            self.logprobs = False  # the request without logprobs worked: this server rejects them
        text = _reply_text(data, self.model)
        scores = _label_logprobs(data, labels)
        index = parse_label(text, labels)
        if index is None:
            if max(scores) <= NOT_SCORED:
                raise LLMError(
                    f"{self.model} answered {text.strip()!r:.200}, which is none of the labels {labels}, "
                    "and the server returned no log-probabilities for them"
                )
            index = max(range(len(labels)), key=lambda i: scores[i])
        elif max(scores) <= NOT_SCORED:
            scores[index] = 0.0  # only the reply is known: log 1 for it, unscored for the others
        return index, scores

    # --- HTTP ---

    def _served_model(self) -> str:
        """The first model the server lists: vLLM and llama.cpp serve exactly one."""
        try:
            data = self._request("/models", None)
            return str(data["data"][0]["id"])
        except (LLMError, KeyError, IndexError, TypeError) as error:
            raise LLMError(
                f"no model name given (pass model or set {ENV_MODEL}) and {self.base_url}/models "
                f"did not name one: {error}"
            ) from error

    def _request(self, path: str, payload: dict | None) -> dict:
        url = self.base_url + path
        body = json.dumps(payload).encode() if payload is not None else None
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        attempts = self.max_retries + 1
        failure = ""
        for attempt in range(attempts):
            delay = 0.0
            request = urllib.request.Request(
                url, data=body, headers=headers, method="POST" if body else "GET"
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as error:
                detail = _error_detail(error)
                if error.code not in RETRY_STATUSES:
                    raise HTTPStatusError(
                        f"{url} answered HTTP {error.code}: {detail}", error.code
                    ) from error
                failure = f"HTTP {error.code}: {detail}"
                delay = _retry_after(error)
            except urllib.error.URLError as error:
                failure = f"cannot connect: {error.reason}"
            except TimeoutError:
                failure = f"no answer within the {self.timeout:g} s timeout"
            except (ConnectionError, http.client.HTTPException) as error:
                failure = f"connection broken ({type(error).__name__}: {error})"
            else:
                try:
                    data = json.loads(raw)
                except ValueError:
                    raise LLMError(f"{url} answered with a body that is not JSON: {raw[:200]!r}") from None
                if not isinstance(data, dict):
                    raise LLMError(f"{url} answered with JSON that is not an object: {raw[:200]!r}")
                return data
            if attempt + 1 < attempts:
                time.sleep(min(MAX_BACKOFF_SECONDS, max(delay, self.backoff * 2**attempt)))
        raise LLMError(f"{url} gave no usable answer after {attempts} attempt(s); last: {failure}")


def parse_label(text: str, labels: list[str]) -> int | None:
    """Index of the label ``text`` names, or None. Strict: the reply must be the label itself.

    Accepted around it: whitespace, quotes, backticks, bold stars, brackets and trailing
    punctuation (``B``, ``"B"``, ``(B)``, ``B.``, ``**B**``), or the label followed by a separator
    and more words (``B) split substation 5``). ``Answer: B``, ``B split`` or ``I choose B`` are not
    accepted, even when ``I`` is a label.
    """
    candidate = text.strip().lstrip(_WRAPPERS).rstrip(_TRAILERS)
    bare = [label.rstrip(_TRAILERS) for label in labels]  # text labels end with a full stop
    if bare.count(candidate) == 1:
        return bare.index(candidate)
    folded = [label.casefold() for label in bare]
    if folded.count(candidate.casefold()) == 1:
        return folded.index(candidate.casefold())
    # the label, then a separator before any more words: "B) split ..." yes, "I would ..." no (with
    # nine options or more, "I" is a label and a chatty reply's first word)
    first = re.match(r"([^\s`'\"*)\].,:;!]+)[)\].,:;!]", candidate)
    if first and first.group(1) in labels:
        return labels.index(first.group(1))
    return None


def _reply_text(data: dict, model: str) -> str:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMError(
            f"{model}: the answer has no choices[0].message.content: {json.dumps(data)[:300]}"
        ) from None
    if not isinstance(content, str):
        raise LLMError(
            f"{model}: message content is {type(content).__name__}, not text: {json.dumps(data)[:300]}"
        )
    return content


def _label_logprobs(data: dict, labels: list[str]) -> list[float]:
    """Each label's log-probability as the first reply token, from the server's top log-probs."""
    scores = [NOT_SCORED] * len(labels)
    try:
        top = data["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        entries = [(str(entry["token"]).strip(), float(entry["logprob"])) for entry in top]
    except (KeyError, IndexError, TypeError, ValueError):
        return scores
    for i, label in enumerate(labels):
        # " B" and "B" are different tokens naming the same label: add their probabilities.
        matches = [logprob for token, logprob in entries if token == label and math.isfinite(logprob)]
        if matches:
            peak = max(matches)
            scores[i] = peak + math.log(sum(math.exp(m - peak) for m in matches))
    return scores


def _error_detail(error: urllib.error.HTTPError) -> str:
    try:
        raw = error.read()
    except (OSError, http.client.HTTPException):
        return error.reason or ""
    try:
        data = json.loads(raw)
        message = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(message, dict):
            message = message.get("message", message)
        return str(message)[:300]
    except ValueError:
        return raw[:300].decode("utf-8", "replace")


def _retry_after(error: urllib.error.HTTPError) -> float:
    value = error.headers.get("Retry-After", "") if error.headers else ""
    try:
        return min(MAX_BACKOFF_SECONDS, max(0.0, float(value)))
    except ValueError:
        return 0.0

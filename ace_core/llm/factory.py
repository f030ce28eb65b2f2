"""Build an LLM backend from configuration (``--llm local|openai``, ``--llm-model``), not code.

``make_backend("local")`` gives the offline default (SmolLM2-135M-Instruct, converted on first use);
``make_backend("local", "Qwen/Qwen2.5-7B-Instruct", device="cuda")`` a bigger model on a GPU;
``make_backend("openai", "qwen2.5-7b", base_url="http://gpu-box:8000/v1")`` a vLLM server.
"""

from __future__ import annotations

import inspect
from typing import Any

from ace_core.errors import ConfigError
from ace_core.llm.backend import LLMBackend

BACKEND_KINDS = ("local", "openai")


def make_backend(kind: str, model: str = "", **options: Any) -> LLMBackend:
    """An LLM backend of ``kind`` for ``model`` (empty: the offline default / the server's model).

    ``options`` go to the backend's constructor: for local ``gguf_file``, ``adapter``, ``device``,
    ``dtype``, ``threads``; for openai ``base_url``, ``api_key``, ``timeout``, ``max_retries``, ...
    """
    if kind == "local":
        from ace_core.llm.local import LocalBackend

        _check_options(LocalBackend, options, kind)
        if not model:
            from ace_core.llm.default_model import default_model_path

            model = str(default_model_path())
        return LocalBackend(model, **options)
    if kind == "openai":
        from ace_core.llm.openai_compat import OpenAICompatBackend

        _check_options(OpenAICompatBackend, options, kind)
        return OpenAICompatBackend(model=model, **options)
    raise ConfigError(f"unknown LLM backend kind {kind!r}; accepted: {', '.join(BACKEND_KINDS)}")


def _check_options(cls: type, options: dict[str, Any], kind: str) -> None:
    accepted = sorted(name for name in inspect.signature(cls).parameters if name != "model")
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(
            f"unknown option(s) {unknown} for the {kind} backend; accepted: {', '.join(accepted)}"
        )

"""make_backend: the backend comes from configuration; bad settings say what is accepted."""

from __future__ import annotations

import pytest

from ace_core.errors import ConfigError
from ace_core.llm.backend import LLMBackend
from ace_core.llm.factory import BACKEND_KINDS, make_backend
from ace_core.llm.local import LocalBackend
from ace_core.llm.openai_compat import OpenAICompatBackend


def test_local_backend_from_a_folder(tiny_model_dir, grid_prompt):
    backend = make_backend("local", str(tiny_model_dir), threads=1)
    assert isinstance(backend, LocalBackend) and isinstance(backend, LLMBackend)
    assert backend.choose(grid_prompt, ["A", "B"])[0] in (0, 1)


def test_openai_backend_from_settings(chat_server):
    backend = make_backend("openai", "served", base_url=chat_server.url, timeout=2.0)
    assert isinstance(backend, OpenAICompatBackend) and isinstance(backend, LLMBackend)
    assert backend.name == "served" and backend.timeout == 2.0


def test_unknown_kind_lists_the_accepted_ones():
    assert BACKEND_KINDS == ("local", "openai")
    with pytest.raises(ConfigError, match="unknown LLM backend kind 'vllm'; accepted: local, openai"):
        make_backend("vllm")


def test_unknown_options_list_the_accepted_ones(tiny_model_dir):
    with pytest.raises(
        ConfigError, match=r"unknown option\(s\) \['gpu'\] for the local backend; accepted: .*device"
    ):
        make_backend("local", str(tiny_model_dir), gpu=True)
    with pytest.raises(
        ConfigError, match=r"unknown option\(s\) \['device'\] for the openai backend; accepted: .*base_url"
    ):
        make_backend("openai", "m", base_url="http://localhost:1/v1", device="cuda")

"""The offline default model: locating the packaged GGUF, atomic conversion, and (slow) the real model."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from ace_core.errors import ConfigError
from ace_core.llm import default_model
from ace_core.llm.default_model import GGUF_NAME, SOURCE_FILE, cache_dir, convert_gguf, default_model_path


def test_the_packaged_gguf_is_found_without_importing_the_package():
    path = default_model.packaged_gguf_path()
    assert path.name == GGUF_NAME and path.stat().st_size > 50_000_000


def test_cache_dir_is_configurable(monkeypatch, tmp_path):
    monkeypatch.setenv("GRIDACE_CACHE_DIR", str(tmp_path))
    assert cache_dir() == tmp_path
    monkeypatch.delenv("GRIDACE_CACHE_DIR")
    assert cache_dir().parts[-2:] == (".cache", "gridace")


def test_a_converted_folder_is_reused(monkeypatch, tmp_path):
    folder = tmp_path / "models" / default_model.FOLDER_NAME
    folder.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", SOURCE_FILE):
        (folder / name).write_text("{}")
    monkeypatch.setenv("GRIDACE_CACHE_DIR", str(tmp_path))
    assert default_model_path() == folder


def test_a_half_written_folder_is_refused(tmp_path):
    folder = tmp_path / "models" / default_model.FOLDER_NAME
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="is not a converted model .* delete it"):
        default_model_path(tmp_path)


def test_a_failed_conversion_leaves_nothing(tmp_path):
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"not a gguf file")
    target = tmp_path / "out" / "model"
    target.parent.mkdir()
    with pytest.raises(Exception):  # noqa: B017 - whatever gguf raises, nothing may be left behind
        convert_gguf(bogus, target)
    assert list(target.parent.iterdir()) == []


def shared_cache() -> Path:
    """Where the slow test keeps the converted model across sessions.

    The session-wide GRIDACE_CACHE_DIR is private and new every run, and converting costs 40-100 s.
    The converted folder depends only on the installed wheel, so sharing it is safe.
    """
    configured = os.environ.get("GRIDACE_TEST_CACHE_DIR", "").strip()
    return Path(configured) if configured else Path.home() / ".cache" / "gridace"


@pytest.mark.slow
def test_the_real_default_model_chats_and_chooses(monkeypatch, tmp_path):
    from ace_core.llm.factory import make_backend

    converted = default_model_path(shared_cache())  # converts on first use, then returns at once
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / default_model.FOLDER_NAME).symlink_to(converted)
    monkeypatch.setenv("GRIDACE_CACHE_DIR", str(tmp_path))

    backend = make_backend("local")  # an empty model name means the offline default
    assert backend.name == "SmolLM2-135M-Instruct"
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    assert "paris" in backend.chat(messages, max_new_tokens=8).lower()
    question = [
        {
            "role": "user",
            "content": "Line 4 is overloaded.\nA) split substation 5\nB) reconnect line 7\nC) do nothing\n"
            "Answer with the letter only.",
        }
    ]
    index, scores = backend.choose(question, ["A", "B", "C"])
    assert index in (0, 1, 2) and len(scores) == 3
    assert all(math.isfinite(s) and s < 0 for s in scores)
    assert sum(math.exp(s) for s in scores) <= 1.0 + 1e-6

"""LocalBackend on a tiny random Llama: chat, choice scoring, adapters, errors."""

from __future__ import annotations

import math

import pytest
import torch

from ace_core.errors import AceError, ConfigError
from ace_core.llm import local
from ace_core.llm.backend import LLMBackend, LLMError
from ace_core.llm.local import LocalBackend


def brute_force_scores(backend: LocalBackend, messages: list[dict], labels: list[str]) -> list[float]:
    """log p(label | prompt) from full logits over prompt + label: the slow, obvious way."""
    prompt = backend.render(messages)
    prompt_ids = backend.encode(prompt)
    scores = []
    for label in labels:
        ids = backend.continuation_ids(prompt, prompt_ids, label)
        with torch.no_grad():
            logits = backend.model(input_ids=torch.tensor([prompt_ids + ids])).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        start = len(prompt_ids) - 1
        scores.append(sum(float(logprobs[start + i, token]) for i, token in enumerate(ids)))
    return scores


def test_backend_meets_the_protocol(tiny_backend):
    assert isinstance(tiny_backend, LLMBackend)
    assert tiny_backend.supports_finetuning
    assert tiny_backend.adapter_version == ""
    assert tiny_backend.name == tiny_backend.source.rsplit("/", 1)[-1]


def test_chat_is_deterministic_and_bounded(tiny_backend, grid_prompt):
    first = tiny_backend.chat(grid_prompt, max_new_tokens=6)
    again = tiny_backend.chat(grid_prompt, max_new_tokens=6)
    longer = tiny_backend.chat(grid_prompt, max_new_tokens=12)
    assert isinstance(first, str) and first
    assert first == again
    # Greedy decoding: a bigger budget extends the same text (a cut may end mid-character).
    assert longer.startswith(first.rstrip("\ufffd")) and len(longer) > len(first)


def test_chat_continues_an_assistant_prefill(tiny_backend, grid_prompt):
    prefill = grid_prompt + [{"role": "assistant", "content": '{"action": '}]
    rendered = tiny_backend.render(prefill)
    assert rendered.endswith('<|im_start|>assistant\n{"action": ')
    assert not rendered.endswith("<|im_end|>\n")


def test_choose_scores_match_full_computation(tiny_backend, grid_prompt):
    # Multi-token labels exercise the KV-cache path, single ones the first-token path.
    labels = ["A", "B", "substation 12 split", "reconnect line 7"]
    index, scores = tiny_backend.choose(grid_prompt, labels)
    expected = brute_force_scores(tiny_backend, grid_prompt, labels)
    assert len(scores) == len(labels)
    assert scores == pytest.approx(expected, abs=1e-4)
    assert index == max(range(len(labels)), key=lambda i: expected[i])
    assert all(math.isfinite(s) and s < 0 for s in scores)


def test_choose_never_computes_logits_over_the_prompt(tiny_backend, grid_prompt):
    positions = []
    handle = tiny_backend.model.lm_head.register_forward_hook(
        lambda m, args, out: positions.append(out.shape[1])
    )
    try:
        tiny_backend.choose(grid_prompt, ["A", "B", "C"])
        single = list(positions)
        positions.clear()
        tiny_backend.choose(grid_prompt, ["A", "substation 12 split", "reconnect line 7"])
    finally:
        handle.remove()
    assert single == [1]
    prompt_length = len(tiny_backend.encode(tiny_backend.render(grid_prompt)))
    assert len(positions) == 2  # the prompt's last position, then every label's tail in one pass
    assert max(positions) < 10 < prompt_length


def test_choose_without_a_repeatable_cache_recomputes_the_prompt(tiny_backend, grid_prompt, monkeypatch):
    labels = ["A", "substation 12 split", "reconnect line 7"]
    monkeypatch.setattr(local, "_repeat", lambda cache, times, length: False)
    _, scores = tiny_backend.choose(grid_prompt, labels)
    assert scores == pytest.approx(brute_force_scores(tiny_backend, grid_prompt, labels), abs=1e-4)


def test_choose_rejects_bad_labels_and_messages(tiny_backend, grid_prompt):
    with pytest.raises(LLMError, match="distinct"):
        tiny_backend.choose(grid_prompt, ["A", "A"])
    with pytest.raises(LLMError, match="non-empty"):
        tiny_backend.choose(grid_prompt, [])
    with pytest.raises(LLMError, match="role 'robot'; accepted: system, user, assistant"):
        tiny_backend.chat([{"role": "robot", "content": "hi"}], max_new_tokens=2)
    with pytest.raises(LLMError, match="max_new_tokens"):
        tiny_backend.chat(grid_prompt, max_new_tokens=0)


def test_too_long_prompt_is_an_llm_error(tiny_backend):
    long_prompt = [{"role": "user", "content": "line 4 is overloaded " * 200}]
    with pytest.raises(LLMError, match="at most 512"):
        tiny_backend.chat(long_prompt, max_new_tokens=4)
    assert issubclass(LLMError, AceError)


def test_sampling_with_temperature_returns_text(tiny_backend, grid_prompt):
    torch.manual_seed(1)
    text = tiny_backend.chat(grid_prompt, max_new_tokens=5, temperature=1.0)
    assert isinstance(text, str)


def test_loading_errors_say_what_is_accepted(tmp_path, tiny_model_dir):
    with pytest.raises(ConfigError, match="cannot load model .*downloads are off"):
        LocalBackend(tmp_path / "missing")
    with pytest.raises(ConfigError, match="choose cpu, cuda or cuda:N"):
        LocalBackend(tiny_model_dir, device="tpu")
    with pytest.raises(ConfigError, match="threads"):
        LocalBackend(tiny_model_dir, threads=0)
    with pytest.raises(ConfigError, match="not a LoRA adapter folder"):
        LocalBackend(tiny_model_dir, adapter=tmp_path)


def test_adapter_swap_and_removal(tiny_model_dir, tiny_backend, grid_prompt, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    # Two adapters with non-zero weights (a fresh LoRA is a no-op: lora_B starts at zero).
    paths = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        model = get_peft_model(
            AutoModelForCausalLM.from_pretrained(tiny_model_dir),
            LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
        )
        paths.append(tmp_path / f"adapter-000{seed}")
        model.save_pretrained(paths[-1])
    labels = ["A", "B", "C", "reconnect line 7"]
    _, base_scores = tiny_backend.choose(grid_prompt, labels)

    with_first = LocalBackend(tiny_model_dir, adapter=paths[0])
    assert with_first.adapter_version == "adapter-0001"
    _, first_scores = with_first.choose(grid_prompt, labels)
    assert first_scores != pytest.approx(base_scores, abs=1e-3)

    with_first.load_adapter(paths[1])
    assert with_first.adapter_version == "adapter-0002"
    _, second_scores = with_first.choose(grid_prompt, labels)
    fresh_second = LocalBackend(tiny_model_dir, adapter=paths[1]).choose(grid_prompt, labels)[1]
    assert second_scores == pytest.approx(fresh_second, abs=1e-5)
    assert second_scores != pytest.approx(first_scores, abs=1e-3)

    with_first.load_adapter(None)
    assert with_first.adapter_version == ""
    assert with_first.choose(grid_prompt, labels)[1] == pytest.approx(base_scores, abs=1e-5)

"""LoRA fine-tuning on the tiny model: loss only on answers, versioned atomic adapters, resume."""

from __future__ import annotations

import json

import pytest
import torch

from ace_core.errors import ConfigError
from ace_core.llm.local import LocalBackend
from ace_core.llm.lora import (
    METADATA_FILE,
    FinetuneConfig,
    FinetuneStopped,
    export_jsonl,
    finetune,
    latest_adapter,
)

LABELS = ["A", "B", "C"]
FAST = FinetuneConfig(lr=1e-2, epochs=6, batch_size=4, eval_samples=0)


def prompts(count: int) -> list[list[dict]]:
    return [
        [
            {"role": "system", "content": "You are a power grid operator assistant."},
            {
                "role": "user",
                "content": f"line {i} is overloaded with rho 1.{10 + i}.\nA split substation {i}\n"
                f"B reconnect line {i + 1}\nC do nothing\nanswer with the letter only:",
            },
        ]
        for i in range(count)
    ]


def least_likely(backend: LocalBackend, messages: list[dict]) -> str:
    _, scores = backend.choose(messages, LABELS)
    return LABELS[min(range(len(LABELS)), key=lambda i: scores[i])]


def test_finetune_teaches_the_answer_and_switches_the_backend(tiny_backend, tmp_path):
    train = prompts(8)
    target = least_likely(tiny_backend, train[0])
    held_out = prompts(10)[9]
    result = finetune(tiny_backend, [(m, target) for m in train], tmp_path / "adapters", FAST)

    assert result.loss_after < result.loss_before / 2
    assert result.steps == 12 and len(result.losses) == 12
    assert result.adapter_path == tmp_path / "adapters" / "adapter-0001"
    assert (result.adapter_path / "adapter_config.json").is_file()
    assert tiny_backend.adapter_version == "adapter-0001"
    assert LABELS[tiny_backend.choose(held_out, LABELS)[0]] == target
    metadata = json.loads((result.adapter_path / METADATA_FILE).read_text())
    assert metadata["loss_after"] == pytest.approx(result.loss_after)
    assert metadata["config"]["r"] == 8
    # Only the finished adapter is in the folder: no temporary leftovers.
    assert [p.name for p in (tmp_path / "adapters").iterdir()] == ["adapter-0001"]


def test_saved_adapter_loads_in_a_new_backend(tiny_model_dir, tiny_backend, tmp_path):
    train = prompts(8)
    target = least_likely(tiny_backend, train[0])
    result = finetune(tiny_model_dir, [(m, target) for m in train], tmp_path, FAST)
    base = LocalBackend(tiny_model_dir)
    tuned = LocalBackend(tiny_model_dir, adapter=result.adapter_path)
    assert LABELS[base.choose(train[3], LABELS)[0]] != target
    assert LABELS[tuned.choose(train[3], LABELS)[0]] == target
    assert tuned.chat(train[3], max_new_tokens=3).startswith(target)


def test_loss_is_the_answer_token_cross_entropy(tiny_backend, tmp_path):
    # Different prompt and answer lengths in one batch: left padding must not change the loss.
    samples = [(m, answer) for m, answer in zip(prompts(3), ["A", "B reconnect line 2", "C"], strict=True)]
    expected_sum, expected_count = 0.0, 0
    for messages, answer in samples:
        prompt = tiny_backend.render(messages)
        full = tiny_backend.tokenizer.apply_chat_template(
            messages + [{"role": "assistant", "content": answer}], tokenize=False
        )
        prompt_ids, full_ids = tiny_backend.encode(prompt), tiny_backend.encode(full)
        labels = [-100] * len(prompt_ids) + full_ids[len(prompt_ids) :]
        with torch.no_grad():
            loss = tiny_backend.model(input_ids=torch.tensor([full_ids]), labels=torch.tensor([labels])).loss
        count = len(full_ids) - len(prompt_ids)
        expected_sum, expected_count = expected_sum + float(loss) * count, expected_count + count

    config = FinetuneConfig(max_steps=1, batch_size=3, eval_samples=0, lr=1e-7)
    result = finetune(tiny_backend, samples, tmp_path, config)
    assert result.loss_before == pytest.approx(expected_sum / expected_count, rel=1e-4)


def test_versions_increase_and_resume_continues_the_last_adapter(tiny_backend, tmp_path):
    train = prompts(8)
    samples = [(m, least_likely(tiny_backend, train[0])) for m in train]
    first = finetune(tiny_backend, samples, tmp_path, FAST)
    second = finetune(tiny_backend, samples, tmp_path, FinetuneConfig(lr=1e-2, max_steps=1, eval_samples=0))
    assert second.adapter_path.name == "adapter-0002"
    assert second.base_adapter == "adapter-0001"
    assert second.loss_before == pytest.approx(first.loss_after, rel=1e-3)
    assert latest_adapter(tmp_path) == second.adapter_path
    fresh = finetune(
        tiny_backend, samples, tmp_path, FinetuneConfig(max_steps=1, resume=False, eval_samples=0)
    )
    assert fresh.base_adapter == "" and fresh.loss_before > first.loss_after * 2


def test_activation_checkpointing_trains_the_same(tiny_model_dir, tmp_path):
    samples = [(m, "B") for m in prompts(4)]
    plain = finetune(tiny_model_dir, samples, tmp_path, FinetuneConfig(max_steps=3, lr=1e-2, dropout=0.0))
    backend = LocalBackend(tiny_model_dir)
    checkpointed = finetune(
        backend,
        samples,
        tmp_path,
        FinetuneConfig(max_steps=3, lr=1e-2, dropout=0.0, activation_checkpointing=True),
    )
    assert checkpointed.losses == pytest.approx(plain.losses, rel=1e-4)
    assert not backend.model.get_base_model().is_activation_checkpointing


def test_stopping_writes_nothing_and_keeps_the_backend(tiny_backend, tmp_path, grid_prompt):
    train = prompts(4)
    first = finetune(tiny_backend, [(m, "B") for m in train], tmp_path, FinetuneConfig(max_steps=2, lr=1e-2))
    before = tiny_backend.choose(grid_prompt, LABELS)[1]
    steps = []
    with pytest.raises(FinetuneStopped, match="after 1 of"):
        finetune(
            tiny_backend,
            [(m, "C") for m in train],
            tmp_path,
            FinetuneConfig(epochs=3, batch_size=1, lr=1e-2),
            progress=lambda step, total, loss: steps.append((step, total)),
            should_stop=lambda: len(steps) >= 1,
        )
    assert steps == [(1, 12)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter-0001"]
    assert tiny_backend.adapter_path == first.adapter_path
    assert tiny_backend.choose(grid_prompt, LABELS)[1] == pytest.approx(before, abs=1e-5)


def test_bad_settings_are_config_errors(tiny_backend, tmp_path, grid_prompt):
    with pytest.raises(ConfigError, match="FinetuneConfig.r=0 is out of range"):
        finetune(tiny_backend, [(grid_prompt, "A")], tmp_path, FinetuneConfig(r=0))
    with pytest.raises(ConfigError, match="at least one"):
        finetune(tiny_backend, [], tmp_path)
    with pytest.raises(ConfigError, match="empty or non-string answer"):
        finetune(tiny_backend, [(grid_prompt, " ")], tmp_path)
    with pytest.raises(ConfigError, match="Linear layers of this model: .*q_proj"):
        finetune(tiny_backend, [(grid_prompt, "A")], tmp_path, FinetuneConfig(target_modules=("attn_qkv",)))
    # The failed round left the backend usable and the folder empty.
    assert tiny_backend.choose(grid_prompt, LABELS)[0] in range(3)
    assert list(tmp_path.iterdir()) == []


def test_long_prompts_keep_the_answer(tiny_backend, tmp_path):
    long_messages = [{"role": "user", "content": "line 4 is overloaded " * 40}]
    result = finetune(
        tiny_backend, [(long_messages, "yes")], tmp_path, FinetuneConfig(max_length=32, max_steps=1)
    )
    assert result.truncated == 1 and result.steps == 1


def test_export_jsonl_for_servers(tmp_path, grid_prompt):
    path = export_jsonl([(grid_prompt, "B"), (grid_prompt, "C")], tmp_path / "ft" / "samples.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["messages"][-1] for line in lines] == [
        {"role": "assistant", "content": "B"},
        {"role": "assistant", "content": "C"},
    ]
    assert lines[0]["messages"][:-1] == grid_prompt
    assert sorted(p.name for p in path.parent.iterdir()) == ["samples.jsonl"]


def test_a_server_backend_cannot_be_finetuned(chat_server, tmp_path, grid_prompt):
    from ace_core.llm.openai_compat import OpenAICompatBackend

    backend = OpenAICompatBackend(chat_server.url, "served")
    with pytest.raises(ConfigError, match="cannot be fine-tuned here.*export_jsonl"):
        finetune(backend, [(grid_prompt, "A")], tmp_path)

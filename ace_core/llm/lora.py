"""LoRA fine-tuning of the local LLM on (chat prompt -> answer) pairs, with peft.

ACE fine-tunes the LLM every ~100 accepted refinements on the best samples of the mixed buffer
(prompt -> chosen action). :func:`finetune` trains a LoRA adapter on the backend's own weights,
with the loss only on the answer tokens (prompt tokens are labelled -100 and, for speed, their
logits are never computed), saves it with ``save_pretrained`` as ``out_dir/adapter-0001``,
``adapter-0002``, ... and switches the backend to it. Adapters appear atomically (written beside,
then renamed). Servers behind :class:`~ace_core.llm.openai_compat.OpenAICompatBackend` cannot be
trained from here; :func:`export_jsonl` writes the same samples in the OpenAI fine-tuning format.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ace_core.config.sections import FinetuneConfig
from ace_core.errors import AceError, ConfigError
from ace_core.llm.backend import LLMBackend, check_messages
from ace_core.llm.local import LocalBackend

Sample = tuple[list[dict], str]
"""A chat prompt (messages) and the answer the model should give to it."""

ADAPTER_PATTERN = re.compile(r"^adapter-(\d{4,})$")
METADATA_FILE = "gridace_finetune.json"


@dataclass
class FinetuneResult:
    """What one fine-tuning round produced (also saved as gridace_finetune.json in the adapter)."""

    adapter_path: Path
    """folder of the new adapter, loadable with PeftModel.from_pretrained or LocalBackend(adapter=...)"""
    loss_before: float
    """mean answer-token cross-entropy on the evaluation samples before training"""
    loss_after: float
    """the same after training"""
    steps: int
    """optimizer steps taken"""
    seconds: float
    """wall time of the round, evaluation and saving included"""
    samples: int = 0
    """training samples"""
    truncated: int = 0
    """samples whose prompt was cut to fit max_length"""
    base_adapter: str = ""
    """adapter the round started from (resume), empty for a fresh LoRA"""
    losses: list[float] = field(default_factory=list)
    """training loss of each step"""


class FinetuneStopped(AceError):
    """Fine-tuning was stopped on request; no adapter was written and the backend is unchanged."""


@dataclass
class _Encoded:
    prompt_ids: list[int]
    answer_ids: list[int]
    truncated: bool


def finetune(
    backend_or_model_path: LLMBackend | str | Path,
    samples: Sequence[Sample],
    out_dir: Path,
    config: FinetuneConfig | None = None,
    *,
    progress: Callable[[int, int, float], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> FinetuneResult:
    """Train a LoRA adapter on ``samples`` and save it as the next ``out_dir/adapter-NNNN``.

    Given a :class:`LocalBackend`, its own weights are trained and, on success, the backend uses
    the new adapter; on failure it keeps the adapter it had. Given a model path, that model is
    loaded for the round only. ``progress(step, total_steps, loss)`` is called after each step;
    when ``should_stop()`` turns true, training ends with :class:`FinetuneStopped`. The backend
    must not serve chat or choose calls from another thread meanwhile: its weights are in training.
    """
    started = time.perf_counter()
    config = (config or FinetuneConfig()).validate()
    samples = _check_samples(samples)
    backend = _local_backend(backend_or_model_path)
    out_dir = Path(out_dir)
    encoded = [_encode(backend, messages, answer, config.max_length) for messages, answer in samples]
    evaluation = encoded[: config.eval_samples] if config.eval_samples else encoded
    previous = backend.adapter_path
    base_adapter = previous.name if (config.resume and previous) else ""

    backend.load_adapter(None)
    base = backend.model
    model = None
    new_path: Path | None = None
    try:
        if config.activation_checkpointing:
            # Non-reentrant checkpointing needs no grad-requiring inputs: the embeddings stay frozen.
            base.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        model = _trainable(base, config, previous if config.resume else None)
        loss_before = _mean_loss(model, evaluation, backend, config.batch_size)
        losses = _train(model, encoded, backend, config, progress, should_stop)
        loss_after = _mean_loss(model, evaluation, backend, config.batch_size)
        result = FinetuneResult(
            adapter_path=Path(),
            loss_before=loss_before,
            loss_after=loss_after,
            steps=len(losses),
            seconds=0.0,
            samples=len(encoded),
            truncated=sum(e.truncated for e in encoded),
            base_adapter=base_adapter,
            losses=losses,
        )
        new_path = _save(model, out_dir, result, config, backend.name, started)
        result.adapter_path = new_path
        result.seconds = time.perf_counter() - started
        return result
    finally:
        # unload() strips the LoRA layers from `base` in place, leaving the pristine weights.
        if model is not None:
            model.unload()
        if config.activation_checkpointing:
            base.activation_checkpointing_disable()
        base.eval()
        backend.load_adapter(new_path or previous)


def export_jsonl(samples: Sequence[Sample], path: Path) -> Path:
    """Write samples as OpenAI chat fine-tuning JSONL (one {"messages": [...]} per line), atomically."""
    samples = _check_samples(samples)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False)
    try:
        with handle:
            for messages, answer in samples:
                record = {"messages": check_messages(messages) + [{"role": "assistant", "content": answer}]}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return path


def latest_adapter(out_dir: Path) -> Path | None:
    """The newest ``adapter-NNNN`` folder in ``out_dir``, or None."""
    versions = _versions(Path(out_dir))
    return Path(out_dir) / f"adapter-{max(versions):04d}" if versions else None


# --- internals ---


def _local_backend(backend_or_model_path: LLMBackend | str | Path) -> LocalBackend:
    if isinstance(backend_or_model_path, LocalBackend):
        return backend_or_model_path
    if isinstance(backend_or_model_path, str | Path):
        return LocalBackend(backend_or_model_path, threads=None)
    name = getattr(backend_or_model_path, "name", type(backend_or_model_path).__name__)
    raise ConfigError(
        f"backend {name!r} ({type(backend_or_model_path).__name__}) cannot be fine-tuned here; accepted: a "
        "LocalBackend or a model folder. For a server, export the samples with export_jsonl"
    )


def _check_samples(samples: Sequence[Sample]) -> list[Sample]:
    if not samples:
        raise ConfigError("fine-tuning needs at least one (messages, answer) sample; got none")
    checked = []
    for i, sample in enumerate(samples):
        if not isinstance(sample, tuple | list) or len(sample) != 2:
            raise ConfigError(f"sample {i} must be a (messages, answer) pair, got {sample!r:.200}")
        messages, answer = sample
        if not isinstance(answer, str) or not answer.strip():
            raise ConfigError(f"sample {i} has an empty or non-string answer: {answer!r:.200}")
        checked.append((check_messages(messages), answer))
    return checked


def _encode(backend: LocalBackend, messages: list[dict], answer: str, max_length: int) -> _Encoded:
    """Prompt ids exactly as at inference, then the answer and the template's end of turn."""
    prompt = backend.render(messages)
    if messages[-1]["role"] == "assistant":  # a prefill: the answer continues it
        closed = messages[:-1] + [{"role": "assistant", "content": messages[-1]["content"] + answer}]
    else:
        closed = messages + [{"role": "assistant", "content": answer}]
    full = backend.tokenizer.apply_chat_template(closed, tokenize=False)
    if full.startswith(prompt) and len(full) > len(prompt) and answer.strip() in full[len(prompt) :]:
        answer_text = full[len(prompt) :]  # the answer and the end-of-turn marker the model must learn
    else:
        answer_text = answer + (backend.tokenizer.eos_token or "")
    prompt_ids = backend.encode(prompt)
    answer_ids = backend.continuation_ids(prompt, prompt_ids, answer_text)
    truncated = len(prompt_ids) + len(answer_ids) > max_length
    if truncated:
        answer_ids = answer_ids[: max_length - 1]
        prompt_ids = prompt_ids[-(max_length - len(answer_ids)) :]
    return _Encoded(prompt_ids, answer_ids, truncated)


def _trainable(base: torch.nn.Module, config: FinetuneConfig, resume_from: Path | None):
    from peft import LoraConfig, PeftModel, get_peft_model

    torch.manual_seed(config.seed)
    try:
        if resume_from is not None:
            return PeftModel.from_pretrained(base, str(resume_from), is_trainable=True)
        lora = LoraConfig(
            r=config.r,
            lora_alpha=config.alpha,
            lora_dropout=config.dropout,
            target_modules=list(config.target_modules),
            bias="none",
            task_type="CAUSAL_LM",
        )
        return get_peft_model(base, lora)
    except ValueError as error:
        linear = sorted(
            {n.rsplit(".", 1)[-1] for n, m in base.named_modules() if isinstance(m, torch.nn.Linear)}
        )
        raise ConfigError(
            f"cannot add LoRA to target_modules={list(config.target_modules)}: {error}. "
            f"Linear layers of this model: {', '.join(linear)}"
        ) from error


def _train(
    model,
    encoded: list[_Encoded],
    backend: LocalBackend,
    config: FinetuneConfig,
    progress: Callable[[int, int, float], None] | None,
    should_stop: Callable[[], bool] | None,
) -> list[float]:
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    per_epoch = -(-len(encoded) // config.batch_size)
    total = per_epoch * config.epochs
    if config.max_steps:
        total = min(total, config.max_steps)
    order_rng = random.Random(config.seed)
    losses: list[float] = []
    model.train()
    while len(losses) < total:
        order = list(range(len(encoded)))
        order_rng.shuffle(order)
        for start in range(0, len(order), config.batch_size):
            if len(losses) >= total:
                break
            if should_stop is not None and should_stop():
                raise FinetuneStopped(f"fine-tuning stopped on request after {len(losses)} of {total} steps")
            batch = [encoded[i] for i in order[start : start + config.batch_size]]
            loss_sum, count = _batch_loss(model, batch, backend)
            loss = loss_sum / count
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.detach().item())
            if progress is not None:
                progress(len(losses), total, losses[-1])
    model.eval()
    return losses


@torch.no_grad()
def _mean_loss(model, encoded: list[_Encoded], backend: LocalBackend, batch_size: int) -> float:
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(encoded), batch_size):
        loss_sum, n = _batch_loss(model, encoded[start : start + batch_size], backend)
        total, count = total + float(loss_sum), count + n
    model.train(was_training)
    return total / max(count, 1)


def _batch_loss(model, batch: list[_Encoded], backend: LocalBackend) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy over the answer tokens of a batch, and how many there were.

    Sequences are left-padded so every answer ends at the last position; the model then only
    computes logits for the last ``longest answer + 1`` positions instead of the whole prompt.
    """
    sequences = [e.prompt_ids + e.answer_ids for e in batch]
    length = max(len(s) for s in sequences)
    keep = max(len(e.answer_ids) for e in batch) + 1
    pad = backend.pad_id()
    input_ids = torch.full((len(batch), length), pad, dtype=torch.long)
    attention = torch.zeros((len(batch), length), dtype=torch.long)
    labels = torch.full((len(batch), length), -100, dtype=torch.long)
    for row, (sequence, sample) in enumerate(zip(sequences, batch, strict=True)):
        input_ids[row, length - len(sequence) :] = torch.tensor(sequence)
        attention[row, length - len(sequence) :] = 1
        labels[row, length - len(sample.answer_ids) :] = torch.tensor(sample.answer_ids)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    device = backend.device
    logits = model(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        position_ids=positions.to(device),
        logits_to_keep=keep,
        use_cache=False,
    ).logits
    # logits[:, j] (position length - keep + j) predicts the token at position length - keep + j + 1.
    targets = labels[:, length - keep + 1 :].to(device)
    loss_sum = torch.nn.functional.cross_entropy(
        logits[:, :-1].float().reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=-100,
        reduction="sum",
    )
    return loss_sum, int((targets != -100).sum())


def _versions(out_dir: Path) -> list[int]:
    if not out_dir.is_dir():
        return []
    return [int(m.group(1)) for p in out_dir.iterdir() if p.is_dir() and (m := ADAPTER_PATTERN.match(p.name))]


def _save(
    model, out_dir: Path, result: FinetuneResult, config: FinetuneConfig, model_name: str, started: float
) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".adapter-tmp-", dir=out_dir))
    try:
        model.save_pretrained(tmp)
        metadata = dataclasses.asdict(result) | {
            "adapter_path": "",
            "seconds": time.perf_counter() - started,
            "model": model_name,
            "config": dataclasses.asdict(config),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (tmp / METADATA_FILE).write_text(json.dumps(metadata, indent=2))
        tmp.chmod(0o755)
        # Another process may take a number between our listing and our rename: try the next one.
        version = max(_versions(out_dir), default=0) + 1
        for _ in range(1000):
            target = out_dir / f"adapter-{version:04d}"
            try:
                os.rename(tmp, target)
                return target
            except OSError:
                if not target.exists():
                    raise
                version += 1
        raise OSError(f"could not find a free adapter number in {out_dir}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

"""In-process LLM backend over transformers: any HF model id or folder, GGUF files, LoRA adapters.

This is the backend that can be fine-tuned (see :mod:`ace_core.llm.lora`): the ACE loop trains a
LoRA adapter every ~100 accepted refinements and swaps it in with :meth:`LocalBackend.load_adapter`.
Everything loads offline (``HF_HUB_OFFLINE=1`` and ``local_files_only``): a model id must already
be in the Hugging Face cache, or be a folder on disk.

Scoring of listed choices never computes full-vocabulary logits over the prompt: one forward pass
keeps only the last position's logits (``logits_to_keep=1``), and the few extra tokens of
multi-token labels are scored together, in one batched pass on top of the prompt's KV cache.
"""

from __future__ import annotations

import os

# Must be set before transformers / huggingface_hub read it; local_files_only below covers the
# case where they were imported earlier.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import re  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from ace_core.errors import ConfigError  # noqa: E402
from ace_core.llm.backend import LLMError, check_generation, check_labels, check_messages  # noqa: E402
from ace_core.llm.observe import observed  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_DEVICE_PATTERN = re.compile(r"^(cpu|cuda(:\d+)?)$")


class LocalBackend:
    """A causal LM loaded with transformers, optionally with a peft LoRA adapter on top.

    ``threads`` sets torch's CPU thread count for the whole process (torch has no per-model
    setting); one thread is fastest on a busy 2-core machine. ``None`` leaves it unchanged.
    """

    supports_finetuning = True

    def __init__(
        self,
        model: str | Path,
        *,
        gguf_file: str = "",
        adapter: str | Path | None = None,
        device: str = "cpu",
        dtype: str = "auto",
        threads: int | None = 1,
        offline: bool = True,
        name: str = "",
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = str(model).strip()
        if not model:
            raise ConfigError("model is empty; give an HF model id or a model folder")
        self.device = _check_device(device)
        self.dtype = _resolve_dtype(dtype, self.device)
        if threads is not None:
            if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 256:
                raise ConfigError(f"threads={threads!r} is out of range; accepted: 1 to 256, or None")
            torch.set_num_threads(threads)
        self.name = name or _model_name(model, gguf_file)
        self.source = model
        self.gguf_file = gguf_file
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=offline, **extra)
            loaded = AutoModelForCausalLM.from_pretrained(
                model, dtype=self.dtype, local_files_only=offline, **extra
            )
        except (OSError, ValueError) as error:
            raise ConfigError(
                f"cannot load model {model!r}{f' (gguf_file={gguf_file!r})' if gguf_file else ''}: {error}. "
                "Accepted: a folder with config.json and weights, a GGUF folder with gguf_file, or an HF id "
                "already in the local Hugging Face cache (downloads are off)"
            ) from error
        if not self.tokenizer.chat_template:
            raise ConfigError(
                f"model {model!r} has no chat template; use an instruction-tuned model or add "
                "chat_template.jinja to its folder"
            )
        self.model = loaded.to(self.device).eval()
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)
        self.adapter_path: Path | None = None
        self._adapter_counter = 0
        if adapter:
            self.load_adapter(adapter)

    @property
    def adapter_version(self) -> str:
        """Folder name of the adapter in use (``adapter-0003``), empty when none."""
        return self.adapter_path.name if self.adapter_path else ""

    # --- adapters ---

    def load_adapter(self, adapter: str | Path | None) -> None:
        """Use the LoRA adapter saved in folder ``adapter`` instead of the current one (None: none).

        On failure the previous adapter stays in use.
        """
        from peft import PeftModel

        if adapter is None or str(adapter) == "":
            if isinstance(self.model, PeftModel):
                # unload() strips the LoRA layers in place and hands back the untouched base model.
                self.model = self.model.unload().eval()
            self.adapter_path = None
            return
        path = Path(adapter).expanduser()
        if not (path / "adapter_config.json").is_file():
            raise ConfigError(f"{path} is not a LoRA adapter folder (no adapter_config.json)")
        self._adapter_counter += 1
        new_name = f"v{self._adapter_counter}"
        try:
            if isinstance(self.model, PeftModel):
                old_name = self.model.active_adapter
                self.model.load_adapter(str(path), adapter_name=new_name)
                self.model.set_adapter(new_name)
                self.model.delete_adapter(old_name)
            else:
                self.model = PeftModel.from_pretrained(self.model, str(path), adapter_name=new_name)
        except (OSError, ValueError, RuntimeError, KeyError) as error:
            raise ConfigError(f"cannot load adapter {path} on model {self.name!r}: {error}") from error
        self.model.eval()
        self.adapter_path = path

    # --- generation and scoring ---

    def render(self, messages: list[dict]) -> str:
        """The prompt text the model sees: the chat template, opening the assistant's turn.

        A final assistant message is continued rather than closed (a prefill such as ``{"action": ``).
        """
        messages = check_messages(messages)
        prefill = messages[-1]["role"] == "assistant"
        return self.tokenizer.apply_chat_template(
            messages,
            tokenize=False,
            add_generation_prompt=not prefill,
            continue_final_message=prefill,
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of rendered text (the template already holds any special tokens)."""
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @observed("local")
    @torch.inference_mode()
    def chat(self, messages: list[dict], *, max_new_tokens: int, temperature: float = 0.0) -> str:
        check_generation(max_new_tokens, temperature)
        prompt_ids = self._checked_ids(self.render(messages), extra=max_new_tokens)
        input_ids = torch.tensor([prompt_ids], device=self.device)
        sampling = {"do_sample": True, "temperature": float(temperature), "top_k": 0, "top_p": 1.0}
        try:
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=max_new_tokens,
                pad_token_id=self.pad_id(),
                **(sampling if temperature > 0 else {"do_sample": False}),
            )
        except RuntimeError as error:  # out of memory, device errors: the caller keeps its RL action
            raise LLMError(f"{self.name}: generation failed: {error}") from error
        return self.tokenizer.decode(output[0, len(prompt_ids) :], skip_special_tokens=True).strip()

    @observed("local")
    @torch.inference_mode()
    def choose(self, messages: list[dict], labels: list[str]) -> tuple[int, list[float]]:
        """The label with the highest log-probability as the start of the reply, and all scores.

        A label's score is the sum of its tokens' log-probabilities. Use labels that are not
        token-prefixes of one another (letters A, B, ... are): "1" would also collect the
        probability of replies starting "12".
        """
        labels = check_labels(labels)
        prompt = self.render(messages)
        prompt_ids = self._checked_ids(prompt, extra=0)
        label_ids = [self.continuation_ids(prompt, prompt_ids, label) for label in labels]
        self._checked_length(len(prompt_ids) + max(len(ids) for ids in label_ids))
        try:
            scores = self._score(prompt_ids, label_ids)
        except RuntimeError as error:
            raise LLMError(f"{self.name}: scoring failed: {error}") from error
        best = max(range(len(labels)), key=lambda i: scores[i])
        return best, scores

    def _score(self, prompt_ids: list[int], label_ids: list[list[int]]) -> list[float]:
        prompt = torch.tensor([prompt_ids], device=self.device)
        output = self.model(input_ids=prompt, use_cache=True, logits_to_keep=1)
        first = torch.log_softmax(output.logits[0, -1].float(), dim=-1)
        scores = [first[ids[0]] for ids in label_ids]
        longer = [i for i, ids in enumerate(label_ids) if len(ids) > 1]
        if longer:
            tails = self._tail_logprobs(prompt_ids, [label_ids[i] for i in longer], output.past_key_values)
            for i, tail in zip(longer, tails):
                scores[i] = scores[i] + tail
        return [float(score) for score in scores]

    def _tail_logprobs(self, prompt_ids: list[int], label_ids: list[list[int]], cache) -> list[torch.Tensor]:
        """log p(ids[1:] | prompt, ids[0]) of every label, in one batched forward pass.

        The labels are right-padded, so a label's padding comes after its own tokens and cannot
        change their scores. The pass runs on top of the prompt's KV cache, repeated once per label;
        a cache that cannot be repeated makes the pass recompute the prompt (still keeping only the
        labels' logits).
        """
        width = max(len(ids) for ids in label_ids) - 1
        inputs = torch.full((len(label_ids), width), self.pad_id(), dtype=torch.long, device=self.device)
        for row, ids in enumerate(label_ids):
            inputs[row, : len(ids) - 1] = torch.tensor(ids[:-1], device=self.device)
        if _repeat(cache, len(label_ids), len(prompt_ids)):
            logits = self.model(input_ids=inputs, past_key_values=cache, use_cache=True).logits
        else:
            prompt = torch.tensor([prompt_ids], device=self.device).expand(len(label_ids), -1)
            full = torch.cat([prompt, inputs], dim=1)
            logits = self.model(input_ids=full, logits_to_keep=width).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        return [
            logprobs[row, torch.arange(len(ids) - 1), torch.tensor(ids[1:], device=self.device)].sum()
            for row, ids in enumerate(label_ids)
        ]

    def continuation_ids(self, prompt: str, prompt_ids: list[int], text: str) -> list[int]:
        """Token ids of ``text`` as it follows ``prompt`` (whose ids are ``prompt_ids``)."""
        # Tokenise in context: some tokenizers mark the start of a text (SentencePiece's space).
        full = self.encode(prompt + text)
        if len(full) > len(prompt_ids) and full[: len(prompt_ids)] == prompt_ids:
            return full[len(prompt_ids) :]
        return self.encode(text)

    def _checked_ids(self, text: str, *, extra: int) -> list[int]:
        ids = self.encode(text)
        self._checked_length(len(ids) + extra)
        return ids

    def _checked_length(self, length: int) -> None:
        if self.max_positions and length > self.max_positions:
            raise LLMError(
                f"{self.name}: prompt plus answer need {length} tokens; the model accepts at most "
                f"{self.max_positions}: shorten the prompt or lower max_new_tokens"
            )

    def pad_id(self) -> int:
        """Token id used to pad batches (the pad token, else end of sequence)."""
        for candidate in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id):
            if candidate is not None:
                return int(candidate)
        return 0


def _repeat(cache, times: int, length: int) -> bool:
    """Repeat a one-row KV cache of ``length`` tokens into ``times`` rows; False when it cannot."""
    if cache is None or not hasattr(cache, "batch_repeat_interleave"):
        return False
    try:
        if cache.get_seq_length() != length:
            return False
        cache.batch_repeat_interleave(times)
        return True
    except (ValueError, RuntimeError, AttributeError, NotImplementedError):
        return False


def _check_device(device: str) -> str:
    device = str(device).strip()
    if not _DEVICE_PATTERN.match(device):
        raise ConfigError(f"device={device!r} is not accepted; choose cpu, cuda or cuda:N")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(
            f"device={device!r} but torch sees no CUDA GPU (this torch build: {torch.__version__})"
        )
    return device


def _resolve_dtype(dtype: str, device: str) -> torch.dtype:
    if dtype == "auto":
        if device == "cpu":
            return torch.float32  # bf16 matmuls are slow on most CPUs
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if dtype not in DTYPES:
        raise ConfigError(f"dtype={dtype!r} is not accepted; choose auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def _model_name(model: str, gguf_file: str) -> str:
    from ace_core.llm.default_model import MODEL_NAME, SOURCE_FILE

    path = Path(model).expanduser()
    if (path / SOURCE_FILE).is_file():
        name = MODEL_NAME
    elif path.is_dir():
        name = path.name  # a folder's full path says little in a record; its name says the model
    else:
        name = model  # an HF id such as Qwen/Qwen2.5-7B-Instruct
    return f"{name}/{gguf_file}" if gguf_file else name

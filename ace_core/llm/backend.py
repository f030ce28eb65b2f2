"""The contract every LLM backend meets, and the error it raises.

The ACE actor and critic only ever talk to an :class:`LLMBackend`: free-form chat (reasoning,
strict JSON) and scoring of listed choices (the candidate actions, labelled ``A``, ``B``, ...).
Two implementations exist, chosen by configuration: :class:`ace_core.llm.local.LocalBackend`
(transformers, in process) and :class:`ace_core.llm.openai_compat.OpenAICompatBackend` (any
OpenAI-compatible chat-completions server). Build one with :func:`ace_core.llm.factory.make_backend`.

Messages are OpenAI-style dicts, ``{"role": "system" | "user" | "assistant", "content": str}``.
A final ``assistant`` message is a prefill: the model continues it instead of opening a new turn.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ace_core.errors import AceError

ROLES = ("system", "user", "assistant")

NOT_SCORED = -1.0e4
"""Score of a label the backend could not score (a server's top log-probs did not list it).

Finite on purpose: scores end up in JSON records, and Postgres rejects ``-Infinity``.
"""


class LLMError(AceError):
    """The LLM could not give a usable answer: timeout, dead server, HTTP error, garbage output.

    Training never stops on it: the caller keeps the RL action and records ``str(error)``.
    """


@runtime_checkable
class LLMBackend(Protocol):
    """What the actor, the critic and the fine-tuning loop need from a language model."""

    name: str
    """model name as written in refinement records (folder name, HF id or served model)"""
    adapter_version: str
    """name of the LoRA adapter in use (e.g. ``adapter-0003``), empty when none"""
    supports_finetuning: bool
    """True when :func:`ace_core.llm.lora.finetune` can train this backend's weights"""

    def chat(self, messages: list[dict], *, max_new_tokens: int, temperature: float = 0.0) -> str:
        """The assistant's reply to ``messages`` (greedy when temperature is 0), stripped."""
        ...

    def choose(self, messages: list[dict], labels: list[str]) -> tuple[int, list[float]]:
        """Which of ``labels`` the model answers right after ``messages``.

        Returns the index of the chosen label and one score per label (log-probabilities of the
        label as the start of the reply; :data:`NOT_SCORED` where unknown). The prompt itself
        must ask for a bare label.
        """
        ...


def check_messages(messages: list[dict]) -> list[dict[str, str]]:
    """Return ``messages`` as plain role/content dicts, or raise LLMError saying what is wrong."""
    if not isinstance(messages, list) or not messages:
        raise LLMError(f"messages must be a non-empty list of role/content dicts, got {messages!r:.200}")
    clean = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise LLMError(f"message {i} must be a dict with 'role' and 'content', got {message!r:.200}")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise LLMError(f"message {i} has role {role!r}; accepted: {', '.join(ROLES)}")
        if not isinstance(content, str):
            raise LLMError(f"message {i} content must be a string, got {type(content).__name__}")
        clean.append({"role": role, "content": content})
    return clean


def check_labels(labels: list[str]) -> list[str]:
    """Return ``labels`` if they are distinct non-blank strings, else raise LLMError."""
    if not isinstance(labels, list | tuple) or not labels:
        raise LLMError(f"labels must be a non-empty list of strings, got {labels!r:.200}")
    for label in labels:
        if not isinstance(label, str) or not label.strip():
            raise LLMError(f"each label must be a non-blank string, got {label!r} in {labels!r:.200}")
    if len(set(labels)) != len(labels):
        raise LLMError(f"labels must be distinct, got {labels!r:.200}")
    return list(labels)


def check_generation(max_new_tokens: int, temperature: float) -> None:
    """Raise LLMError when the generation settings are out of range."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise LLMError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if not isinstance(temperature, int | float) or not (0.0 <= temperature <= 5.0):
        raise LLMError(f"temperature must be between 0 and 5, got {temperature!r}")

"""The event sink: the one-way channel from the trainer to whoever watches it.

The trainer never knows who listens. The CLI plugs in a :class:`JsonlSink` that appends to files
in the run directory; the web app plugs in a sink that writes rows and sends channel-group
messages. Every event is a small frozen dataclass that serialises with :func:`event_to_dict`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class MetricsEvent:
    step: int
    """environment steps done so far"""
    values: dict[str, float]
    """namespaced metrics, e.g. ``losses/qf1_loss``, ``charts/episodic_return``, ``charts/SPS``"""


@dataclass(frozen=True)
class EpisodeEvent:
    step: int
    """environment steps done when the episode ended"""
    index: int
    """episode number within the run, from 0"""
    scenario: str
    """the scenario's name: ``chronic@start+length``"""
    steps_survived: int
    max_steps: int
    reward: float
    """sum of the environment rewards"""


@dataclass(frozen=True)
class CheckpointEvent:
    step: int
    path: str
    """file holding everything needed to resume (networks, optimisers, buffer, RNG, counters)"""


@dataclass(frozen=True)
class RoundRecord:
    """One round of the LLM Policy Actor's think-simulate-retry loop."""

    prompt: str
    response: str
    action_index: int | None
    """the parsed action, ``None`` when the response could not be parsed"""
    simulated_reward: float | None
    simulated_max_rho: float | None
    accepted: bool
    error: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class RefinementEvent:
    step: int
    refinement_id: str
    """unique within the run; the web app uses it to approve or reject"""
    state_text: str
    rl_action_index: int
    rl_action_text: str
    rl_reward: float
    rl_max_rho: float
    llm_action_index: int | None
    llm_action_text: str
    llm_reward: float | None
    llm_max_rho: float | None
    accepted_by_simulation: bool
    rounds: tuple[RoundRecord, ...]
    model: str
    adapter_version: int = 0
    reason: str = ""
    """why the RL action stands when nothing was accepted (garbage, timeout, not better...)"""
    rl_n1: str = ""
    """the RL action's N-1 worst case on the grid it leads to, in words (empty: not screened)"""
    llm_n1: str = ""
    """the same for the LLM's action"""


@dataclass(frozen=True)
class ShapingEvent:
    step: int
    episode_index: int
    trajectory_step: int
    adjustment: float
    """one of -2K, -K, +K, +2K"""
    rationale: str
    model: str


@dataclass(frozen=True)
class FinetuneEvent:
    step: int
    adapter_version: int
    samples: int
    seconds: float
    loss: float | None
    path: str
    skipped_reason: str = ""


Event = MetricsEvent | EpisodeEvent | CheckpointEvent | RefinementEvent | ShapingEvent | FinetuneEvent


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready dict with the event's kind under ``"event"``."""
    data = dataclasses.asdict(event)
    data["event"] = _KINDS[type(event)]
    return data


_KINDS = {
    MetricsEvent: "metrics",
    EpisodeEvent: "episode",
    CheckpointEvent: "checkpoint",
    RefinementEvent: "refinement",
    ShapingEvent: "shaping",
    FinetuneEvent: "finetune",
}


@runtime_checkable
class EventSink(Protocol):
    """What the trainer reports to. Implementations must be cheap: the trainer calls them inline."""

    def emit(self, event: Event) -> None: ...

    def should_stop(self) -> bool:
        """Polled between steps; True makes the trainer checkpoint and return."""
        ...

    def is_approved(self, refinement_id: str) -> bool | None:
        """For ``require_approval`` runs: True/False once decided, None while pending."""
        ...


class NullSink:
    """Listens to nothing, never stops, approves whatever simulation validated."""

    def emit(self, event: Event) -> None:
        pass

    def should_stop(self) -> bool:
        return False

    def is_approved(self, refinement_id: str) -> bool | None:
        return True


@dataclass
class MemorySink(NullSink):
    """Keeps every event in a list; handy for tests and notebooks."""

    events: list[Event] = field(default_factory=list)
    stop_after_step: int | None = None

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def should_stop(self) -> bool:
        if self.stop_after_step is None:
            return False
        return any(isinstance(e, MetricsEvent) and e.step >= self.stop_after_step for e in self.events)

    def of_type(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


class TeeSink:
    """Reports every event to ``primary`` and to each of ``others`` (e.g. TensorBoard files);
    ``primary`` alone answers :meth:`should_stop` and :meth:`is_approved`."""

    def __init__(self, primary: EventSink, *others: EventSink) -> None:
        self.primary = primary
        self.others = others

    def emit(self, event: Event) -> None:
        self.primary.emit(event)
        for sink in self.others:
            sink.emit(event)

    def should_stop(self) -> bool:
        return self.primary.should_stop()

    def is_approved(self, refinement_id: str) -> bool | None:
        return self.primary.is_approved(refinement_id)

    def close(self) -> None:
        for sink in (self.primary, *self.others):
            close = getattr(sink, "close", None)
            if callable(close):
                close()


class JsonlSink(NullSink):
    """The CLI's sink: one JSON line per event in ``metrics.jsonl`` / ``events.jsonl``.

    Metrics go to ``metrics.jsonl`` (one line per report, flat namespaced keys plus ``step``) so
    that they load with ``pandas.read_json(..., lines=True)``; everything else goes to
    ``events.jsonl``.
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._metrics = open(self.out_dir / "metrics.jsonl", "a", encoding="utf-8")
        self._events = open(self.out_dir / "events.jsonl", "a", encoding="utf-8")

    def emit(self, event: Event) -> None:
        if isinstance(event, MetricsEvent):
            self._metrics.write(json.dumps({"step": event.step, **event.values}) + "\n")
            self._metrics.flush()
        else:
            self._events.write(json.dumps(event_to_dict(event)) + "\n")
            self._events.flush()

    def close(self) -> None:
        self._metrics.close()
        self._events.close()

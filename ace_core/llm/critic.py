"""The LLM as Value Critic (g_LLM): trajectory-level credit assignment by bounded reward shaping.

Among finished episodes that contain a decision whose step reward has ``|r| > threshold``, the
critic picks the most telling one (configurable, as the paper's ablation):

- ``reward``: the largest ``|r|`` of any decision (the episode with the most extreme outcome);
- ``state``: the highest max rho seen at a decision (the most stressed grid);
- ``action``: the most distinct actions taken (the richest choice of topologies).

It shows the LLM a compact text of the episode's decisions (step, max rho, action in words,
reward) and asks for the key steps with an adjustment in {-2K, -K, +K, +2K}, in one of two
formats (``CriticConfig.format``):

- ``choice`` (default): per key step, two scored letter questions (:meth:`LLMBackend.choose`):
  which of the listed decisions most caused the outcome, then which of the four adjustments it
  deserves. Always a valid answer, two calls per key step; the model writes no rationale (the
  record keeps the letters' scores instead). A 135M model never produced valid JSON in the json
  format, so this is what makes the critic usable with the offline default.
- ``json``: one free reply that must be strict JSON. The reply is untrusted: it must be one JSON
  object with a ``key_steps`` list; every item must name a step shown in the text and one of the
  four adjustments (as ``"-K"``... or the number itself); anything else is refused and recorded,
  never applied. For capable models (a served 7B), which also write a rationale.

Accepted adjustments are added to the stored (semi-MDP) reward of those decisions in the replay
buffer; the per-step rewards the actor compares with ``r_bar`` stay untouched.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from ace_core.config import TRAJECTORY_SELECTIONS as SELECTIONS
from ace_core.config.sections import CriticConfig
from ace_core.errors import ConfigError
from ace_core.llm import prompts

_PREFILL = '{"key_steps": ['
MULTIPLES = {"-2K": -2, "-K": -1, "+K": 1, "+2K": 2}
"""each allowed adjustment as a multiple of K, in the order of :data:`prompts.ADJUSTMENTS`"""


@dataclass
class TracedDecision:
    """One decision of an episode, as stored: where its transition lives in the replay buffer."""

    step: int
    """step within the episode"""
    row: int
    """its row in the replay buffer (what ``ReplayBuffer.add`` returned)"""
    max_rho: float
    action: int
    step_reward: float


@dataclass
class Trajectory:
    episode: int
    steps_survived: int
    max_steps: int
    decisions: list[TracedDecision] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        if self.steps_survived < self.max_steps:
            return f"blackout at step {self.steps_survived} of {self.max_steps}"
        return f"survived all {self.max_steps} steps"


def eligible(trajectory: Trajectory, threshold: float) -> bool:
    return any(abs(d.step_reward) > threshold for d in trajectory.decisions)


def select(trajectories: list[Trajectory], selection: str, threshold: float, n: int) -> list[Trajectory]:
    """The ``n`` most telling eligible trajectories by ``selection``; ties go to the latest."""
    if selection not in SELECTIONS:
        raise ConfigError(f"trajectory selection {selection!r}; accepted: {', '.join(SELECTIONS)}")
    scores = {
        "reward": lambda t: max(abs(d.step_reward) for d in t.decisions),
        "state": lambda t: max(d.max_rho for d in t.decisions),
        "action": lambda t: len({d.action for d in t.decisions}),
    }[selection]
    pool = [t for t in trajectories if t.decisions and eligible(t, threshold)]
    return sorted(pool, key=lambda t: (scores(t), t.episode), reverse=True)[:n]


@dataclass
class Adjustment:
    step: int
    value: float
    rationale: str


@dataclass
class CriticResult:
    """One critic call: what was asked, answered, applied and refused."""

    episode: int
    prompt: str
    response: str
    adjustments: list[Adjustment]
    refused: list[str]
    rationale: str
    seconds: float
    error: str = ""
    calls: int = 1
    """LLM calls spent (choice format: two per key step asked)"""


def shown_decisions(trajectory: Trajectory, limit: int) -> list[TracedDecision]:
    """At most ``limit`` decisions in step order: the last quarter, then the most extreme |r|."""
    decisions = trajectory.decisions
    if len(decisions) <= limit:
        return list(decisions)
    last = decisions[-max(1, limit // 4) :]
    rest = sorted(decisions[: -len(last)], key=lambda d: -abs(d.step_reward))[: limit - len(last)]
    return sorted(rest + last, key=lambda d: d.step)


def parse_adjustments(
    text: str, k: float, allowed_steps: set[int], max_key_steps: int
) -> tuple[list[Adjustment], str, list[str]]:
    """(accepted adjustments, rationale, refused items) from the LLM's reply; never raises."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    start = body.find("{")
    if start < 0:
        return [], "", [f"no JSON object in the reply: {text[:200]!r}"]
    try:
        data, end = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as error:
        return [], "", [f"invalid JSON ({error.msg} at char {error.pos}): {text[:200]!r}"]
    refused: list[str] = []
    if body[start + end :].strip(" \n`"):
        refused.append(f"ignored text after the JSON object: {body[start + end :][:100]!r}")
    if not isinstance(data, dict) or not isinstance(data.get("key_steps"), list):
        return [], "", refused + [f"expected an object with a key_steps list, got {str(data)[:200]!r}"]
    rationale = data.get("rationale")
    rationale = " ".join(rationale.split())[:300] if isinstance(rationale, str) else ""
    values = {name: m * k for name, m in MULTIPLES.items()} | {"K": k, "2K": 2 * k}
    accepted: list[Adjustment] = []
    for item in data["key_steps"]:
        if not isinstance(item, dict):
            refused.append(f"key step {item!r:.100} is not an object")
            continue
        step, raw = item.get("step"), item.get("adjustment")
        if isinstance(step, bool) or not isinstance(step, int) or step not in allowed_steps:
            refused.append(f"step {step!r:.50} is not one of the decision steps shown")
            continue
        value = _adjustment_value(raw, k, values)
        if value is None:
            refused.append(
                f"adjustment {raw!r:.50} at step {step}; accepted: {', '.join(prompts.ADJUSTMENTS)}"
            )
            continue
        if any(a.step == step for a in accepted):
            refused.append(f"step {step} adjusted twice; the first one is kept")
            continue
        if len(accepted) >= max_key_steps:
            refused.append(f"more than {max_key_steps} key steps; step {step} ignored")
            continue
        why = item.get("why") or item.get("rationale")
        why = " ".join(why.split())[:300] if isinstance(why, str) else ""
        accepted.append(Adjustment(step, value, why or rationale))
    return accepted, rationale, refused


def _adjustment_value(raw, k: float, values: dict[str, float]) -> float | None:
    if isinstance(raw, str):
        return values.get(raw.strip().replace(" ", "").upper())
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        for allowed in (-2 * k, -k, k, 2 * k):
            if abs(raw - allowed) <= 1e-9 + 1e-6 * abs(allowed):
                return allowed
    return None


class ValueCritic:
    def __init__(self, backend, action_text, config: CriticConfig | None = None) -> None:
        """``action_text(index)`` renders an action in words (``T_a``)."""
        self.backend = backend
        self.action_text = action_text
        self.config = (config or CriticConfig()).validate()

    def criticise(self, trajectory: Trajectory, budget: int | None = None) -> CriticResult:
        """Ask for the key steps of one trajectory, in at most ``budget`` LLM calls.

        LLM failures come back as ``error``, with the adjustments completed before them.
        """
        if self.config.format == "choice":
            return self._criticise_by_choice(trajectory, budget)
        return self._criticise_by_json(trajectory)

    def _steps(self, shown: list[TracedDecision]) -> list[prompts.TrajectoryStep]:
        return [
            prompts.TrajectoryStep(d.step, d.max_rho, self.action_text(d.action), d.step_reward)
            for d in shown
        ]

    def _criticise_by_choice(self, trajectory: Trajectory, budget: int | None) -> CriticResult:
        config = self.config
        shown = shown_decisions(trajectory, min(config.max_steps_shown, len(prompts.LABELS)))
        remaining = self._steps(shown)
        key_steps = min(config.choice_key_steps, len(remaining))
        if budget is not None:
            key_steps = min(key_steps, budget // 2)
        first_prompt = prompts.critic_step_messages(remaining, trajectory.outcome)[1]["content"]
        adjustments: list[Adjustment] = []
        transcript: list[str] = []
        calls, error = 0, ""
        started = time.perf_counter()
        for _ in range(key_steps):
            messages = prompts.critic_step_messages(remaining, trajectory.outcome)
            labels = list(prompts.LABELS[: len(remaining)])
            try:
                calls += 1
                picked, step_scores = self.backend.choose(messages, labels)
                step = remaining[picked]
                messages += [
                    {"role": "assistant", "content": labels[picked]},
                    prompts.critic_adjustment_message(step, config.k),
                ]
                calls += 1
                chosen, value_scores = self.backend.choose(messages, list(prompts.LABELS[:4]))
            except Exception as error_:  # noqa: BLE001 - the LLM side never stops training
                error = f"{type(error_).__name__}: {error_}"[:500]
                break
            name = prompts.ADJUSTMENTS[chosen]
            value = MULTIPLES[name] * config.k
            why = (
                f"picked among {len(remaining)} decisions (log p {step_scores[picked]:.2f}), "
                f"adjustment {name} (log p {value_scores[chosen]:.2f})"
            )
            adjustments.append(Adjustment(step.step, value, why))
            transcript.append(f"step {step.step}: {name}")
            remaining = [s for s in remaining if s.step != step.step]
        return CriticResult(
            trajectory.episode,
            first_prompt,
            "; ".join(transcript),
            adjustments,
            [],
            "",
            time.perf_counter() - started,
            error,
            calls,
        )

    def _criticise_by_json(self, trajectory: Trajectory) -> CriticResult:
        config = self.config
        shown = shown_decisions(trajectory, config.max_steps_shown)
        messages = prompts.critic_messages(
            self._steps(shown), trajectory.outcome, config.k, config.max_key_steps
        )
        if config.prefill:
            messages.append({"role": "assistant", "content": _PREFILL})
        started = time.perf_counter()
        try:
            reply = self.backend.chat(messages, max_new_tokens=config.max_new_tokens)
        except Exception as error:  # noqa: BLE001 - the LLM side never stops training
            return CriticResult(
                trajectory.episode,
                messages[1]["content"],
                "",
                [],
                [],
                "",
                time.perf_counter() - started,
                f"{type(error).__name__}: {error}"[:500],
            )
        # the backend returns only the continuation of the prefill
        text = _PREFILL + reply if config.prefill else reply
        adjustments, rationale, refused = parse_adjustments(
            text, config.k, {d.step for d in shown}, config.max_key_steps
        )
        return CriticResult(
            trajectory.episode,
            messages[1]["content"],
            text,
            adjustments,
            refused,
            rationale,
            time.perf_counter() - started,
        )

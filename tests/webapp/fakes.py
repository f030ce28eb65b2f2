"""Fast stand-ins for the trainer and the evaluator, with the same signatures and events.

The web tests exercise the platform (rows, messages, cancel, resume, recovery) without torch;
the ace_core trainer itself is tested under tests/ace_core and once end-to-end in the browser
tests. Point a worker at them with ``GRIDACE_TRAINER=tests.webapp.fakes.fake_train``.

``fake_train`` does ``config.steps`` steps (``FAKE_TRAIN_STEP_SECONDS`` each, default 0), emits
metrics every ``log_every`` steps, an episode every 100, a refinement every ``actor_every`` when
an LLM is configured, a shaping every ``critic_every``, and a checkpoint every
``checkpoint_every`` (a JSON file holding the step). With ``resume=True`` it continues from that
step. Each refinement id is appended to ``reported.txt`` once ``emit`` has returned, so a test
can check that everything the sink acknowledged is in the database.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ace_core.config import TrainConfig
from ace_core.errors import CheckpointError
from ace_core.events import (
    CheckpointEvent,
    EpisodeEvent,
    EventSink,
    FinetuneEvent,
    MetricsEvent,
    RefinementEvent,
    RoundRecord,
    ShapingEvent,
)


def _checkpoint(sink: EventSink, out_dir: Path, step: int) -> None:
    path = out_dir / "checkpoint.pt"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"step": step}))
    tmp.replace(path)
    sink.emit(CheckpointEvent(step=step, path=str(path)))


def refinement_event(
    step: int, *, accepted: bool = True, refinement_id: str | None = None
) -> RefinementEvent:
    rounds = (
        RoundRecord(
            prompt=f"State at step {step}: line 4 at rho 1.02. Candidates: A) bus split at sub 3 B) do nothing",
            response="A) Splitting substation 3 relieves line 4.",
            action_index=12,
            simulated_reward=0.8 if accepted else 0.1,
            simulated_max_rho=0.91 if accepted else 1.05,
            accepted=accepted,
            seconds=0.4,
        ),
    )
    return RefinementEvent(
        step=step,
        refinement_id=refinement_id or f"r{step}",
        state_text=f"Step {step}: line 4 carries 102% of its limit; substation 3 has both buses joined.",
        rl_action_index=0,
        rl_action_text="do nothing",
        rl_reward=0.2,
        rl_max_rho=1.02,
        llm_action_index=12 if accepted else None,
        llm_action_text="set bus 2 for line 4 and load 2 at substation 3" if accepted else "",
        llm_reward=0.8 if accepted else None,
        llm_max_rho=0.91 if accepted else None,
        accepted_by_simulation=accepted,
        rounds=rounds,
        model="tiny-test-model",
        reason="" if accepted else "the proposed action was not better in simulation",
    )


def fake_train(config: TrainConfig, sink: EventSink, out_dir: Path, resume: bool = False) -> dict[str, Any]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    step = 0
    if resume:
        path = out_dir / "checkpoint.pt"
        if not path.is_file():
            raise CheckpointError(f"no checkpoint at {path} to resume from")
        step = json.loads(path.read_text())["step"]
    delay = float(os.environ.get("FAKE_TRAIN_STEP_SECONDS", "0"))
    llm = config.llm != "none"
    calls = 0
    while step < config.steps:
        if sink.should_stop():
            _checkpoint(sink, out_dir, step)
            return {"steps": step, "stopped": True}
        step += 1
        if delay:
            time.sleep(delay)
        if step % config.log_every == 0:
            values = {
                "losses/qf1_loss": 1.0 / step,
                "losses/actor_loss": -0.5 / step,
                "losses/alpha": 0.2,
                "charts/entropy": 2.0 - step / config.steps,
                "charts/SPS": 900.0,
                "llm/calls": float(calls),
                "charts/nan_metric": float("nan"),
            }
            sink.emit(MetricsEvent(step=step, values=values))
        if step % 100 == 0:
            index = step // 100 - 1
            sink.emit(
                EpisodeEvent(
                    step=step,
                    index=index,
                    scenario=f"000@{index * 100}+100",
                    steps_survived=50 + index % 50,
                    max_steps=100,
                    reward=10.0 + index,
                )
            )
        if llm and step % config.actor_every == 0:
            calls += 1
            event = refinement_event(step, accepted=(step // config.actor_every) % 2 == 1)
            sink.emit(event)
            with open(out_dir / "reported.txt", "a", encoding="utf-8") as reported:
                reported.write(event.refinement_id + "\n")
        if llm and step % config.critic_every == 0:
            sink.emit(
                ShapingEvent(
                    step=step,
                    episode_index=step // 100,
                    trajectory_step=7,
                    adjustment=-config.shaping_k,
                    rationale="Waiting let line 4 overload for three steps; acting at step 7 was needed.",
                    model="tiny-test-model",
                )
            )
        if llm and config.finetune_every and step % (config.actor_every * config.finetune_every) == 0:
            sink.emit(
                FinetuneEvent(
                    step=step, adapter_version=1, samples=4, seconds=1.5, loss=0.7, path=str(out_dir / "lora")
                )
            )
        if step % config.checkpoint_every == 0:
            _checkpoint(sink, out_dir, step)
    _checkpoint(sink, out_dir, step)
    return {"steps": step, "stopped": False}


def failing_train(config: TrainConfig, sink: EventSink, out_dir: Path, resume: bool = False) -> None:
    sink.emit(MetricsEvent(step=1, values={"losses/qf1_loss": 1.0}))
    raise RuntimeError("the grid diverged at step 1 (BackendError)")


def fake_evaluate(
    env_name: str, agent_spec: str, split: str, nb_episode: int, out_dir: Path
) -> dict[str, Any]:
    survival = {"do-nothing": 0.4, "reconnect": 0.45, "greedy": 0.6}.get(agent_spec, 0.7)
    episodes = [
        {"scenario": f"000@{i}", "seed": 0, "steps_survived": 10, "max_steps": 10, "reward": 1.0}
        for i in range(nb_episode)
    ]
    return {
        "env": env_name,
        "agent": agent_spec,
        "split": split,
        "episodes": episodes,
        "survival_mean": survival,
        "survival_std": 0.1,
        "episodes_fully_survived": 1,
        "reward_mean": 100.0 * survival,
        "decision_ms_p50": 0.3,
        "decision_ms_p95": 0.9,
        "simulate_calls": 0,
    }

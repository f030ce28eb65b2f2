"""ACE inside the trainer: the LLM actor, critic, mixed buffer, approvals, LoRA rounds, exact resume."""

import json
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from ace_core.checkpoint import load_checkpoint
from ace_core.cli import main
from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.events import (
    EpisodeEvent,
    FinetuneEvent,
    MemorySink,
    MetricsEvent,
    RefinementEvent,
    ShapingEvent,
)
from ace_core.llm.prompts import LABELS
from ace_core.rl.buffer import SOURCE_LLM
from ace_core.training import run
from ace_core.training.trainer import Trainer
from tests.sandbox_settings import sandbox_settings

# many decisions, many of them below r_bar
ACE = sandbox_settings(
    steps=200,
    checkpoint_every=150,
    r_bar=0.5,
    actor_every=50,
    critic_every=100,
    critic_threshold=0.3,
    llm_budget=40,
    beta=0.25,
)


def test_a_tiny_ace_run_with_the_tiny_local_model_end_to_end(tiny_long_model_dir, tmp_path):
    config = TrainConfig(
        **ACE, llm="local", llm_model=str(tiny_long_model_dir), finetune_every=4, finetune_max_steps=1
    )
    sink = MemorySink()
    trainer = Trainer(config, tmp_path, sink)
    sampled = []
    sample = trainer.replay.sample
    trainer.replay.sample = lambda n, rng: sampled.append(batch := sample(n, rng)) or batch
    reshaped = []  # what each critic pass changed in the stored rewards
    critic_pass = trainer.extension("ace").critic_pass

    def watched_critic_pass(step):
        before = trainer.buffer.rewards.copy()
        critic_pass(step)
        reshaped.append(trainer.buffer.rewards - before)

    trainer.extension("ace").critic_pass = watched_critic_pass
    result = trainer.run()
    assert result.steps == 200

    refinements = sink.of_type(RefinementEvent)
    assert refinements and all(r.model == tiny_long_model_dir.name for r in refinements)
    for r in refinements:
        assert 1 <= len(r.rounds) <= 5 and r.state_text and r.rl_action_text
        if r.accepted_by_simulation:
            assert r.llm_reward > r.rl_reward and r.rounds[-1].accepted
    accepted = sum(r.accepted_by_simulation for r in refinements)
    metrics = sink.of_type(MetricsEvent)[-1].values
    assert metrics["llm/refinements"] == len(refinements) and metrics["llm/accepted"] == accepted
    assert metrics["llm/calls"] <= 40 and metrics["llm/buffer_size"] == accepted
    # LoRA rounds every 4 accepted refinements; the actor then runs on the newest adapter
    finetunes = sink.of_type(FinetuneEvent)
    assert len(finetunes) == accepted // 4 and accepted >= 4
    assert finetunes[-1].adapter_version == len(finetunes) and (tmp_path / "adapters").is_dir()
    later = [r for r in refinements if r.step > finetunes[0].step]
    assert not later or later[-1].adapter_version >= 1
    # SAC learnt from LLM rows, weighted by their priority
    llm_rows = [b for b in sampled if (b.sources == SOURCE_LLM).any()]
    assert llm_rows and all((b.weights[b.sources == SOURCE_LLM] > 1.0).all() for b in llm_rows)
    # the critic was asked (choice format: one key step per trajectory, always a valid answer)
    # and its adjustments reached the stored rewards
    critic_lines = [json.loads(line) for line in (tmp_path / "critic.jsonl").read_text().splitlines()]
    shapings = sink.of_type(ShapingEvent)
    assert critic_lines and all(len(c["applied"]) == 1 and c["calls"] == 2 for c in critic_lines)
    assert len(shapings) == len(critic_lines) == metrics["llm/shapings"]
    assert all(s.adjustment in (-0.2, -0.1, 0.1, 0.2) for s in shapings)
    changed = [delta[delta != 0] for delta in reshaped]
    assert sum(len(c) for c in changed) == len(shapings)
    assert sorted(float(v) for c in changed for v in c) == pytest.approx(
        sorted(s.adjustment for s in shapings)
    )
    assert "ace" in load_checkpoint(tmp_path)


@dataclass
class ReviewSink(MemorySink):
    """Approves odd refinement numbers and rejects even ones, after ``delay`` polls."""

    delay: int = 2
    polls: dict = field(default_factory=dict)

    def is_approved(self, refinement_id: str) -> bool | None:
        self.polls[refinement_id] = self.polls.get(refinement_id, 0) + 1
        if self.polls[refinement_id] <= self.delay:
            return None
        return int(refinement_id[1:]) % 2 == 1


def test_require_approval_holds_refinements_until_the_sink_decides(tmp_path):
    config = TrainConfig(**{**ACE, "steps": 200}, llm="random", critic=False, require_approval=True)
    sink = ReviewSink()
    trainer = Trainer(config, tmp_path, sink)
    trainer.run()
    ace = trainer.extension("ace")
    accepted = [r for r in sink.of_type(RefinementEvent) if r.accepted_by_simulation]
    decided = [r for r in accepted if sink.polls.get(r.refinement_id, 0) > sink.delay]
    approved = [r for r in decided if int(r.refinement_id[1:]) % 2 == 1]
    assert accepted and approved and len(decided) < len(accepted) + 1
    assert ace.counts["approved"] == len(approved) == len(ace.buffer.llm)
    assert ace.counts["rejected"] == len(decided) - len(approved)
    assert len(ace.awaiting) == len(accepted) - len(decided)
    # only approved refinements are in the LLM buffer
    assert sorted(ace.buffer.llm.actions[: len(ace.buffer.llm)].tolist()) == sorted(
        r.llm_action_index for r in approved
    )


def test_imitation_acts_once_refinements_are_in_the_buffer(tmp_path):
    config = TrainConfig(**{**ACE, "log_every": 25}, llm="random", critic=False, imitation=1.0)
    sink = MemorySink()
    trainer = Trainer(config, tmp_path, sink)
    trainer.run()
    assert len(trainer.extension("ace").buffer.llm) > 0
    imitation = [
        m.values["losses/imitation"] for m in sink.of_type(MetricsEvent) if "losses/imitation" in m.values
    ]
    assert imitation and imitation[-1] > 0


@pytest.mark.parametrize("selection", ["worst", "random"])
def test_an_actor_pass_refines_the_worst_or_a_uniform_pick_of_the_window(selection, tmp_path):
    config = TrainConfig(**ACE, llm="random", critic=False, actor_batch=2, actor_selection=selection)
    trainer = Trainer(config, tmp_path, MemorySink())
    passes = []
    pick = trainer.extension("ace").pick

    def watched_pick(window, step):
        chosen = pick(window, step)
        assert [id(d) for d in pick(window, step)] == [id(d) for d in chosen]  # reproducible
        passes.append(([id(d) for d in window], [id(d) for d in chosen], _worst_ids(window, 2)))
        return chosen

    trainer.extension("ace").pick = watched_pick
    trainer.run()
    crowded = [p for p in passes if len(p[0]) > 2]
    assert crowded
    for window, chosen, _ in crowded:
        assert len(set(chosen)) == 2 and set(chosen) <= set(window)
    if selection == "worst":
        assert all(chosen == worst for _, chosen, worst in crowded)
    else:
        assert any(chosen != worst for _, chosen, worst in crowded)
    refined = trainer.extension("ace").counts["refinements"]
    assert refined == sum(len(chosen) for _, chosen, _ in passes)


def _worst_ids(window, n):
    return [id(d) for d in sorted(window, key=lambda d: (d.step_reward, d.step))[:n]]


def test_nothing_enters_the_buffer_while_reviewers_are_silent(tmp_path):
    config = TrainConfig(**{**ACE, "steps": 100}, llm="random", critic=False, require_approval=True)
    trainer = Trainer(config, tmp_path, ReviewSink(delay=10**6))
    trainer.run()
    assert len(trainer.extension("ace").buffer.llm) == 0 and trainer.extension("ace").awaiting
    assert trainer.extension("ace").counts["approved"] == 0


def _actor(path):
    return load_checkpoint(path)["sac"]["actor"]


@pytest.mark.parametrize("llm", ["random", "local"])
def test_resume_with_ace_continues_exactly(llm, tiny_long_model_dir, tmp_path):
    extra = (
        {"llm": "random", "critic": False}
        if llm == "random"
        else {
            "llm": "local",
            "llm_model": str(tiny_long_model_dir),
            "finetune_every": 3,
            "finetune_max_steps": 1,
        }
    )
    config = TrainConfig(**{**ACE, "steps": 150, "llm_budget": 400}, **extra)
    straight_sink = MemorySink()
    run(config, tmp_path / "straight", straight_sink)
    run(TrainConfig(**{**config.to_dict(), "steps": 90}), tmp_path / "resumed", MemorySink())
    sink = MemorySink()
    run(config, tmp_path / "resumed", sink, resume=True)

    a, b = _actor(tmp_path / "straight"), _actor(tmp_path / "resumed")
    assert all(torch.equal(a[k], b[k]) for k in a)
    straight, resumed = load_checkpoint(tmp_path / "straight"), load_checkpoint(tmp_path / "resumed")
    for key in ("actions", "rewards", "weights"):
        assert np.array_equal(
            straight["ace"]["llm_buffer"]["llm"][key], resumed["ace"]["llm_buffer"]["llm"][key]
        )
    assert np.array_equal(straight["buffer"]["rewards"], resumed["buffer"]["rewards"])  # shaping included
    assert straight["ace"]["counts"] == resumed["ace"]["counts"]

    def after(events, kind):
        return [e for e in events if isinstance(e, kind) and e.step > 90]

    for kind in (RefinementEvent, EpisodeEvent, ShapingEvent, FinetuneEvent):
        mine, theirs = after(sink.events, kind), after(straight_sink.events, kind)
        if kind is FinetuneEvent:  # wall time and paths differ
            assert [(e.step, e.adapter_version, e.samples) for e in mine] == [
                (e.step, e.adapter_version, e.samples) for e in theirs
            ]
        elif kind is RefinementEvent:  # seconds differ
            assert [(e.refinement_id, e.llm_action_index, e.accepted_by_simulation) for e in mine] == [
                (e.refinement_id, e.llm_action_index, e.accepted_by_simulation) for e in theirs
            ]
        else:
            assert mine == theirs
    assert after(straight_sink.events, RefinementEvent)  # the resumed part did refine


def test_the_cli_trains_with_the_random_control_and_logs_refinements(tmp_path, capsys):
    args = ["train", "--out", str(tmp_path), "--llm", "random", "--no-critic"]
    for key, value in {**ACE, "steps": 100}.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    assert main(args) == 0
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    refinements = [e for e in events if e["event"] == "refinement"]
    assert refinements and all(e["model"] == "random" for e in refinements)
    assert json.loads(capsys.readouterr().out)["steps"] == 100


def test_random_control_without_no_critic_is_refused():
    with pytest.raises(ConfigError, match="add --no-critic"):
        TrainConfig(env="l2rpn_case14_sandbox", llm="random").validate()


def test_an_openai_compatible_server_drives_the_actor_and_gets_samples_exported(
    chat_server, tmp_path, monkeypatch
):
    from tests.ace_core.conftest import ChatServer

    monkeypatch.setenv("GRIDACE_LLM_BASE_URL", chat_server.url)
    chat_server.script = [("json", 200, ChatServer.reply("A", model="served"))] * 500
    config = TrainConfig(
        **{**ACE, "steps": 100},
        llm="openai",
        llm_model="served",
        actor_answer="letter",
        critic=False,
        finetune_every=2,
    )
    sink = MemorySink()
    Trainer(config, tmp_path, sink).run()
    refinements = sink.of_type(RefinementEvent)
    assert refinements and all(r.model == "served" for r in refinements)
    assert all(r.rounds[0].response.startswith("A") for r in refinements)
    finetunes = sink.of_type(FinetuneEvent)
    assert finetunes and all("exported" in f.skipped_reason for f in finetunes)
    exported = [json.loads(line) for line in open(finetunes[0].path)]
    # the fine-tuning answer is the letter of the option simulation found best, wherever the
    # shuffled order put it
    answer = exported[0]["messages"][-1]
    assert len(exported) == 2 and answer["role"] == "assistant" and answer["content"] in LABELS


def _as_written_before_typed_transitions(state: dict, wraps: int) -> dict:
    """The checkpoint layout of runs written before transitions were typed: refinements awaiting
    review carried a dict, traced decisions a ``serial``, and ACE counted stored transitions beside
    the buffer (here as if the buffer had wrapped ``wraps`` more times than its slots show)."""
    buffer, ace = dict(state["buffer"]), dict(state["ace"])
    added = buffer.pop("added")
    shift = wraps * buffer["capacity"]

    def traced(d):
        d = dict(d)
        d["serial"] = d.pop("row") + shift
        return d

    ace["stored"] = added + shift
    ace["trajectory"] = [traced(d) for d in ace["trajectory"]]
    ace["finished"] = [{**t, "decisions": [traced(d) for d in t["decisions"]]} for t in ace["finished"]]
    ace["awaiting"] = [
        {**a, "transition": {**a["transition"]._asdict(), "rl_reward": a.pop("rl_reward")}}
        for a in map(dict, ace["awaiting"])
    ]
    for d in ace["awaiting"]:
        for key in ("step_reward", "source", "weight"):
            del d["transition"][key]
    return {**state, "buffer": buffer, "ace": ace}


@pytest.mark.parametrize("wraps", [0, 3])
def test_a_checkpoint_written_before_typed_transitions_resumes_exactly(wraps, tmp_path):
    config = TrainConfig(**{**ACE, "steps": 150}, llm="random", critic=False, require_approval=True)
    straight = Trainer(config, tmp_path / "straight", ReviewSink(delay=4))
    straight.run()
    reviewers = ReviewSink(delay=4)  # like the web app's reviews, they outlive the interruption
    run(TrainConfig(**{**config.to_dict(), "steps": 110}), tmp_path / "resumed", reviewers)
    path = tmp_path / "resumed" / "checkpoint.pt"
    state = load_checkpoint(path)
    assert state["ace"]["awaiting"] and state["ace"]["finished"]  # the legacy parts are exercised
    torch.save(_as_written_before_typed_transitions(state, wraps), path)

    resumed = Trainer(config, tmp_path / "resumed", reviewers)
    resumed.run(resume=True)
    a, b = _actor(tmp_path / "straight"), _actor(tmp_path / "resumed")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed.extension("ace").counts == straight.extension("ace").counts
    assert np.array_equal(resumed.buffer.rewards, straight.buffer.rewards)
    assert 0 < len(resumed.extension("ace").buffer.llm) == len(straight.extension("ace").buffer.llm)
    # the traced rows still name the decisions' slots, and the newest are still held
    for mine, theirs in zip(resumed.extension("ace").finished, straight.extension("ace").finished):
        assert [d.row % 100_000 for d in mine.decisions] == [d.row % 100_000 for d in theirs.decisions]
        assert all(resumed.buffer.holds(d.row) for d in mine.decisions)

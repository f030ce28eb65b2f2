"""Expert-guided exploration: while the schedule lasts, decisions play the simulated expert."""

import numpy as np
import pytest
import torch

from ace_core.agents.greedy import greedy_search
from ace_core.checkpoint import load_checkpoint
from ace_core.config import MAX_STEPS, TrainConfig
from ace_core.events import MemorySink, MetricsEvent
from ace_core.training import run
from ace_core.training.trainer import Trainer
from tests.sandbox_settings import sandbox_settings

TINY = sandbox_settings(steps=300, checkpoint_every=150, teacher_top_k=2, teacher_budget=4)


class RecordingTrainer(Trainer):
    """Keeps, for every decision, the action played and what the expert alone would play."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.played: list[int] = []
        self.expert: list[int] = []

    def _decide(self, obs) -> int:
        features, mask = self.features(obs), self.space.top_mask(obs)
        ranked = [index for index, _ in self.sac.policy(features, mask).top_k(self.config.teacher.top_k)]
        self.expert.append(
            greedy_search(obs, self.space, self.env.action_space, self.config.teacher.budget, ranked)[0]
        )
        self.played.append(super()._decide(obs))
        return self.played[-1]


def test_with_teacher_prob_one_every_decision_in_the_window_is_the_experts(tmp_path):
    sink = MemorySink()
    config = TrainConfig(**{**TINY, "steps": 150}, teacher_prob=1.0, teacher_steps=MAX_STEPS)
    trainer = RecordingTrainer(config, tmp_path, sink)
    trainer.run()
    assert trainer.decisions > 50
    assert trainer.extension("teacher").decisions == trainer.decisions
    assert trainer.played == trainer.expert
    assert any(action >= trainer.space.first_topology for action in trainer.played)  # not only do-nothing
    reported = sink.of_type(MetricsEvent)[-1].values
    assert reported["train/teacher_decisions"] == reported["charts/decisions"] > 0


def test_the_teacher_fades_out_at_teacher_steps(tmp_path):
    sink = MemorySink()
    trainer = Trainer(TrainConfig(**TINY, teacher_prob=1.0, teacher_steps=100), tmp_path, sink)
    trainer.run()
    by_step = {m.step: m.values for m in sink.of_type(MetricsEvent)}
    assert by_step[100]["train/teacher_prob"] == 0.0
    assert 0 < by_step[100]["train/teacher_decisions"] == by_step[300]["train/teacher_decisions"]
    assert by_step[300]["charts/decisions"] > by_step[100]["charts/decisions"]


def test_without_teacher_nothing_is_simulated_and_nothing_is_counted(tmp_path, monkeypatch):
    def no_simulation(*args, **kwargs):
        raise AssertionError("the expert was called with teacher_prob=0")

    monkeypatch.setattr("ace_core.training.teacher.greedy_search", no_simulation)
    sink = MemorySink()
    result = run(TrainConfig(**TINY, teacher_prob=0.0), tmp_path, sink)
    assert result.decisions > 0
    assert sink.of_type(MetricsEvent)[-1].values["train/teacher_decisions"] == 0


@pytest.mark.parametrize("stop_at", [150])
def test_resume_with_teacher_continues_exactly(tmp_path, stop_at):
    config = dict(TINY, teacher_prob=0.8, teacher_steps=250)
    straight = tmp_path / "straight"
    run(TrainConfig(**config), straight, MemorySink())
    resumed = tmp_path / "resumed"
    run(TrainConfig(**{**config, "steps": stop_at}), resumed, MemorySink())
    run(TrainConfig(**config), resumed, MemorySink(), resume=True)
    a, b = load_checkpoint(straight), load_checkpoint(resumed)
    assert all(torch.equal(a["sac"]["actor"][k], b["sac"]["actor"][k]) for k in a["sac"]["actor"])
    assert np.array_equal(a["buffer"]["actions"], b["buffer"]["actions"])
    assert a["teacher"]["decisions"] == b["teacher"]["decisions"] > 0


def test_a_checkpoint_that_kept_the_teacher_count_in_the_loop_resumes_exactly(tmp_path):
    config = dict(TINY, teacher_prob=0.8, teacher_steps=250)
    straight = tmp_path / "straight"
    run(TrainConfig(**config), straight, MemorySink())
    resumed = tmp_path / "resumed"
    run(TrainConfig(**{**config, "steps": 150}), resumed, MemorySink())
    state = load_checkpoint(resumed)
    # the layout written before extensions: the count among the loop's counters
    state["loop"]["teacher_decisions"] = state.pop("teacher")["decisions"]
    torch.save(state, resumed / "checkpoint.pt")
    run(TrainConfig(**config), resumed, MemorySink(), resume=True)
    a, b = load_checkpoint(straight), load_checkpoint(resumed)
    assert all(torch.equal(a["sac"]["actor"][k], b["sac"]["actor"][k]) for k in a["sac"]["actor"])
    assert a["teacher"]["decisions"] == b["teacher"]["decisions"] > 0

import pytest

from ace_core.config import TrainConfig, field_docs
from ace_core.errors import ConfigError


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"env": "atlantis"}, "unknown env 'atlantis'; available: "),
        ({"steps": 0}, "steps=0 is out of range; accepted: 1 to"),
        ({"steps": -5}, "steps=-5 is out of range"),
        ({"gamma": 1.5}, "gamma=1.5 is out of range; accepted: 0.0 to 1.0"),
        ({"head": "huge"}, "choose one of: auto, flat, factorised"),
        ({"llm": "gpt"}, "choose one of: none, local, openai"),
        (
            {"batch_size": 512, "learning_starts": 100},
            "learning_starts (100) must be at least batch_size (512)",
        ),
        ({"teacher_prob": 1.5}, "teacher_prob=1.5 is out of range; accepted: 0.0 to 1.0"),
        ({"teacher_steps": 0}, "teacher_steps=0 is out of range; accepted: 1 to"),
        ({"teacher_top_k": -1}, "teacher_top_k=-1 is out of range; accepted: 0 to 64"),
        (
            {"teacher_prob": 0.5, "teacher_top_k": 0, "teacher_budget": 0},
            "teacher_prob > 0 needs candidates for the expert to simulate; set teacher_top_k or teacher_budget",
        ),
        ({"critic_format": "yaml"}, "critic_format='yaml' is not accepted; choose one of: choice, json"),
        ({"critic_key_steps": 0}, "critic_key_steps=0 is out of range; accepted: 1 to 26"),
        ({"actor_answer": "number"}, "actor_answer='number' is not accepted; choose one of: letter, text"),
        (
            {"actor_answer": "text", "llm_calibrate": True},
            "llm_calibrate removes a model's prior for option letters; it needs actor_answer='letter'",
        ),
    ],
)
def test_bad_settings_name_the_field_and_what_is_accepted(changes, message):
    with pytest.raises(ConfigError) as info:
        TrainConfig(**changes).validate()
    assert message in str(info.value)


def test_from_dict_refuses_unknown_keys_and_wrong_types():
    with pytest.raises(ConfigError, match=r"unknown config keys \['colour'\]"):
        TrainConfig.from_dict({"colour": "red"})
    with pytest.raises(ConfigError, match="steps must be int"):
        TrainConfig.from_dict({"steps": "many"})
    assert TrainConfig.from_dict({"gamma": 1}).gamma == 1.0
    assert TrainConfig.from_dict(TrainConfig(seed=4).to_dict()) == TrainConfig(seed=4)


def test_every_field_is_documented():
    docs = field_docs()
    assert set(docs) == set(TrainConfig().to_dict())
    assert all(docs.values())

import dataclasses

import pytest

from ace_core.config import (
    SECTIONS,
    ActorConfig,
    CriticConfig,
    FinetuneConfig,
    PretrainConfig,
    SACConfig,
    TeacherConfig,
    TrainConfig,
    ValidationConfig,
    config_fields,
    field_docs,
)
from ace_core.errors import ConfigError


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"env": "atlantis"}, "unknown env 'atlantis'; available: "),
        ({"steps": 0}, "steps=0 is a clone-only run (mine, clone, validate) and needs pretrain_mine"),
        ({"steps": -5}, "steps=-5 is out of range"),
        ({"episode_length": 1}, "episode_length=1 is out of range; accepted: 2 to"),
        ({"gamma": 1.5}, "gamma=1.5 is out of range; accepted: 0.0 to 1.0"),
        ({"head": "huge"}, "choose one of: auto, flat, factorised"),
        ({"llm": "gpt"}, "choose one of: none, local, openai"),
        (
            {"batch_size": 512, "learning_starts": 100},
            "learning_starts (100) must be at least batch_size (512)",
        ),
        ({"conservative": -1.0}, "conservative=-1.0 is out of range; accepted: 0.0 to 100.0"),
        ({"opponent": "pirate"}, "unknown opponent 'pirate'; accepted: env, none, random-line"),
        (
            {"env": "l2rpn_wcci_2020", "opponent": "random-line"},
            "opponent 'random-line' has no list of attacked lines for env 'l2rpn_wcci_2020'",
        ),
        ({"anchor_action_weight": 0.0}, "anchor_action_weight=0.0 is out of range; accepted: 0.01 to 100.0"),
        ({"demand_scale": 0.5}, "demand_scale=0.5 is out of range; accepted: 0.8 to 1.3"),
        (
            {"validation_demand_scale": 1.5},
            "validation_demand_scale=1.5 is out of range; accepted: 0.8 to 1.3",
        ),
        (
            {"validation_opponent": "none"},
            "validation_opponent: 'none' makes no attacks; accepted: random-line, storm",
        ),
        ({"validation_opponent": "pirate"}, "validation_opponent: unknown opponent 'pirate'"),
        (
            {"env": "l2rpn_wcci_2020", "validation_opponent": "random-line"},
            "validation_opponent: opponent 'random-line' has no list of attacked lines",
        ),
        (
            {"validation_decides": "worst"},
            "validation_decides='worst' is not accepted; choose one of: mean, attacks, uneven",
        ),
        (
            {"validation_decides": "attacks"},
            "validation_decides: 'attacks' needs validation_opponent, the attacks the days are played under",
        ),
        ({"validation_floor": 1.5}, "validation_floor=1.5 is out of range; accepted: 0.0 to 1.0"),
        (
            {"validation_decides": "uneven"},
            "validation_decides: 'uneven' needs validation_uneven, the demand scales of the uneven copies",
        ),
        (
            {"validation_uneven": "1.1,1.5"},
            "validation_uneven: demand scale 1.5 is out of range; accepted: 0.8 to 1.3",
        ),
        ({"validation_uneven": "1.1,1.1"}, "validation_uneven: 1.1 is given twice"),
        ({"validation_uneven": "heavy"}, "validation_uneven: demand scale 'heavy' must be a number"),
        ({"validation_uneven_seeds": 0}, "validation_uneven_seeds=0 is out of range; accepted: 1 to 100"),
        ({"validation_attack_seeds": -1}, "validation_attack_seeds=-1 is out of range; accepted: 0 to 100"),
        (
            {"validation_attack_seeds": 6},
            "validation_attack_seeds: the seeds of the attacked copy need validation_opponent",
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
    assert TrainConfig.from_dict({"gamma": 1}).sac.gamma == 1.0
    assert TrainConfig.from_dict(TrainConfig(seed=4).to_dict()) == TrainConfig(seed=4)


def test_every_field_is_documented():
    docs = field_docs()
    assert set(docs) == set(TrainConfig().to_dict())
    assert all(docs.values())


def test_sections_hold_their_settings_whether_given_flat_or_whole():
    flat = TrainConfig(hidden=32, actor_rounds=2, shaping_k=0.2, finetune_max_steps=3, seed=5)
    whole = TrainConfig(
        sac=SACConfig(hidden=32),
        llm_actor=ActorConfig(rounds=2),
        llm_critic=CriticConfig(k=0.2),
        finetune=FinetuneConfig(max_steps=3),
        seed=5,
    )
    assert flat == whole
    assert flat.sac.hidden == 32 and flat.llm_actor.rounds == 2 and flat.llm_critic.k == 0.2
    assert flat.finetune.max_steps == 3 and flat.get("shaping_k") == 0.2
    # the flat settings are the CLI's and the web form's: one per documented field, no section
    assert flat.to_dict()["actor_rounds"] == 2 and not set(flat.to_dict()) & {"sac", "llm_actor"}
    assert [f.name for f in config_fields()] == list(flat.to_dict())
    # a copy never shares a section with the config it came from
    copy = dataclasses.replace(flat, steps=7)
    copy.sac.hidden = 8
    assert flat.sac.hidden == 32 and copy.steps == 7
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_grad_norm'"):
        TrainConfig(max_grad_norm=1.0)  # a code setting, not a flat one: set it through its section


def test_the_full_dict_keeps_every_setting_and_reads_back():
    config = TrainConfig(
        sac=SACConfig(max_grad_norm=3.0), llm_critic=CriticConfig(max_key_steps=2), hidden=16
    )
    full = config.full_dict()
    assert full["sac"]["max_grad_norm"] == 3.0 and full["llm_critic"]["max_key_steps"] == 2
    assert full["finetune"]["target_modules"] == ("q_proj", "k_proj", "v_proj", "o_proj")
    assert TrainConfig.from_dict(full) == config
    with pytest.raises(ConfigError, match=r"unknown sac settings \['depth'\]"):
        TrainConfig.from_dict({"sac": {"depth": 3}})
    with pytest.raises(ConfigError, match="sac.hidden must be int"):
        TrainConfig.from_dict({"sac": {"hidden": "wide"}})


def test_differences_compare_only_the_settings_a_saved_config_has():
    config = TrainConfig(hidden=16, teacher_budget=8)
    old_flat = {k: v for k, v in config.to_dict().items() if k != "teacher_budget"}
    assert config.differences(old_flat) == []  # teacher_budget was added after: not compared
    assert config.differences({**old_flat, "hidden": 32, "shaping_k": 0.3}) == ["hidden", "shaping_k"]
    full = config.full_dict()
    del full["sac"]["max_grad_norm"]
    assert config.differences(full) == []
    full["sac"]["max_grad_norm"] = 1.0
    full["llm_critic"]["k"] = 0.5
    assert config.differences(full) == ["sac.max_grad_norm", "shaping_k"]


def test_the_run_sections_hold_the_imitation_anchor_teacher_and_validation_settings():
    config = TrainConfig(
        pretrain_mine="auto", pretrain_seeds=3, anchor_mine="a, b", teacher_prob=0.5, validate_every=100
    )
    assert config.pretrain == PretrainConfig(mine="auto", seeds=3)
    assert config.teacher == TeacherConfig(prob=0.5) and config.validation == ValidationConfig(every=100)
    assert config.anchor_mines() == ["a", "b"] and config.get("anchor_mine") == "a, b"
    assert TrainConfig(pretrain_mine="m").anchor_mines() == ["m"]  # no anchor_mine: the pretrain mine
    assert config.full_dict()["teacher"]["prob"] == 0.5 and "teacher_prob" not in config.full_dict()
    assert TrainConfig.from_dict(config.full_dict()) == config == TrainConfig.from_dict(config.to_dict())


def test_a_checkpoint_written_before_a_section_existed_reads_its_settings_into_it():
    config = TrainConfig(
        pretrain_mine="auto", pretrain_epochs=5, teacher_top_k=2, validation_seeds=3, anchor=1.0
    )
    # a checkpoint of then: the settings of pretrain, anchoring, teacher and validation under
    # their flat names, beside TrainConfig's own and the sections it had
    old_sections = ("sac", "llm_actor", "llm_critic", "finetune")
    old = {name: value for name, value in config.full_dict().items() if name not in SECTIONS}
    old |= {name: value for name, value in config.full_dict().items() if name in old_sections}
    old |= {
        f.name: config.get(f.name) for f in config_fields() if f.section and f.section not in old_sections
    }
    assert "pretrain_epochs" in old and "pretrain" not in old
    assert TrainConfig.from_dict(old) == config and config.differences(old) == []
    assert config.differences({**old, "pretrain_epochs": 6}) == ["pretrain_epochs"]


def test_every_flat_setting_is_shown_in_a_group_its_section_names():
    groups = {f.name: f.group for f in config_fields()}
    assert groups["pretrain_mine"] == PretrainConfig.title and groups["teacher_anchor"] == TeacherConfig.title
    assert groups["validate_every"] == groups["validation_seeds"] == ValidationConfig.title
    assert groups["anchor"] == groups["anchor_mine"] == "Expert anchor"  # a SAC weight shown with its mines
    assert groups["hidden"] == SACConfig.title and groups["env"] == "Environment"
    assert {groups[f.name] for f in config_fields() if f.section == "llm_actor"} == {ActorConfig.title}
    assert all(hasattr(kind, "title") for kind in SECTIONS.values())

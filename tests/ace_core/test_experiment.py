import csv
import json
import math
import xml.etree.ElementTree as ET

import pytest

from ace_core.config import TrainConfig
from ace_core.errors import ConfigError
from ace_core.evaluation.ablations import first_round_acceptance, run_ablations, unsafe_share, variant_config
from ace_core.evaluation.runner import evaluate
from ace_core.evaluation.svg import line_chart
from ace_core.evaluation.table import agent_groups, run_table, split_agents
from tests.sandbox_settings import sandbox_settings

BASE = sandbox_settings(
    steps=60,
    learning_starts=16,
    batch_size=16,
    hidden=32,
    log_every=20,
    r_bar=0.5,
    actor_every=20,
    llm_budget=10,
)


def test_variants_change_only_what_they_ablate():
    base = TrainConfig(**BASE)
    assert variant_config(base, "sac", 2).llm == "none"
    ace = variant_config(base, "ace", 1)
    assert ace.llm == "local" and ace.actor and ace.critic and ace.seed == 1
    assert not variant_config(base, "ace-no-actor", 0).actor
    assert variant_config(base, "ace-rbar-0.3", 0).r_bar == -0.3
    assert variant_config(base, "ace-traj-action", 0).llm_critic.selection == "action"
    control = variant_config(base, "random-control", 0)
    assert control.llm == "random" and not control.critic
    with pytest.raises(ConfigError, match="accepted: sac, ace"):
        variant_config(base, "gpt", 0)


def test_a_tiny_ablation_writes_tables_and_curves(tmp_path):
    result = run_ablations(
        TrainConfig(**BASE),
        tmp_path,
        1,
        ["sac", "random-control"],
        1,
        (0,),
        "python -m ace_core experiment ...",
    )
    assert [row["variant"] for row in result["table"]] == ["sac", "random-control"]
    with open(tmp_path / "ablations.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[1]["variant"] == "random-control" and float(rows[1]["llm_calls_mean"]) > 0
    assert 0.0 <= float(rows[1]["first_round_base_mean"]) <= 1.0
    assert math.isnan(float(rows[1]["first_round_lora_mean"]))  # the random chooser has no adapter
    assert 0.0 <= float(rows[0]["test_survival_mean"]) <= 1.0
    markdown = (tmp_path / "ablations.md").read_text()
    assert "| random-control | 1 |" in markdown and "python -m ace_core experiment ..." in markdown
    ET.fromstring((tmp_path / "curves.svg").read_text())  # well-formed
    assert (tmp_path / "curves.csv").read_text().startswith("variant,step,")
    # a second call reuses the finished runs instead of training again
    again = run_ablations(TrainConfig(**BASE), tmp_path, 1, ["sac"], 1, (0,))
    assert again["runs"][0]["test_survival"] == result["runs"][0]["test_survival"]
    # ... and evaluates them again when the grid seeds change
    report = json.loads((tmp_path / "sac" / "seed0" / "test_report.json").read_text())
    assert report["seeds"] == [0] and report["eval_episodes"] == 1
    run_ablations(TrainConfig(**BASE), tmp_path, 1, ["sac"], 1, (0, 1))
    report = json.loads((tmp_path / "sac" / "seed0" / "test_report.json").read_text())
    assert report["seeds"] == [0, 1] and len(report["episodes"]) == 2


def test_runs_trained_on_heavier_days_are_tested_on_them_and_refused_at_another_scale(tmp_path):
    heavier = run_ablations(TrainConfig(**BASE, demand_scale=1.1), tmp_path, 1, ["sac"], 1, (0,))
    run_dir = tmp_path / "sac" / "seed0"
    report = json.loads((run_dir / "test_report.json").read_text())
    assert report["demand_scale"] == 1.1  # the Runner's own record
    assert "every load and production x1.1 (as in training)" in (tmp_path / "ablations.md").read_text()
    # the same policy on the same day as it is: the heavier one was really played
    as_they_are = evaluate(TrainConfig(**BASE).env, f"sac:{run_dir}", "test", 1, seeds=(0,))
    assert as_they_are["reward_mean"] != heavier["runs"][0]["test_reward"]
    # a finished run trained with other settings is refused, not reused: nothing is written
    for other in (TrainConfig(**BASE), TrainConfig(**{**BASE, "demand_scale": 1.1, "steps": 80})):
        with pytest.raises(
            ConfigError,
            match=r"sac/seed0 holds a run trained with other settings \((demand_scale|steps) differ\)",
        ):
            run_ablations(other, tmp_path, 1, ["sac"], 1, (0,))
    assert json.loads((run_dir / "test_report.json").read_text()) == report


def test_unsafe_picks_count_illegal_moves_game_overs_and_lines_at_their_limit(tmp_path):
    def pick(max_rho, error="", index=5):
        return {"action_index": index, "simulated_max_rho": max_rho, "error": error, "accepted": False}

    rounds = [
        pick(0.8),
        pick(1.0),  # at the limit
        pick(None, "the grid would fail"),
        pick(None, "illegal"),
        pick(None, "timeout", index=None),  # the LLM's answer was lost: no pick simulated
    ]
    events = [{"event": "refinement", "adapter_version": 0, "rounds": rounds}, {"event": "episode"}]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert unsafe_share(tmp_path) == pytest.approx(3 / 4)
    assert math.isnan(unsafe_share(tmp_path / "nowhere"))  # a run without refinements


def test_line_chart_draws_every_series_and_survives_flat_data():
    svg = line_chart({"a": [(0, 1.0), (10, 2.0)], "b <&>": [(0, 1.0), (10, 1.0)]}, "t", "x", "y")
    root = ET.fromstring(svg)
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 2 and "b &lt;&amp;&gt;" in svg
    ET.fromstring(line_chart({"flat": [(5, 0.5)]}, "t", "x", "y"))


def testfirst_round_acceptance_is_split_by_adapter(tmp_path):
    def refinement(adapter, accepted_rounds):
        rounds = [{"accepted": a} for a in accepted_rounds]
        return {"event": "refinement", "adapter_version": adapter, "rounds": rounds}

    events = [
        refinement(0, [True]),
        refinement(0, [False, True]),
        refinement(0, [False, False]),
        {"event": "episode", "steps_survived": 3},
        refinement(1, [True]),
        refinement(2, [False, True]),
    ]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    rates = first_round_acceptance(tmp_path)
    assert rates == {"first_round_base": pytest.approx(1 / 3), "first_round_lora": pytest.approx(0.5)}


def test_agent_lists_keep_expert_settings_together_and_expand_runs():
    assert split_agents("do-nothing, greedy:budget=8,lines=1,sac:runs/bc-{0,1}") == [
        "do-nothing",
        "greedy:budget=8,lines=1",
        "sac:runs/bc-{0,1}",
    ]
    (group,) = agent_groups("sac:runs/bc-{0,1,2}")
    assert group.specs == ("sac:runs/bc-0", "sac:runs/bc-1", "sac:runs/bc-2") and group.aggregate
    assert not agent_groups("sac-checked:runs/x:10")[0].aggregate
    with pytest.raises(ConfigError, match="unbalanced braces"):
        agent_groups("sac:runs/bc-{0,1")


def test_a_comparison_table_writes_markdown_and_csv_and_resumes(tmp_path):
    short = {"nb_episode": 1, "episode_length": 96}
    rows = run_table("l2rpn_case14_sandbox", "do-nothing,greedy:budget={4,8},lines=1", tmp_path, **short)
    assert [r["agent"] for r in rows] == [
        "do-nothing",
        "greedy:budget=4,lines=1",
        "greedy:budget=8,lines=1",
        "greedy:budget={4,8},lines=1",
    ]
    runs = [r["survival_mean"] for r in rows[1:3]]
    assert rows[3]["runs"] == 2 and rows[3]["survival_mean"] == pytest.approx(sum(runs) / 2)
    with open(tmp_path / "table.csv") as handle:
        table = list(csv.DictReader(handle))
    assert table[0]["agent"] == "do-nothing" and table[0]["episodes"] == "1"
    markdown = (tmp_path / "table.md").read_text()
    assert "| do-nothing |" in markdown and "opponent `env`" in markdown
    report = tmp_path / "do-nothing" / "report.json"
    assert json.loads(report.read_text())["agent"] == "do-nothing"
    # a second call reuses every report (none is written again) and adds only the new agent
    written = {path: path.stat().st_mtime_ns for path in tmp_path.glob("*/report.json")}
    again = run_table("l2rpn_case14_sandbox", "do-nothing,reconnect", tmp_path, **short)
    assert again[0] == rows[0] and again[1]["agent"] == "reconnect"
    assert all(path.stat().st_mtime_ns == mtime for path, mtime in written.items())
    # ... but never mixes in a report made with other settings
    with pytest.raises(ConfigError, match="other settings"):
        run_table("l2rpn_case14_sandbox", "do-nothing", tmp_path, nb_episode=1)


def test_a_runs_last_metrics_keep_the_counters_a_later_validation_row_lacks(tmp_path):
    from ace_core.evaluation.ablations import _last_metrics

    rows = [
        {"step": 500, "llm/calls": 3.0, "charts/decisions": 40.0},
        {"step": 1000, "llm/calls": 7.0, "charts/decisions": 90.0},
        {"step": 1000, "eval/validation_survival": 0.8},  # validation reports alone, last
    ]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(row) for row in rows))
    last = _last_metrics(tmp_path)
    assert last["llm/calls"] == 7.0 and last["charts/decisions"] == 90.0
    assert last["eval/validation_survival"] == 0.8

"""One name per grid element: lines by the substations they join, the same name in action
descriptions, the diagram's layout, alarms and N-1; a grid's own readable names from a file,
refused with the reason when the file is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ace_core.errors import ConfigError
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.names import default_names, element_names
from ace_core.live import alarms_between, grid_layout


def test_lines_are_named_by_their_substations_and_parallel_lines_by_their_order():
    names = default_names([0, 1, 0, 1], [1, 2, 1, 2], n_sub=3, n_gen=1, n_load=2)
    assert names.lines == ("line 0-1", "line 1-2", "line 0-1 #2", "line 1-2 #2")
    assert (names.substations, names.generators, names.loads) == (
        ("substation 0", "substation 1", "substation 2"),
        ("generator 0",),
        ("load 0", "load 1"),
    )
    assert names.lines_of([1, 2]) == "line 1-2, line 0-1 #2"


def test_one_line_has_one_name_in_actions_layout_alarms_and_n1(sandbox, sandbox_space, fresh_obs):
    from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline

    line = 4  # grid2op's "1_4_4", between substations 1 and 4
    name = sandbox_space.line_name(line)
    assert name == "line 1-4"
    assert sandbox_space.describe(1 + line) == f"reconnect {name}"
    at_sub_1 = [sandbox_space.describe(i) for i in range(sandbox_space.first_topology, sandbox_space.n)]
    assert any(name in words and words.startswith("substation 1: ") for words in at_sub_1)
    layout = grid_layout(sandbox, sandbox_space)
    assert layout["lines"][line]["name"] == name and layout["lines"][line]["raw"] == "1_4_4"
    assert layout["substations"][1]["name"] == "substation 1" and name in layout["substations"][1]["elements"]
    state = {"overloads": [line], "rho": [1.05 if i == line else 0.5 for i in range(20)], "maintenance": []}
    (alarm,) = alarms_between(None, state, done=False, finished=False, names=sandbox_space.names)
    assert alarm["message"] == f"{name} overloaded (rho 1.05)"
    pipeline = RecommendationPipeline(sandbox, sandbox_space, PipelineConfig(horizon=1))
    screen = pipeline.run(fresh_obs).security.n1
    assert [o.line_name for o in screen.outages] == [sandbox_space.line_name(o.line) for o in screen.outages]
    hot = [o for o in screen.outages if o.worst_line is not None]
    assert hot and all(o.worst_line_name == sandbox_space.line_name(o.worst_line) for o in hot)


def test_a_grid_s_readable_names_file_replaces_the_defaults(tmp_path, monkeypatch, sandbox):
    monkeypatch.setenv("GRIDACE_NAMES_DIR", str(tmp_path))
    (tmp_path / "l2rpn_case14_sandbox.json").write_text(
        json.dumps({"lines": {"4": "Avelin-Mastaing"}, "substations": {"1": "Avelin"}})
    )
    names = element_names(sandbox, "l2rpn_case14_sandbox")
    assert names.line(4) == "Avelin-Mastaing" and names.line(3) == "line 1-3"
    assert names.substation(1) == "Avelin" and names.raw_lines[4] == "1_4_4"
    space = build_action_space(sandbox)
    assert space.describe(5) == "reconnect Avelin-Mastaing"
    described = [space.describe(i) for i in range(space.first_topology, space.n)]
    assert any(words.startswith("Avelin: ") and "Avelin-Mastaing" in words for words in described)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not readable JSON"),
        (json.dumps({"wires": {}}), "accepted kinds: lines, substations, generators, loads, storages"),
        (json.dumps({"lines": {"99": "far"}}), "lines id '99' does not exist; accepted: 0 to 19"),
        (json.dumps({"lines": {"-1": "x"}}), "lines id '-1' does not exist"),
        (json.dumps({"lines": {"2": ""}}), "lines 2 needs a name of 1 to 60 characters"),
        (json.dumps({"lines": {"2": "same", "3": "same"}}), "lines named twice: same"),
    ],
)
def test_a_wrong_names_file_is_refused_with_the_reason(tmp_path, monkeypatch, content, message):
    monkeypatch.setenv("GRIDACE_NAMES_DIR", str(tmp_path))
    (tmp_path / "l2rpn_case14_sandbox.json").write_text(content)
    with pytest.raises(ConfigError, match=message):
        element_names(make_env("l2rpn_case14_sandbox"), "l2rpn_case14_sandbox")


def test_names_are_unique_on_the_large_grids():
    env = make_env("l2rpn_neurips_2020_track1")
    names = element_names(env, "l2rpn_neurips_2020_track1")
    assert len(set(names.lines)) == env.n_line and np.all([n.startswith("line ") for n in names.lines])

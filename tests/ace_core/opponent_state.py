"""An attack under way, set on an env's opponent as an episode ending under attack leaves it
(grid2op has no public way to set it)."""

from __future__ import annotations


def attack_under_way(env, line: int, steps_left: int = 20) -> None:
    """``env``'s opponent as it stands after attacking ``line``, ``steps_left`` steps still to go."""
    attack = env._oppSpace.action_space({"set_line_status": [(line, -1)]})
    env._oppSpace._set_state((0.0, False, steps_left, 0, attack))

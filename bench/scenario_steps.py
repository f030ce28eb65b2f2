"""Steps each agent survives on named scenarios: where an episode is lost, and whether it is lost alone.

    .venv/bin/python bench/scenario_steps.py --env rte_case14_realistic \
        --agents do-nothing,greedy,sac:runs/cql14-3d-s0 \
        --scenarios 000@3456+864,000@3456+288,001@4320+864,001@4608+288 [--seed 0]

A scenario is named as the reports name it, ``CHRONIC@START+LENGTH`` (``000@3456+288``: chronic
000 from step 3456, one day). Playing a three-day test scenario and then its days one by one tells
a policy that loses a hard day from one whose errors compound over the days before. Prints one
JSON object: ``{"steps": {agent: {scenario: steps survived}}, ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.agents.loading import load_agent  # noqa: E402
from ace_core.errors import ConfigError  # noqa: E402
from ace_core.grid.envs import make_env  # noqa: E402
from ace_core.grid.scenarios import Scenario, chronic_lengths  # noqa: E402
from ace_core.training.validation_episodes import play  # noqa: E402


def named_scenario(name: str, chronics: list[tuple[str, int]]) -> Scenario:
    """The scenario ``CHRONIC@START+LENGTH`` of this env, or ConfigError naming what is accepted."""
    chronic, _, rest = name.partition("@")
    start, _, length = rest.partition("+")
    names = [chronic_name for chronic_name, _ in chronics]
    if chronic not in names or not start.isdigit() or not length.isdigit():
        raise ConfigError(
            f"scenario {name!r}: accepted CHRONIC@START+LENGTH with CHRONIC one of {', '.join(names)}"
        )
    index = names.index(chronic)
    if int(start) + int(length) > chronics[index][1] or int(length) < 2:
        raise ConfigError(f"scenario {name!r} does not fit chronic {chronic} ({chronics[index][1]} steps)")
    return Scenario(index, chronic, int(start), int(length))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True)
    parser.add_argument("--agents", required=True, help="comma-separated agent specs")
    parser.add_argument("--scenarios", required=True, help="comma-separated CHRONIC@START+LENGTH")
    parser.add_argument("--seed", type=int, default=0, help="grid seed")
    args = parser.parse_args()
    env = make_env(args.env)
    try:
        chosen = [named_scenario(name, chronic_lengths(env)) for name in args.scenarios.split(",")]
    except ConfigError as exc:
        parser.exit(2, f"error: {exc}\n")
    steps: dict[str, dict[str, int]] = {}
    for spec in args.agents.split(","):
        agent = load_agent(spec, env)
        steps[spec] = {scenario.name: play(env, agent, scenario, args.seed)[0] for scenario in chosen}
    print(json.dumps({"env": args.env, "seed": args.seed, "steps": steps}, indent=2))


if __name__ == "__main__":
    main()

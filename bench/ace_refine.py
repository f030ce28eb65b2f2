"""LLM Policy Actor on held-out bad cases: seconds per call and per refinement, acceptance rate.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/ace_refine.py [--env rte_case14_realistic] [--cases 10]
        [--llm local|openai|random] [--llm-model FOLDER] [--adapter ADAPTER_FOLDER] [--first-round-only]

Bad cases come from the env's **validation** scenarios (never trained on): the grid runs with
do-nothing until max rho reaches 0.9; do-nothing is then the "RL action" to beat, and the actor
refines it (up to 5 rounds, each validated by simulation). Prints one JSON object. Comparing
``--adapter`` (a LoRA round's output) with no adapter on the same cases tells whether fine-tuning
raised the validated acceptance (``first_round_acceptance`` isolates the LLM's own choice from the
retries); ``--llm random`` gives the validated random-search control on the same cases.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_core.config import TrainConfig  # noqa: E402
from ace_core.grid.action_space import build_action_space  # noqa: E402
from ace_core.grid.envs import make_env  # noqa: E402
from ace_core.grid.features import FeatureBuilder  # noqa: E402
from ace_core.grid.scenarios import reset_to, scenarios  # noqa: E402
from ace_core.llm.actor import ActorConfig, Decision, PolicyActor  # noqa: E402
from ace_core.llm.coevolution import make_chooser  # noqa: E402


def bad_cases(env, space, features, n: int, threshold: float = 0.9) -> list[Decision]:
    cases: list[Decision] = []
    for i, scenario in enumerate(scenarios(env, "validation")):
        obs = reset_to(env, scenario, seed=i)
        done = False
        while not done and len(cases) < n:
            if obs.rho.max() >= threshold:
                cases.append(Decision(0, i, obs.copy(), features(obs), space.top_mask(obs), 0, 0.0))
                # skip ahead: neighbouring steps are nearly the same case
                for _ in range(12):
                    obs, _, done, _ = env.step(env.action_space({}))
                    if done:
                        break
            else:
                obs, _, done, _ = env.step(env.action_space({}))
        if len(cases) >= n:
            break
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="rte_case14_realistic")
    parser.add_argument("--cases", type=int, default=10)
    parser.add_argument("--llm", default="local", choices=("local", "openai", "random"))
    parser.add_argument("--llm-model", default="")
    parser.add_argument("--adapter", default="", help="LoRA adapter folder to load on the local model")
    parser.add_argument("--first-round-only", action="store_true", help="one round per case (no retries)")
    args = parser.parse_args()

    env = make_env(args.env)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    cases = bad_cases(env, space, features, args.cases)
    config = TrainConfig(env=args.env, llm=args.llm, llm_model=args.llm_model, critic=args.llm != "random")
    started = time.perf_counter()
    chooser = make_chooser(config)
    load_seconds = time.perf_counter() - started
    if args.adapter:
        chooser.load_adapter(args.adapter)
    rounds = 1 if args.first_round_only else 5
    actor = PolicyActor(chooser, space, env.action_space, features, ActorConfig(rounds=rounds))
    refinements = []
    for i, case in enumerate(cases):
        started = time.perf_counter()
        refinement = actor.refine(case, f"bench{i}", 0, rounds)
        refinements.append((refinement, time.perf_counter() - started))
    calls = [r.seconds for refinement, _ in refinements for r in refinement.event.rounds]
    first = [refinement.event.rounds[0].accepted for refinement, _ in refinements if refinement.event.rounds]
    print(
        json.dumps(
            {
                "env": args.env,
                "llm": chooser.name,
                "adapter": args.adapter,
                "cases": len(cases),
                "load_seconds": round(load_seconds, 2),
                "call_seconds_median": round(statistics.median(calls), 3) if calls else None,
                "call_seconds_max": round(max(calls), 3) if calls else None,
                "refinement_seconds_median": round(statistics.median(s for _, s in refinements), 3),
                "calls": len(calls),
                "acceptance": sum(r.accepted for r, _ in refinements) / max(len(refinements), 1),
                "first_round_acceptance": sum(first) / max(len(first), 1),
                "rounds_to_accept": [len(r.event.rounds) for r, _ in refinements if r.accepted],
                "answers": [
                    r.event.rounds[0].response.split(" ")[0] for r, _ in refinements if r.event.rounds
                ],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

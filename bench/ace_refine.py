"""LLM Policy Actor on held-out bad cases: acceptance (oracle, raw, calibrated, random) and timings.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/ace_refine.py [--env rte_case14_realistic] [--cases 40]
        [--llm local|openai|random] [--llm-model FOLDER] [--adapter ADAPTER_FOLDER] [--first-round-only]
        [--candidates 12] [--no-calibrate] [--answer letter|text] [--split validation]
        [--cases-out cases.jsonl]

Bad cases come from the env's **validation** scenarios (never trained on): the grid runs with
do-nothing until max rho reaches 0.9; do-nothing is then the "RL action" to beat, and the actor
refines it (up to 5 rounds, each validated by simulation). At most ``--per-scenario`` cases per
scenario, ``--skip`` steps apart, so that the cases are not all the same afternoon. Case ``i`` is
refined as ``bench{i}`` at step 0, so its shortlist is shuffled as the actor shuffles it in training
(:meth:`PolicyActor.shortlist`), the same way on every run.

Besides the actor's own validated result, every shortlist option of every case is simulated once
(``simulate_many``), which gives on the same cases:

- ``oracle``: cases whose shortlist holds an option better than do-nothing (the ceiling);
- ``first_round_raw`` / ``first_round_calibrated``: cases where the letter with the highest raw
  score / calibrated score (raw minus content-free) is such an option: both from the same
  forward pass, so comparing them costs nothing;
- ``random_expected``: the expected first-round count of a uniform pick (sum of winner shares).

``first_round_accepted`` is what the actor itself validated with ``obs.simulate`` (its choice is
calibrated unless ``--no-calibrate``: the bench calibrates by default so that the content-free
scores, and hence both figures, are computed). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from ace_core.config import TrainConfig  # noqa: E402
from ace_core.grid.action_space import build_action_space  # noqa: E402
from ace_core.grid.envs import make_env  # noqa: E402
from ace_core.grid.features import FeatureBuilder  # noqa: E402
from ace_core.grid.scenarios import reset_to, scenarios  # noqa: E402
from ace_core.llm.actor import ActorConfig, Decision, PolicyActor  # noqa: E402
from ace_core.llm.coevolution import make_chooser  # noqa: E402


def bad_cases(
    env,
    space,
    features,
    n: int,
    split: str = "validation",
    per_scenario: int = 6,
    skip: int = 12,
    threshold: float = 0.9,
) -> list[Decision]:
    """Observations of ``split`` scenarios where do-nothing reached max rho >= threshold."""
    cases: list[Decision] = []
    for i, scenario in enumerate(scenarios(env, split)):
        obs = reset_to(env, scenario, seed=i)
        done, taken = False, 0
        while not done and taken < per_scenario and len(cases) < n:
            if obs.rho.max() >= threshold:
                cases.append(Decision(0, i, obs.copy(), features(obs), space.top_mask(obs), 0, 0.0))
                taken += 1
                # skip ahead: neighbouring steps are nearly the same case
                for _ in range(skip):
                    obs, _, done, _ = env.step(env.action_space({}))
                    if done:
                        break
            else:
                obs, _, done, _ = env.step(env.action_space({}))
        if len(cases) >= n:
            break
    return cases


def winners(actor: PolicyActor, case: Decision, options: list[int]) -> tuple[float, list[bool]]:
    """Do-nothing's simulated reward and, per option, whether it beats it (one shared simulator)."""
    rl, *outcomes = actor.simulate_options(case.obs, [case.action, *options])
    return rl.reward, [o.valid and o.reward > rl.reward for o in outcomes]


def action_counts(space, actions: list[int], top: int = 5) -> dict[str, int]:
    """How often each action was chosen, most frequent first, by its description."""
    return {space.describe(a): n for a, n in collections.Counter(actions).most_common(top)}


def best_fixed_action(space, rows: list[dict]) -> dict:
    """The rule "pick action X whenever it is listed" that wins the most cases, and how many.

    A chooser that learned one good move, not the grid state, scores about this much; its choices
    can also be positional (see ``raw_answers``), hence both figures.
    """
    counts = collections.Counter(a for r in rows for a in r["winning_actions"])
    if not counts:
        return {"action": None, "wins": 0}
    action, wins = counts.most_common(1)[0]
    return {"action": space.describe(action), "wins": wins}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="rte_case14_realistic")
    parser.add_argument("--split", default="validation", choices=("train", "validation", "test"))
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--per-scenario", type=int, default=6)
    parser.add_argument("--skip", type=int, default=12)
    parser.add_argument("--llm", default="local", choices=("local", "openai", "random"))
    parser.add_argument("--llm-model", default="")
    parser.add_argument("--adapter", default="", help="LoRA adapter folder to load on the local model")
    parser.add_argument("--candidates", type=int, default=ActorConfig.candidates)
    parser.add_argument(
        "--calibrate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the actor chooses by calibrated scores (raw and calibrated are both reported either way)",
    )
    parser.add_argument(
        "--answer",
        default="letter",
        choices=("letter", "text"),
        help="the LLM names its choice by letter, or by the option's text (no calibration then)",
    )
    parser.add_argument("--first-round-only", action="store_true", help="one round per case (no retries)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random control")
    parser.add_argument("--cases-out", default="", help="write one JSON line per case here")
    args = parser.parse_args()

    env = make_env(args.env)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    cases = bad_cases(env, space, features, args.cases, args.split, args.per_scenario, args.skip)
    config = TrainConfig(
        env=args.env, llm=args.llm, llm_model=args.llm_model, critic=args.llm != "random", seed=args.seed
    )
    started = time.perf_counter()
    chooser = make_chooser(config)
    load_seconds = time.perf_counter() - started
    if args.adapter:
        chooser.load_adapter(args.adapter)
    rounds = 1 if args.first_round_only else 5
    actor = PolicyActor(
        chooser,
        space,
        env.action_space,
        features,
        ActorConfig(
            rounds=rounds,
            candidates=args.candidates,
            calibrate=args.calibrate and args.answer == "letter",
            answer=args.answer,
        ),
    )
    rows = []
    for i, case in enumerate(cases):
        started = time.perf_counter()
        refinement = actor.refine(case, f"bench{i}", 0, rounds)
        seconds = time.perf_counter() - started
        _, wins = winners(actor, case, refinement.options)
        row = {
            "case": i,
            "scenario": case.episode,
            "options": len(wins),
            "winners": int(sum(wins)),
            "accepted": refinement.accepted,
            "first_round_accepted": bool(refinement.event.rounds and refinement.event.rounds[0].accepted),
            "rounds": len(refinement.event.rounds),
            "seconds": round(seconds, 2),
            "call_seconds": [round(r.seconds, 2) for r in refinement.event.rounds],
            "winning_actions": [int(a) for a, won in zip(refinement.options, wins) if won],
        }
        if refinement.scores:
            raw, baseline = refinement.scores[0]
            row["raw_choice"] = int(np.argmax(raw))
            row["raw_action"] = int(refinement.options[row["raw_choice"]])
            row["raw_wins"] = bool(wins[row["raw_choice"]])
            if baseline is not None:
                row["calibrated_choice"] = int(np.argmax(np.subtract(raw, baseline)))
                row["calibrated_wins"] = bool(wins[row["calibrated_choice"]])
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    if args.cases_out:
        Path(args.cases_out).write_text("".join(json.dumps(r) + "\n" for r in rows))

    calls = [s for r in rows for s in r["call_seconds"]]
    scored = [r for r in rows if "raw_choice" in r]
    calibrated = [r for r in rows if "calibrated_choice" in r]
    figures = {
        "env": args.env,
        "split": args.split,
        "llm": chooser.name,
        "adapter": args.adapter,
        "candidates": args.candidates,
        "calibrate": args.calibrate and args.answer == "letter",
        "answer": args.answer,
        "cases": len(rows),
        "load_seconds": round(load_seconds, 2),
        "call_seconds_median": round(statistics.median(calls), 3) if calls else None,
        "call_seconds_max": round(max(calls), 3) if calls else None,
        "refinement_seconds_median": round(statistics.median(r["seconds"] for r in rows), 3)
        if rows
        else None,
        "calls": len(calls),
        "oracle": sum(r["winners"] > 0 for r in rows),
        "random_expected": round(sum(r["winners"] / r["options"] for r in rows if r["options"]), 2),
        "accepted": sum(r["accepted"] for r in rows),
        "first_round_accepted": sum(r["first_round_accepted"] for r in rows),
        "rounds_to_accept": [r["rounds"] for r in rows if r["accepted"]],
    }
    if scored and getattr(chooser, "scored", True):
        figures["first_round_raw"] = sum(r["raw_wins"] for r in scored)
        figures["raw_answers"] = "".join("ABCDEFGHIJKLMNOPQRSTUVWXYZ"[r["raw_choice"]] for r in scored)
        figures["raw_actions"] = action_counts(space, [r["raw_action"] for r in scored])
    figures["best_fixed_action"] = best_fixed_action(space, rows)
    if calibrated:
        figures["first_round_calibrated"] = sum(r["calibrated_wins"] for r in calibrated)
        figures["calibrated_answers"] = "".join(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[r["calibrated_choice"]] for r in calibrated
        )
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

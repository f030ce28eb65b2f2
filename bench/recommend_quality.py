"""What the recommendation pipeline shows over test days, checked against grid2op itself.

For each env: the env is made with one hour of perfect forecasts built from its chronics, and
each test day is played by an operator who accepts the top card whenever the grid is stressed
(max rho >= ``--threshold``) and one is shown, and otherwise does nothing. At every stressed step
the pipeline runs (policy top-5 with the run's trained weights when ``--policy`` is given, random
weights otherwise, plus the expert's best 4, chosen by max rho or, with ``--expert-n1 N``, by
the safety order over its best N screened for N-1), and every shown recommendation is re-simulated with
grid2op's ``obs.simulate`` and compared with doing nothing: a game over where doing nothing
survives, a higher max rho or more overloaded lines count as "worse than doing nothing". Printed
as JSON:

- ``shown_worse_than_nothing``: shown recommendations worse than doing nothing (must be 0), out of
  ``shown``;
- ``top_card_n1_secure`` / ``doing_nothing_n1_secure_where_a_card_is_shown``: over the steps
  with a card, the share where the top card's grid, and doing nothing's, survive every single
  line outage without overload (``doing_nothing_n1_secure``: over all stressed steps);
- ``top_card_n1_worst_lower_than_nothing``: how often the top card's worst single outage loads a
  line less than doing nothing's, and the mean worst rho of both;
- ``rejected``: candidates the pipeline rejected, with the most frequent reasons;
- ``survived_steps`` of the days played this way, against doing nothing's;
- ``pipeline_ms_mean``: the pipeline's mean time per stressed step.

    .venv/bin/python bench/recommend_quality.py [--envs rte_case14_realistic,l2rpn_wcci_2020]
        [--policy runs/sac0] [--days 1] [--split test] [--threshold 0.9] [--expert-n1 16]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worse_than_nothing(obs, action, noop) -> bool:
    """grid2op's own verdict: the action's one-step outcome against doing nothing's."""
    import numpy as np

    def outcome(a):
        sim_obs, _, done, info = obs.simulate(a)
        failed = done or bool(info.get("exception")) or bool(info.get("is_illegal"))
        return failed, None if failed else np.asarray(sim_obs.rho)

    failed, rho = outcome(action)
    ref_failed, ref_rho = outcome(noop)
    if failed:
        return True
    if ref_failed:
        return False
    return bool(rho.max() > ref_rho.max() + 1e-6 or (rho >= 1).sum() > (ref_rho >= 1).sum())


def play_day(env, pipeline, space, scenario, seed: int, threshold: float, follow: bool) -> dict:
    from ace_core.grid.scenarios import reset_to

    obs = reset_to(env, scenario, seed)
    noop = env.action_space({})
    stats = collections.Counter()
    reasons = collections.Counter()
    survived = 0
    n1_worst: list[tuple[float, float]] = []
    for _ in range(scenario.length):
        action = noop
        if obs.rho.max() >= threshold:
            result = pipeline.run(obs, state_backend=env.backend)
            stats["stressed_steps"] += 1
            stats["pipeline_ms"] += result.timings_ms["total_ms"]
            stats["doing_nothing_n1_secure"] += bool(result.reference.n1 and result.reference.n1.secure)
            for card in result.recommendations:
                stats["shown"] += 1
                stats["shown_worse_than_nothing"] += worse_than_nothing(
                    obs, space.to_grid2op(card.action_index, env.action_space), noop
                )
            for card in result.rejected:
                stats["rejected"] += 1
                reasons[re.sub(r"(?<=\s)[\d.]+%?", "N", card.rejected_because.split(":")[0])] += 1
            if result.recommendations:
                top = result.recommendations[0]
                stats["steps_with_a_card"] += 1
                stats["top_card_n1_secure"] += bool(top.n1 and top.n1.secure)
                stats["nothing_n1_secure_with_a_card"] += bool(
                    result.reference.n1 and result.reference.n1.secure
                )
                top_worst = top.n1.worst_rho if top.n1 else None
                nothing_worst = result.reference.n1.worst_rho if result.reference.n1 else None
                if top_worst is not None and nothing_worst is not None:
                    stats["n1_compared"] += 1
                    stats["top_card_n1_worst_lower"] += top_worst < nothing_worst - 1e-6
                    n1_worst.append((top_worst, nothing_worst))
                if follow:
                    action = space.to_grid2op(top.action_index, env.action_space)
        obs, _, done, _ = env.step(action)
        survived += 1
        if done:
            break
    stats["survived_steps"] = survived
    stats["day_length"] = scenario.length
    return {"stats": dict(stats), "reasons": dict(reasons), "n1_worst": n1_worst}


def bench_env(name: str, policy: str | None, days: int, threshold: float, expert_n1: int, split: str) -> dict:
    import torch

    from ace_core.agents.sac import load_sac
    from ace_core.config import TrainConfig
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.features import FeatureBuilder
    from ace_core.grid.forecasts import make_env_with_forecasts
    from ace_core.grid.scenarios import scenarios
    from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline
    from ace_core.rl.sac import SAC

    torch.set_num_threads(1)
    env = make_env_with_forecasts(name, "perfect", 12)
    space = build_action_space(env)
    if policy:
        sac, space, features, _ = load_sac(Path(policy), env, space)
    else:
        features = FeatureBuilder(env)
        sac = SAC(features.size, space, TrainConfig(env=name).sac)
    pipeline = RecommendationPipeline(env, space, PipelineConfig(expert_n1=expert_n1), sac, features)
    totals, reasons, survival, n1_worst = collections.Counter(), collections.Counter(), [], []
    for i, scenario in enumerate(scenarios(env, split)[:days]):
        played = play_day(env, pipeline, space, scenario, i, threshold, follow=True)
        nothing = play_day(env, pipeline, space, scenario, i, 2.0, follow=False)  # never stressed
        totals.update(played["stats"])
        reasons.update(played["reasons"])
        n1_worst += played["n1_worst"]
        survival.append((played["stats"]["survived_steps"], nothing["stats"]["survived_steps"]))
    stressed = max(totals["stressed_steps"], 1)
    env.close()
    return {
        "env": name,
        "policy": policy or "random weights",
        "split": split,
        "days": len(survival),
        "expert_n1": expert_n1,
        "stressed_steps": totals["stressed_steps"],
        "shown": totals["shown"],
        "shown_worse_than_nothing": totals["shown_worse_than_nothing"],
        "steps_with_a_card": totals["steps_with_a_card"],
        "top_card_n1_secure": totals["top_card_n1_secure"] / max(totals["steps_with_a_card"], 1),
        "doing_nothing_n1_secure": totals["doing_nothing_n1_secure"] / stressed,
        "doing_nothing_n1_secure_where_a_card_is_shown": totals["nothing_n1_secure_with_a_card"]
        / max(totals["steps_with_a_card"], 1),
        "top_card_n1_worst_lower_than_nothing": totals["top_card_n1_worst_lower"]
        / max(totals["n1_compared"], 1),
        "n1_worst_rho_mean_top_card_vs_nothing": [
            sum(t for t, _ in n1_worst) / max(len(n1_worst), 1),
            sum(n for _, n in n1_worst) / max(len(n1_worst), 1),
        ],
        "pipeline_ms_mean": totals["pipeline_ms"] / stressed,
        "rejected": totals["rejected"],
        "rejected_reasons": dict(reasons.most_common(6)),
        "survived_steps_following_top_card": [s for s, _ in survival],
        "survived_steps_doing_nothing": [n for _, n in survival],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="rte_case14_realistic,l2rpn_wcci_2020")
    parser.add_argument("--policy", default=None, help="a training run's directory or checkpoint")
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument(
        "--expert-n1",
        type=int,
        default=0,
        help="screen the expert pool's best N for N-1 and keep its best 4 by the safety order",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    warnings.filterwarnings("ignore")
    results = [
        bench_env(n, args.policy, args.days, args.threshold, args.expert_n1, args.split)
        for n in args.envs.split(",")
    ]
    print(json.dumps({"results": results}, indent=2))


if __name__ == "__main__":
    main()

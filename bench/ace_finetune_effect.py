"""One LoRA round of 100 simulation-labelled actor samples from TRAIN-scenario bad cases, timed.

    HF_HUB_OFFLINE=1 nice .venv/bin/python bench/ace_finetune_effect.py --out ADAPTERS_DIR \
        [--samples 100] [--candidates 12] [--max-length 1024] [--answer letter|text]

Each sample is what the actor would see and what a refinement teaches: the round-1 prompt of a bad
case of a **train** scenario (do-nothing at max rho >= 0.9, the same shortlist as the actor, in its
shuffled order: :meth:`PolicyActor.shortlist`) and, as the answer, the letter (with ``--answer
text``: the text) of the option that simulation shows best, kept only when it beats do-nothing
(:meth:`PolicyActor.labelled_sample`).
The adapter is saved as ``ADAPTERS_DIR/adapter-NNNN``; measure its effect on held-out validation
cases with ``bench/ace_refine.py --first-round-only --adapter ADAPTERS_DIR/adapter-NNNN``. Prints
one JSON object (round minutes against the 15-minute budget, losses, the answers' spread).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ace_refine import bad_cases  # noqa: E402

from ace_core.grid.action_space import build_action_space  # noqa: E402
from ace_core.grid.envs import make_env  # noqa: E402
from ace_core.grid.features import FeatureBuilder  # noqa: E402
from ace_core.llm.actor import ActorConfig, PolicyActor  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="rte_case14_realistic")
    parser.add_argument("--out", required=True, help="folder of the adapters (adapter-NNNN inside)")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=ActorConfig.candidates)
    parser.add_argument("--per-scenario", type=int, default=6)
    parser.add_argument("--max-length", type=int, default=1024, help="tokens per sample (no truncation)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--answer", default="letter", choices=("letter", "text"), help="samples answer by letter or by text"
    )
    args = parser.parse_args()

    from ace_core.llm.default_model import default_model_path
    from ace_core.llm.local import LocalBackend
    from ace_core.llm.lora import FinetuneConfig, finetune

    env = make_env(args.env)
    space = build_action_space(env)
    features = FeatureBuilder(env)
    backend = LocalBackend(default_model_path(), threads=args.threads)
    actor = PolicyActor(
        backend,
        space,
        env.action_space,
        features,
        ActorConfig(candidates=args.candidates, answer=args.answer),
    )

    started = time.perf_counter()
    cases = bad_cases(env, space, features, 10 * args.samples, "train", args.per_scenario)
    samples, unlabelled = [], 0
    for i, case in enumerate(cases):
        # the actor's shuffled order, under ids unlike the held-out bench's ("bench{i}")
        options = actor.shortlist(case, f"train{i}", 0)
        rl = actor.simulate(case.obs, case.action)
        sample = actor.labelled_sample(case, actor.first_prompt(case, options, rl), options, rl.reward)
        if sample is None:
            unlabelled += 1
            continue
        samples.append(sample)
        if len(samples) >= args.samples:
            break
    build_seconds = time.perf_counter() - started
    lengths = [len(backend.encode(backend.render(m))) for m, _ in samples]

    config = FinetuneConfig(seed=args.seed, max_length=args.max_length)

    def progress(step: int, total: int, loss: float) -> None:
        print(
            f"step {step}/{total} loss {loss:.3f} {time.perf_counter() - started:.0f}s",
            file=sys.stderr,
            flush=True,
        )

    started = time.perf_counter()
    result = finetune(backend, samples, Path(args.out), config, progress=progress)
    print(
        json.dumps(
            {
                "env": args.env,
                "model": backend.name,
                "cases_scanned": len(samples) + unlabelled,
                "cases_without_a_winner": unlabelled,
                "samples": result.samples,
                "answers": dict(collections.Counter(a for _, a in samples).most_common(12)),
                "prompt_tokens_mean": round(sum(lengths) / len(lengths)),
                "prompt_tokens_max": max(lengths),
                "truncated": result.truncated,
                "build_seconds": round(build_seconds, 1),
                "round_seconds": round(result.seconds, 1),
                "round_minutes": round(result.seconds / 60, 2),
                "budget_minutes": 15,
                "steps": result.steps,
                "loss_before": round(result.loss_before, 4),
                "loss_after": round(result.loss_after, 4),
                "adapter": str(result.adapter_path),
                "load_average_1min": round(os.getloadavg()[0], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

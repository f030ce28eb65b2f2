"""One ACE fine-tuning round on this machine: LoRA on the offline default with 100 actor samples.

    HF_HUB_OFFLINE=1 nice .venv/bin/python bench/lora_round.py [--samples 100] [--threads 1]

The budget to meet is <= 15 minutes per round of 100 samples (issue 3). Samples are synthetic
actor prompts (~300 tokens: line loadings, the RL action, five candidate actions) whose answer
is the candidate at an end of the most loaded line, so held-out choice accuracy before and
after the round shows whether the adapter learned anything (chance is 20%). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LABELS = ["A", "B", "C", "D", "E"]


def make_sample(rng: random.Random) -> tuple[list[dict], str]:
    """An actor prompt and its answer: the candidate at an end of the most loaded line."""
    lines = rng.sample(range(59), 6)
    ends = {line: rng.sample(range(36), 2) for line in lines}
    rho = {line: round(rng.uniform(0.5, 0.98), 2) for line in lines}
    worst = rng.choice(lines)
    rho[worst] = round(rng.uniform(1.01, 1.3), 2)
    answer = rng.randrange(len(LABELS))
    used = {s for pair in ends.values() for s in pair}
    others = rng.sample([s for s in range(36) if s not in used], len(LABELS) - 1)
    substations = others[:answer] + [rng.choice(ends[worst])] + others[answer:]
    state = "\n".join(
        f"line {line} (substation {a} - {b}): rho {rho[line]:.2f}" for line, (a, b) in ends.items()
    )
    candidates = "\n".join(
        f"{label}) at substation {sub}: move {rng.choice(['a load', 'a generator', 'a line end'])} and "
        f"line {rng.randrange(59)} origin to bus 2"
        for label, sub in zip(LABELS, substations, strict=True)
    )
    messages = [
        {
            "role": "system",
            "content": "You assist a transmission grid operator. Pick the topology action that brings "
            "every line loading (rho) below 1. Act at a substation at an end of the most loaded line.",
        },
        {
            "role": "user",
            "content": f"Grid state:\n{state}\nThe RL agent chose: do nothing (reward -0.4).\n"
            f"Candidate actions:\n{candidates}\nAnswer with the letter only.",
        },
    ]
    return messages, LABELS[answer]


def accuracy(backend, samples) -> float:
    hits = sum(LABELS[backend.choose(messages, LABELS)[0]] == answer for messages, answer in samples)
    return hits / len(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="training samples in the round")
    parser.add_argument("--heldout", type=int, default=40, help="held-out prompts for choice accuracy")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from ace_core.llm.default_model import default_model_path
    from ace_core.llm.local import LocalBackend
    from ace_core.llm.lora import FinetuneConfig, finetune

    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    train = [make_sample(rng) for _ in range(args.samples)]
    heldout = [make_sample(rng) for _ in range(args.heldout)]
    backend = LocalBackend(default_model_path(), threads=args.threads)
    lengths = [len(backend.encode(backend.render(m))) for m, _ in train]

    config = FinetuneConfig(seed=args.seed)
    t = time.perf_counter()
    accuracy_before = accuracy(backend, heldout)
    choose_seconds = (time.perf_counter() - t) / len(heldout)
    out_dir = Path(tempfile.mkdtemp(prefix="gridace-lora-bench-"))
    step_times: list[float] = []
    last = [time.perf_counter()]

    def progress(step: int, total: int, loss: float) -> None:
        now = time.perf_counter()
        step_times.append(now - last[0])
        last[0] = now
        print(f"step {step}/{total} loss {loss:.3f} {step_times[-1]:.1f}s", file=sys.stderr, flush=True)

    try:
        result = finetune(backend, train, out_dir, config, progress=progress)
        accuracy_after = accuracy(backend, heldout)
        adapter_files = sorted(p.name for p in result.adapter_path.iterdir())
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)

    figures = {
        "model": backend.name,
        "threads": args.threads,
        "samples": len(train),
        "prompt_tokens_mean": round(sum(lengths) / len(lengths)),
        "config": dataclasses.asdict(config),
        "round_seconds": round(result.seconds, 1),
        "round_minutes": round(result.seconds / 60, 2),
        "budget_minutes": 15,
        "steps": result.steps,
        "step_seconds_median": round(sorted(step_times)[len(step_times) // 2], 2),
        "loss_before": round(result.loss_before, 4),
        "loss_after": round(result.loss_after, 4),
        "heldout_choice_accuracy_before": accuracy_before,
        "heldout_choice_accuracy_after": accuracy_after,
        "choose_seconds": round(choose_seconds, 2),
        "adapter_files": adapter_files,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

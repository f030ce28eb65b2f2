"""Speed of the offline default LLM on this machine: conversion, load, generation, choice scoring.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/llm_speed.py [--threads 1] [--measure-conversion]

Prints one JSON object. ``--measure-conversion`` also converts the packaged GGUF into a temporary
folder (40-100 s) to time the one-off conversion; otherwise the cached conversion is used.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LABELS = ["A", "B", "C", "D", "E"]


def grid_prompt() -> list[dict]:
    """An actor-style prompt of about 250 tokens (state, the RL action, five candidates)."""
    lines = "\n".join(f"line {i} (substation {i} -> {i + 3}): rho {0.55 + 0.07 * i:.2f}" for i in range(8))
    candidates = "\n".join(
        f"{label}) at substation {3 + 2 * i}: move load {i}, line {i + 4} origin and generator {i} to bus 2"
        for i, label in enumerate(LABELS)
    )
    return [
        {
            "role": "system",
            "content": "You assist a transmission grid operator. Pick the topology action that brings "
            "every line loading (rho) below 1 without disconnecting load.",
        },
        {
            "role": "user",
            "content": f"Grid state:\n{lines}\nThe RL agent chose: do nothing (reward -0.42, max rho 1.04).\n"
            f"Candidate actions:\n{candidates}\nAnswer with the letter only.",
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--new-tokens", type=int, default=64, help="tokens to generate for the speed figure")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of each timing (median reported)")
    parser.add_argument("--measure-conversion", action="store_true", help="time a fresh GGUF conversion too")
    args = parser.parse_args()

    started = time.perf_counter()
    import torch

    from ace_core.llm.default_model import convert_gguf, default_model_path, packaged_gguf_path
    from ace_core.llm.local import LocalBackend

    torch.set_num_threads(args.threads)
    figures: dict = {"threads": args.threads, "torch": torch.__version__}
    figures["import_s"] = round(time.perf_counter() - started, 2)

    if args.measure_conversion:
        scratch = Path(tempfile.mkdtemp(prefix="gridace-bench-"))
        try:
            figures["conversion_s"] = round(convert_gguf(packaged_gguf_path(), scratch / "model"), 1)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    t = time.perf_counter()
    folder = default_model_path()  # converts here only when the cache is empty
    figures["default_model_path_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    backend = LocalBackend(folder, threads=args.threads)
    figures["load_s"] = round(time.perf_counter() - t, 2)
    figures["model"] = backend.name

    messages = grid_prompt()
    prompt_ids = backend.encode(backend.render(messages))
    figures["prompt_tokens"] = len(prompt_ids)
    input_ids = torch.tensor([prompt_ids])

    generation = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        with torch.inference_mode():
            # min_new_tokens keeps the count fixed, so tokens/s is not flattered by an early stop.
            backend.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
                do_sample=False,
                pad_token_id=backend.pad_id(),
            )
        generation.append(time.perf_counter() - t)
    figures["generate_tokens"] = args.new_tokens
    figures["generate_s"] = round(statistics.median(generation), 2)
    figures["tokens_per_s"] = round(args.new_tokens / statistics.median(generation), 1)

    t = time.perf_counter()
    figures["chat_answer"] = backend.chat(messages, max_new_tokens=16)
    figures["chat_16_tokens_s"] = round(time.perf_counter() - t, 2)

    for name, labels in (("letters", LABELS), ("phrases", [f"{x}) at substation" for x in LABELS])):
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            index, scores = backend.choose(messages, labels)
            times.append(time.perf_counter() - t)
        figures[f"choose_{name}_s"] = round(statistics.median(times), 3)
        figures[f"choose_{name}_index"] = index
    figures["choose_letter_scores"] = [round(s, 3) for s in backend.choose(messages, LABELS)[1]]
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    figures["load_average_1min"] = round(os.getloadavg()[0], 2)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

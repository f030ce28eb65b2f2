"""Compare the networks of policies made the same way under different settings (threads, torch's
CPU kernels): one JSON line per run against the first, saying whether every tensor is
bit-identical and by how much they differ.

    .venv/bin/python bench/compare_clones.py runs/repro/clone-t2-a runs/repro/clone-t1 ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


def tensors(run: str) -> dict[str, torch.Tensor]:
    state = torch.load(Path(run) / "checkpoint.pt", map_location="cpu", weights_only=False)
    flat: dict[str, torch.Tensor] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, torch.Tensor):
            flat[prefix] = value
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)

    walk("", state)
    return flat


def main(first: str, others: list[str]) -> None:
    base = tensors(first)
    for other in others:
        theirs = tensors(other)
        common = [
            k
            for k in base
            if k in theirs and base[k].shape == theirs[k].shape and base[k].is_floating_point()
        ]
        print(
            json.dumps(
                {
                    "run": other,
                    "against": first,
                    "tensors": len(common),
                    "bit_identical": all(torch.equal(base[k], theirs[k]) for k in common),
                    "max_abs_diff": max(float((base[k] - theirs[k]).abs().max()) for k in common),
                }
            )
        )


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: compare_clones.py FIRST_RUN OTHER_RUN [OTHER_RUN ...]")
    main(sys.argv[1], sys.argv[2:])

"""Which of torch's operations give other bits on another CPU: one JSON line of 16-hex digests,
one per operation a clone's training does (matrix products forward and backward, the
activations, softmax and log-softmax, a sum, a square root, gradient clipping, an Adam step unfused
and as GridACE takes it, ``ace_core.kernels.adam``), each on fixed inputs, under the
kernels in force (``ace_core.kernels`` pins them unless the environment chose). Run it on two
machines, under the same settings, and compare the lines: the operations whose digests differ
are where two clones of the same mines part (docs/results-stress.md, "A clone across machines:
the square root").

    .venv/bin/python bench/kernel_digests.py
    MKL_CBWR=COMPATIBLE .venv/bin/python bench/kernel_digests.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from ace_core.kernels import adam, kernels_in_force  # noqa: E402  (importing ace_core pins the kernels before any op)

# the shapes of the 14-bus clone's first layer: a batch of 64 feature rows (189 features) into 256 hidden units
BATCH, FEATURES, HIDDEN = 64, 189, 256


def digest(tensor: torch.Tensor) -> str:
    return hashlib.sha256(tensor.detach().contiguous().numpy().tobytes()).hexdigest()[:16]


def operations() -> dict[str, torch.Tensor]:
    """Each operation's result on inputs drawn from torch's own generator (the same on any CPU),
    every one on the drawn inputs themselves, so that one digest that differs names one kernel."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, FEATURES, generator=generator)
    h = torch.randn(BATCH, HIDDEN, generator=generator)
    layer = torch.nn.Linear(FEATURES, HIDDEN)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(HIDDEN, FEATURES, generator=generator) / FEATURES**0.5)
        layer.bias.copy_(torch.randn(HIDDEN, generator=generator))
    results = {
        "randn": h,
        "linear": layer(x),
        "matmul_square": h[:, :BATCH] @ h[:, :BATCH],
        "relu": torch.relu(h),
        "tanh": torch.tanh(h),
        "exp": torch.exp(h),
        "sqrt": torch.sqrt(h.abs()),
        "log1p": torch.log1p(h.abs()),
        "softmax": torch.softmax(h, dim=1),
        "log_softmax": torch.log_softmax(h, dim=1),
        "sum": h.sum(dim=0),
        "layer_norm": torch.nn.functional.layer_norm(h, (HIDDEN,)),
    }
    (torch.log_softmax(layer(x), dim=1)[:, 0].mean()).backward()
    results["grad_weight"] = layer.weight.grad.clone()  # a copy: the grads are overwritten below
    results["grad_bias"] = layer.bias.grad.clone()
    with torch.no_grad():
        layer.weight.grad.copy_(torch.randn(HIDDEN, FEATURES, generator=generator))
        layer.bias.grad.copy_(torch.randn(HIDDEN, generator=generator))
    start = layer.weight.detach().clone(), layer.bias.detach().clone()
    torch.optim.Adam(layer.parameters(), lr=1e-3).step()
    results["adam_step"] = layer.weight.detach().clone()  # unfused: square roots from MKL's vector maths
    with torch.no_grad():
        layer.weight.copy_(start[0])
        layer.bias.copy_(start[1])
    results["clip_grad_norm"] = torch.nn.utils.clip_grad_norm_(layer.parameters(), 1.0)
    adam(layer.parameters(), lr=1e-3).step()
    results["adam_fused"] = layer.weight.detach().clone()  # as GridACE trains: the CPU's own square roots
    return results


def main() -> None:
    line = {"kernels": kernels_in_force(), "torch": torch.__version__}
    line.update({name: digest(result) for name, result in operations().items()})
    print(json.dumps(line))


if __name__ == "__main__":
    main()

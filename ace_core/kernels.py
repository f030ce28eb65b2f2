"""Torch's CPU kernels, pinned so that a run is the same on every x86 machine.

Torch picks the widest vector instructions the CPU has (AVX2 or AVX512) for its kernels, and
the two sum in another order: a clone differs by about 1e-6, and RL from it then takes other
decisions (docs/results-36bus.md, "Reproducibility"). Its matrix products are Intel MKL's, which
chooses its own code path by CPU, whatever torch's kernels are. GridACE asks both for AVX2
wherever the CPU has it: ``ATEN_CPU_CAPABILITY`` for torch's kernels, ``MKL_CBWR`` (MKL's
conditional numerical reproducibility) for MKL's branch, each unless already set (an operator's
choice wins). Both are read at the first operation, not at import, so setting them when
``ace_core`` is imported is early enough. On the machines measured, AVX2 kernels train as fast
as AVX512 ones (docs/results-platform.md, "Pinned kernels"). MKL's AVX2 branch still gives an
Intel and an AMD CPU other matrix products on two threads and another ``exp``;
``MKL_CBWR=COMPATIBLE`` (its branch for every vendor) gives them the same in every operation
measured but Adam's square root, more slowly: an operator's choice, not the default
(docs/results-stress.md, "A clone across machines: the square root").

Adam's square roots are part of the bits as well: models train with :func:`adam` (torch's fused
kernel, the CPU's own square roots), not with MKL's vector maths, which rounds them by vendor.

The thread count is part of the bits too: on an Intel CPU, MKL's matrix products give other bits
on one thread and on two (docs/results-stress.md, "A clone across machines: the Intel side").
Runs train on ``torch_threads`` (1 by default) and clones are made on
:data:`CLONE_THREADS` (:func:`torch_threads`), whatever the machine's core count.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from collections.abc import MutableMapping
from pathlib import Path

CAPABILITY_VARIABLE = "ATEN_CPU_CAPABILITY"
PINNED = "avx2"
MKL_BRANCH_VARIABLE = "MKL_CBWR"
MKL_PINNED = "AVX2"
CLONE_THREADS = 1
"""torch's threads while cloning (``ace_core.imitation.cloning.pretrain``), as a run's RL trains by
default: a clone of the same mines is the same on a 2-core and a 16-core machine"""
CPU_INFO = Path("/proc/cpuinfo")
"""where Linux describes the CPU: its model and its instruction sets"""


def _cpu_field(name: str, cpuinfo: Path) -> str | None:
    """The value of the first ``name : value`` line of ``cpuinfo`` (None where unknown)."""
    try:
        line = next(line for line in cpuinfo.read_text().splitlines() if line.startswith(name))
    except (OSError, StopIteration):
        return None
    return line.partition(":")[2].strip()


def cpu_has_avx2(cpuinfo: Path = CPU_INFO) -> bool:
    """Whether this x86 CPU runs AVX2 (read from the kernel's CPU flags; False where unknown)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    return "avx2" in (_cpu_field("flags", cpuinfo) or "").split()


def pin_cpu_kernels(environ: MutableMapping[str, str] = os.environ, cpuinfo: Path = CPU_INFO) -> str | None:
    """Ask torch and MKL for AVX2 where the CPU has it, each where nobody chose otherwise; returns
    torch's capability in force from the environment (None: torch's own pick)."""
    if cpu_has_avx2(cpuinfo):
        environ.setdefault(CAPABILITY_VARIABLE, PINNED)
        environ.setdefault(MKL_BRANCH_VARIABLE, MKL_PINNED)
    return environ.get(CAPABILITY_VARIABLE)


def kernels_in_force(cpuinfo: Path = CPU_INFO) -> dict[str, str | int | None]:
    """What a run's figures were computed on, for its report: the CPU's model, the kernels asked
    of torch and MKL (None: their own pick) and torch's threads now (None before torch is
    imported). Two runs of one seed that differ across machines are compared on these first."""
    torch = sys.modules.get("torch")
    return {
        "cpu": _cpu_field("model name", cpuinfo) or platform.processor() or None,
        CAPABILITY_VARIABLE: os.environ.get(CAPABILITY_VARIABLE),
        MKL_BRANCH_VARIABLE: os.environ.get(MKL_BRANCH_VARIABLE),
        "threads": torch.get_num_threads() if torch else None,
    }


@contextlib.contextmanager
def torch_threads(count: int):
    """Torch computes on ``count`` threads inside this block (or the function it decorates), and
    on as many as before after it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def adam(params, **options):
    """``torch.optim.Adam`` as every GridACE model trains with it: torch's fused CPU kernel, which
    computes each step with the CPU's own vector instructions (its square roots correctly rounded).
    The unfused step takes its square roots from MKL's vector maths, which on an AMD EPYC rounds
    16% of float32 square roots otherwise than the instruction does, whatever ``MKL_CBWR`` says
    (docs/results-stress.md, "A clone across machines: the square root")."""
    import torch

    return torch.optim.Adam(params, fused=True, **options)

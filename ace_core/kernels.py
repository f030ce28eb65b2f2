"""Torch's CPU kernels, pinned so that a run is the same on every x86 machine.

Torch picks the widest vector instructions the CPU has (AVX2 or AVX512) for its kernels, and
the two sum in another order: a clone differs by about 1e-6, and RL from it then takes other
decisions (docs/results-36bus.md, "Reproducibility"). GridACE asks for AVX2 kernels wherever the
CPU has them, unless ``ATEN_CPU_CAPABILITY`` is already set (an operator's choice wins). Torch
reads the variable at its first operation, not at import, so setting it when ``ace_core`` is
imported is early enough. On the machines measured, AVX2 kernels train as fast as AVX512 ones
(docs/results-platform.md, "Pinned kernels").
"""

from __future__ import annotations

import os
import platform
from collections.abc import MutableMapping
from pathlib import Path

CAPABILITY_VARIABLE = "ATEN_CPU_CAPABILITY"
PINNED = "avx2"
CPU_FLAGS = Path("/proc/cpuinfo")
"""where Linux lists the CPU's instruction sets"""


def cpu_has_avx2(cpuinfo: Path = CPU_FLAGS) -> bool:
    """Whether this x86 CPU runs AVX2 (read from the kernel's CPU flags; False where unknown)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = next(line for line in cpuinfo.read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return False
    return "avx2" in flags.split()


def pin_cpu_kernels(environ: MutableMapping[str, str] = os.environ, cpuinfo: Path = CPU_FLAGS) -> str | None:
    """Ask torch for AVX2 kernels where the CPU has them and nobody chose otherwise; returns the
    capability in force from the environment (None: torch's own pick)."""
    if CAPABILITY_VARIABLE not in environ and cpu_has_avx2(cpuinfo):
        environ[CAPABILITY_VARIABLE] = PINNED
    return environ.get(CAPABILITY_VARIABLE)

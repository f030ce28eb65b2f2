"""Torch's CPU kernels pinned to AVX2 when ace_core is imported, an operator's choice kept."""

import os
import subprocess
import sys

import pytest

from ace_core.kernels import CAPABILITY_VARIABLE, cpu_has_avx2, pin_cpu_kernels

WHAT_TORCH_RUNS = (
    "import ace_core, torch; torch.ones(8).sum(); print(torch.backends.cpu.get_cpu_capability())"
)


def _capability(**env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != CAPABILITY_VARIABLE} | env
    done = subprocess.run(
        [sys.executable, "-c", WHAT_TORCH_RUNS], env=environ, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.mark.skipif(not cpu_has_avx2(), reason="pins only where the CPU runs AVX2")
def test_a_process_that_imports_ace_core_runs_torch_on_avx2_kernels():
    assert _capability() == "AVX2"


def test_an_operators_choice_of_kernels_is_kept():
    assert _capability(**{CAPABILITY_VARIABLE: "default"}) == "DEFAULT"
    chosen = {CAPABILITY_VARIABLE: "default"}
    assert pin_cpu_kernels(chosen) == "default" and chosen == {CAPABILITY_VARIABLE: "default"}


def test_no_pin_where_the_cpu_cannot_run_avx2(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx\n")
    environ: dict[str, str] = {}
    assert pin_cpu_kernels(environ, cpuinfo) is None and environ == {}
    assert pin_cpu_kernels(environ, tmp_path / "missing") is None and environ == {}

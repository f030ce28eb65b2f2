"""Torch's CPU kernels and MKL's branch pinned to AVX2 when ace_core is imported, an operator's
choice kept, and reported with the CPU beside a run's figures."""

import os
import subprocess
import sys

import pytest
import torch

from ace_core.kernels import (
    CAPABILITY_VARIABLE,
    MKL_BRANCH_VARIABLE,
    adam,
    cpu_has_avx2,
    kernels_in_force,
    pin_cpu_kernels,
    torch_threads,
)

WHAT_RUNS = (
    "import ace_core, os, torch; torch.ones(8).sum(); "
    f"print(torch.backends.cpu.get_cpu_capability(), os.environ.get('{MKL_BRANCH_VARIABLE}'))"
)


def _kernels(**env: str) -> tuple[str, str]:
    """(torch's kernels, MKL's branch) in a fresh process that imports ace_core, with ``env``
    and neither variable set otherwise."""
    unset = (CAPABILITY_VARIABLE, MKL_BRANCH_VARIABLE)
    environ = {k: v for k, v in os.environ.items() if k not in unset} | env
    done = subprocess.run(
        [sys.executable, "-c", WHAT_RUNS], env=environ, capture_output=True, text=True, check=True
    )
    torch_kernels, mkl_branch = done.stdout.split()
    return torch_kernels, mkl_branch


@pytest.mark.skipif(not cpu_has_avx2(), reason="pins only where the CPU runs AVX2")
def test_a_process_that_imports_ace_core_runs_torch_and_mkl_on_avx2():
    assert _kernels() == ("AVX2", "AVX2")


def test_an_operators_choice_of_kernels_is_kept(tmp_path):
    assert _kernels(**{CAPABILITY_VARIABLE: "default", MKL_BRANCH_VARIABLE: "COMPATIBLE"}) == (
        "DEFAULT",
        "COMPATIBLE",
    )
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2\n")
    chosen = {CAPABILITY_VARIABLE: "default", MKL_BRANCH_VARIABLE: "COMPATIBLE"}
    assert pin_cpu_kernels(chosen, cpuinfo) == "default"
    assert chosen == {CAPABILITY_VARIABLE: "default", MKL_BRANCH_VARIABLE: "COMPATIBLE"}


def test_no_pin_where_the_cpu_cannot_run_avx2(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx\n")
    environ: dict[str, str] = {}
    assert pin_cpu_kernels(environ, cpuinfo) is None and environ == {}
    assert pin_cpu_kernels(environ, tmp_path / "missing") is None and environ == {}


def test_a_report_names_the_cpu_and_the_kernels_asked_for(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9654\nflags\t\t: avx2\n")
    monkeypatch.setenv(CAPABILITY_VARIABLE, "avx2")
    monkeypatch.delenv(MKL_BRANCH_VARIABLE, raising=False)
    assert kernels_in_force(cpuinfo) == {
        "cpu": "AMD EPYC 9654",
        CAPABILITY_VARIABLE: "avx2",
        MKL_BRANCH_VARIABLE: None,
        "threads": torch.get_num_threads(),
    }


def test_torch_computes_on_the_threads_asked_for_then_on_as_many_as_before():
    before = torch.get_num_threads()
    with torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1 and kernels_in_force()["threads"] == before + 1
    assert torch.get_num_threads() == before


def test_adam_steps_as_with_correctly_rounded_square_roots(monkeypatch):
    """The reference is torch's own Adam, unfused, with each square root taken in float64 and
    rounded once: what the CPU's instruction gives, whatever MKL's vector maths would give (on an
    AMD EPYC torch's unfused step fails this)."""
    generator = torch.Generator().manual_seed(0)
    start = torch.randn(64, 189, generator=generator)
    grads = [torch.randn(64, 189, generator=generator) for _ in range(3)]

    def trained(make_optimizer) -> torch.Tensor:
        weight = torch.nn.Parameter(start.clone())
        optimizer = make_optimizer([weight], lr=1e-3, eps=1e-4)
        for grad in grads:
            weight.grad = grad.clone()
            optimizer.step()
        return weight.detach()

    ours = trained(adam)
    sqrt = torch.Tensor.sqrt
    monkeypatch.setattr(torch.Tensor, "sqrt", lambda tensor: sqrt(tensor.double()).to(tensor.dtype))
    reference = trained(lambda params, **options: torch.optim.Adam(params, foreach=False, **options))
    assert torch.equal(ours, reference)

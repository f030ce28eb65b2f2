"""The intended layering, as import-linter contracts (``.importlinter`` at the repository root).

Each contract is its own test, so a broken one names itself and prints import-linter's report:
the chain of imports that breaks it. ``lint-imports`` from the repository root gives the same.
It runs in a process of its own: in the test process Daphne has loaded Twisted, whose
zope.interface class declarations make import-linter 2.16 fail (``AttributeError: __provides__``).
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".importlinter"
CONTRACT_PREFIX = "importlinter:contract:"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# Contracts that may fail, with the reason; empty while every contract holds.
KNOWN_BROKEN: dict[str, str] = {}


def _contract_ids() -> list[str]:
    parser = configparser.ConfigParser()
    parser.read(CONFIG)
    return [
        section.removeprefix(CONTRACT_PREFIX)
        for section in parser.sections()
        if section.startswith(CONTRACT_PREFIX)
    ]


def _params() -> list:
    return [
        pytest.param(contract, marks=pytest.mark.xfail(reason=KNOWN_BROKEN[contract], strict=False))
        if contract in KNOWN_BROKEN
        else contract
        for contract in _contract_ids()
    ]


def test_every_required_contract_is_declared() -> None:
    assert set(_contract_ids()) >= {
        "core-without-django",
        "core-layers",
        "webapp-apps-acyclic",
        "consumers-write-nothing",
    }


def test_the_core_layers_name_every_core_package() -> None:
    """A new package under ace_core must take its place in the layers, or nothing checks it."""
    parser = configparser.ConfigParser()
    parser.read(CONFIG)
    layers = parser[CONTRACT_PREFIX + "core-layers"]["layers"]
    named = {name.strip() for line in layers.splitlines() for name in line.split("|") if name.strip()}
    core = ROOT / "ace_core"
    packages = {f"ace_core.{p.name}" for p in core.iterdir() if (p / "__init__.py").exists()}
    modules = {f"ace_core.{p.stem}" for p in core.glob("*.py") if p.stem != "__init__"}
    assert packages | modules == named


@pytest.mark.parametrize("contract", _params())
def test_contract_is_kept(contract: str) -> None:
    linted = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(CONFIG), "--contract", contract, "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert linted.returncode == 0, (
        f"import-linter contract {contract!r} is broken:\n{linted.stdout}{linted.stderr}"
    )


HEAVY = ("torch", "grid2op", "lightsim2grid", "ray")
"""what only the processes that train, simulate or recommend need"""
WEB_START = f"""
import sys, django
django.setup()
import webapp.asgi, webapp.urls, webapp.operations.tasks, webapp.training.tasks
from django.urls import get_resolver
get_resolver().url_patterns
import ace_core.live, webapp.operations.services
print(sorted(name for name in {HEAVY!r} if name in sys.modules))
"""


def test_the_web_process_starts_without_torch_or_grid2op() -> None:
    """A web server or task worker starts with the ASGI app, the URL map and the task modules:
    none of them loads torch or grid2op (a quarter of the memory and seconds of start-up), which
    the code that simulates or recommends imports when it first runs (:mod:`ace_core.lazy`)."""
    started = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", WEB_START],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().splitlines()[-1] == "[]", started.stdout

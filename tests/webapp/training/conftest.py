"""Fixtures of the training pages' tests: one real tiny mine, shared by the mines tests."""

from __future__ import annotations

from pathlib import Path

import pytest

MINE_ENV = "rte_case14_realistic"
# the first train day cut to 16 steps, an expert that searches from max rho 0.7 (these steps sit
# at 0.7-0.88): every step is a decision and the expert plays topologies
MINE_EXPERT = "greedy:threshold=0.7"


@pytest.fixture(scope="session")
def finished_mine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """(mine directory, summary) of a real mine, made by :func:`ace_core.imitation.mining.mine` with one
    Ray worker, in a mines folder of its own (point ``GRIDACE_MINES_DIR`` at its parent)."""
    from ace_core.imitation.mining import MineSpec, mine
    from ace_core.workers import Workers

    spec = MineSpec(env=MINE_ENV, expert=MINE_EXPERT, episodes=1, seeds=1, episode_length=16)
    out = tmp_path_factory.mktemp("mines") / spec.default_dir().name
    summary = mine(spec, out, workers=Workers(1), log=lambda text: None)
    return out, summary


@pytest.fixture
def mines_dir(settings, finished_mine: tuple[Path, dict]) -> Path:
    """The mines folder the web app reads and writes, holding the finished mine."""
    settings.GRIDACE_MINES_DIR = str(finished_mine[0].parent)
    return finished_mine[0].parent

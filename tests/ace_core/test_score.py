from pathlib import Path

import grid2op
import pytest

from ace_core.evaluation.score import l2rpn_2020_score


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One cache for the module: the second score reuses the reference agents' statistics."""
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRIDACE_CACHE_DIR", str(folder))
        yield folder


def _package_files(env_name: str) -> set[Path]:
    folder = Path(grid2op.__file__).parent / "data" / env_name
    return {p.relative_to(folder) for p in folder.rglob("*")}


def test_do_nothing_scores_zero_on_a_writable_copy(cache):
    before = _package_files("l2rpn_case14_sandbox")
    result = l2rpn_2020_score("l2rpn_case14_sandbox", "do-nothing", seeds=(0,), nb_scenario=1, max_step=12)
    # do nothing is the reference of the L2RPN 2020 score: 0 by construction, full survival here
    assert result["mean"] == pytest.approx(0.0, abs=1e-6)
    assert result["steps_survived"] == result["max_steps"] == [12]
    assert result["protocol"] == "first 1 chronics from their start, 12 steps, seeds [0]"
    # grid2op caches its reference agents' statistics in the env folder: ours, not the package's
    copy = cache / "score_envs" / "l2rpn_case14_sandbox-s0-n1-m12" / "l2rpn_case14_sandbox"
    assert copy.is_dir() and any(copy.rglob("*"))
    assert _package_files("l2rpn_case14_sandbox") == before


def test_greedy_expert_scores_at_least_do_nothing(cache):
    result = l2rpn_2020_score("l2rpn_case14_sandbox", "greedy:8", seeds=(0,), nb_scenario=1, max_step=12)
    assert result["steps_survived"] == [12]
    assert result["mean"] >= -1e-6

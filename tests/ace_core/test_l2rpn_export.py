"""The L2RPN export: the folder loads without GridACE and decides exactly as GridACE's agent does.

The exported agent runs in a separate, isolated Python (``-I``, started outside the repository)
where GridACE is not importable; it plays a few steps through grid2op's Runner (EpisodeData on
disk) and a hand-made trajectory with a disconnected line. This process then asks GridACE's own
SAC agent for its action on each recorded observation.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from grid2op.Episode import EpisodeData

from ace_core.agents.loading import load_agent
from ace_core.config import TrainConfig
from ace_core.events import MemorySink
from ace_core.l2rpn.export import export_run
from ace_core.training import run
from tests.sandbox_settings import sandbox_settings

ROOT = Path(__file__).resolve().parents[2]
RUNNER_STEPS = 20

PLAY = r"""
import importlib, importlib.util, json, sys, warnings
from pathlib import Path
warnings.filterwarnings("ignore")
assert sys.flags.isolated
assert importlib.util.find_spec("ace_core") is None, "GridACE must not be importable here"
import grid2op
import numpy as np
from grid2op.Runner import Runner
from lightsim2grid import LightSimBackend

submission_dir, out, steps = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, str(submission_dir.parent))
submission = importlib.import_module(submission_dir.name)
env = grid2op.make("l2rpn_case14_sandbox", test=True, backend=LightSimBackend())
agent = submission.make_agent(env, str(submission_dir))
runner = Runner(**env.get_params_for_runner(), agentClass=None, agentInstance=agent)
result = runner.run(nb_episode=1, max_iter=steps, path_save=str(out), episode_id=[0], env_seeds=[0])

# a line taken out by hand: reconnection (below the threshold) and the policy's mask (above it)
obs = env.reset(seed=1, options={"time serie id": 1})
obs, *_ = env.step(env.action_space({"set_line_status": [(3, -1)]}))
observations, actions = [], []
for _ in range(6):
    action = agent.act(obs, 0.0, False)
    observations.append(obs.to_vect())
    actions.append(action.to_vect())
    obs, _, done, _ = env.step(action)
    if done:
        break
np.savez(out / "crafted.npz", obs=np.array(observations), act=np.array(actions))
stack = ("ace_core", "webapp", "django", "transformers")
print(json.dumps({
    "chronic": result[0][1],
    "played": result[0][3],
    "gridace_modules": sorted(m for m in sys.modules if m.split(".")[0] in stack),
}))
"""


def play_isolated(submission: Path, out: Path) -> dict:
    """Run the exported agent in an isolated interpreter that cannot import GridACE."""
    script = out.parent / "play.py"
    script.write_text(PLAY)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-I", str(script), str(submission), str(out), str(RUNNER_STEPS)],
        capture_output=True,
        text=True,
        cwd=out.parent,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


HEADS = {"flat": (0.5, 2), "factorised": (0.75, 1)}
"""each head with an activation threshold and a training seed at which the sandbox's first steps
mix both rules (the tiny policy of most seeds does nothing at every one of them)"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``exported(head)``: (folder, head) of a tiny trained run and its submission, made once."""
    made: dict[str, Path] = {}

    def make(head: str) -> tuple[Path, str]:
        if head not in made:
            root = tmp_path_factory.mktemp(f"export-{head}")
            threshold, seed = HEADS[head]
            config = TrainConfig(**sandbox_settings(steps=200, head=head, rho_threshold=threshold, seed=seed))
            run(config, root / "run", MemorySink())
            export_run(root / "run", root / "submission")
            made[head] = root
        return made[head], head

    return make


@pytest.mark.parametrize("head", HEADS)
def test_the_exported_agent_plays_in_the_runner_as_gridace_does(head, exported, sandbox, sandbox_space):
    root, _ = exported(head)
    assert {p.name for p in (root / "submission").iterdir()} == {
        "__init__.py",
        "policy.py",
        "weights.pt",
        "actions.npz",
        "agent.json",
        "README.md",
    }
    (root / "episodes").mkdir()
    report = play_isolated(root / "submission", root / "episodes")
    assert report["gridace_modules"] == [] and report["played"] == RUNNER_STEPS

    gridace = load_agent(f"sac:{root / 'run'}", sandbox, sandbox_space)
    episode = EpisodeData.from_disk(str(root / "episodes"), report["chronic"])
    played = [sandbox_space.index_of_grid2op(episode.actions[t]) for t in range(RUNNER_STEPS)]
    expected = [gridace.choose(episode.observations[t]) for t in range(RUNNER_STEPS)]
    assert played == expected
    assert set(expected) - {0}  # the policy really acted, not only did nothing

    crafted = np.load(root / "episodes" / "crafted.npz")
    observations = [sandbox.observation_space.from_vect(v) for v in crafted["obs"]]
    actions = [sandbox.action_space.from_vect(v) for v in crafted["act"]]
    assert not observations[0].line_status[3]
    assert [sandbox_space.index_of_grid2op(a) for a in actions] == [gridace.choose(o) for o in observations]


def test_export_from_the_command_line_and_its_errors(exported, tmp_path):
    root, _ = exported("flat")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "ace_core", "export", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    proc = cli("--run", str(root / "run"), "--out", str(tmp_path / "ok"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["head"] == "flat"
    assert (tmp_path / "ok" / "weights.pt").is_file()

    (tmp_path / "empty-run").mkdir()
    proc = cli("--run", str(tmp_path / "empty-run"), "--out", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "no checkpoint at" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    proc = cli("--run", str(root / "run"), "--out", str(taken))
    assert proc.returncode == 2 and "is not empty" in proc.stderr and "Traceback" not in proc.stderr
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty-run", "ok", "taken"]  # nothing half-written

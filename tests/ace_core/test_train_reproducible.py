"""A run is a function of its settings: the same config and seed train the same networks in two
separate processes, whatever Python's string-hash seed (set and dict orders of names)."""

import os
import subprocess
import sys
from pathlib import Path

from tests.sandbox_settings import sandbox_settings

ROOT = Path(__file__).resolve().parents[2]

TRAIN_AND_DIGEST = """
import sys
from ace_core.checkpoint import load_checkpoint
from ace_core.config import TrainConfig
from ace_core.events import MemorySink
from ace_core.rl.sac import weights_digest
from ace_core.training import run
result = run(TrainConfig(**{config!r}), sys.argv[1], MemorySink())
digest = weights_digest(load_checkpoint(sys.argv[1] + "/checkpoint.pt")["sac"])
print(result.decisions, result.best_validation_survival, digest)
"""


def _train_in_a_new_process(config: dict, out: Path, hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", TRAIN_AND_DIGEST.format(config=config), str(out)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def test_the_same_settings_train_the_same_networks_in_another_process(tmp_path):
    config = sandbox_settings(steps=200, checkpoint_every=1_000, validate_every=100, seed=3)
    first = _train_in_a_new_process(config, tmp_path / "first", hash_seed="1")
    second = _train_in_a_new_process(config, tmp_path / "second", hash_seed="2")
    decisions, _, digest = first.split()
    assert int(decisions) == 200 and len(digest) == 16
    assert first == second
    other_seed = _train_in_a_new_process(
        {**config, "seed": 4, "steps": 60}, tmp_path / "other", hash_seed="1"
    )
    assert other_seed.split()[2] != digest  # the digest does see the training

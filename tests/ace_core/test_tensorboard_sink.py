"""TensorBoard files: the same scalars as metrics.jsonl, read back with TensorBoard's own reader."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from ace_core.config import TrainConfig
from ace_core.events import JsonlSink, MetricsEvent
from ace_core.training import run
from ace_core.training.tensorboard import TENSORBOARD_DIR, TensorBoardSink, with_tensorboard
from tests.sandbox_settings import sandbox_settings

ROOT = Path(__file__).resolve().parents[2]


def tensorboard_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(run_dir / TENSORBOARD_DIR), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def jsonl_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        step = row.pop("step")
        for tag, value in row.items():
            out.setdefault(tag, []).append((step, value))
    return out


def assert_same_scalars(run_dir: Path) -> None:
    expected, written = jsonl_scalars(run_dir), tensorboard_scalars(run_dir)
    assert set(written) == set(expected)
    assert {"losses/qf1_loss", "charts/SPS"} <= set(written)
    for tag, points in expected.items():
        assert [step for step, _ in written[tag]] == [step for step, _ in points], tag
        # TensorBoard stores scalars as float32
        assert [v for _, v in written[tag]] == pytest.approx([v for _, v in points], rel=1e-6), tag


def test_a_training_run_writes_the_metrics_as_tensorboard_scalars(tmp_path):
    sink = JsonlSink(tmp_path)
    try:
        run(TrainConfig(**sandbox_settings(steps=200, log_every=50)), tmp_path, sink)
    finally:
        sink.close()
    assert_same_scalars(tmp_path)


def test_a_resumed_cli_run_keeps_one_point_per_step(tmp_path):
    common = ["--out", str(tmp_path), "--log-every", "50", "--checkpoint-every", "100"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (
        ["--env", "l2rpn_case14_sandbox", "--steps", "100", "--learning-starts", "32"]
        + ["--batch-size", "32", "--hidden", "32", "--rho-threshold", "0.5"],
        ["--resume", "--steps", "150"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "ace_core", "train", *args, *common],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
    assert_same_scalars(tmp_path)
    assert [step for step, _ in tensorboard_scalars(tmp_path)["charts/SPS"]] == [50, 100, 150]


def test_points_after_the_checkpoint_of_a_crashed_attempt_are_replaced(tmp_path):
    crashed = TensorBoardSink(tmp_path)
    for step in (100, 200, 300):
        crashed.emit(MetricsEvent(step=step, values={"losses/qf1_loss": float(step)}))
    crashed.close()
    resumed = TensorBoardSink(tmp_path)  # resumed from the checkpoint at step 100
    for step in (200, 300):
        resumed.emit(MetricsEvent(step=step, values={"losses/qf1_loss": -float(step)}))
    resumed.close()
    assert tensorboard_scalars(tmp_path)["losses/qf1_loss"] == [(100, 100.0), (200, -200.0), (300, -300.0)]


def test_composing_twice_writes_one_set_of_files(tmp_path):
    sink = with_tensorboard(JsonlSink(tmp_path), tmp_path)
    assert with_tensorboard(sink, tmp_path) is sink
    sink.emit(MetricsEvent(step=1, values={"charts/SPS": 5.0}))
    sink.close()
    assert tensorboard_scalars(tmp_path) == {"charts/SPS": [(1, 5.0)]}
    assert len(list((tmp_path / TENSORBOARD_DIR).iterdir())) == 1


def test_the_cli_does_not_import_tensorboard_until_a_run_reports():
    code = (
        "import sys; from ace_core.cli import build_parser; build_parser();"
        "import ace_core.training.trainer, ace_core.training.tensorboard;"
        "print(sorted(m for m in sys.modules if m.startswith(('tensorboard', 'torch.utils.tensorboard'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"

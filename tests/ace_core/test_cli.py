"""The CLI as a user runs it: a real subprocess, exit codes and messages (its error cases in this
process, through the same ``main``, and one of them as a subprocess)."""

import dataclasses
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, check_rc=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "ace_core", *args], capture_output=True, text=True, env=env, timeout=300
    )
    if check_rc is not None:
        assert proc.returncode == check_rc, proc.stderr
    return proc


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "--env", "atlantis", "--steps", "10"], "unknown env 'atlantis'; available: "),
        (["train", "--env", "l2rpn_case14_sandbox", "--steps", "-3"], "--steps -3 must be a positive number"),
        (
            ["train", "--env", "l2rpn_case14_sandbox", "--steps", "10", "--gamma", "7"],
            "gamma=7.0 is out of range",
        ),
        (["train", "--env", "l2rpn_case14_sandbox", "--resume"], "no checkpoint at"),
        (["train", "--env", "l2rpn_case14_sandbox", "--workers", "0"], "--workers 0 must be at least 1"),
        (
            ["train", "--env", "l2rpn_case14_sandbox", "--ray-address", "127.0.0.1:9"],
            "no Ray cluster answers at 127.0.0.1:9",
        ),
        (["train", "--env", "l2rpn_case14_sandbox", "--ray-address", "nowhere"], "is not HOST:PORT"),
        (["evaluate", "--env", "l2rpn_case14_sandbox", "--agent", "wizard"], "unknown agent spec 'wizard'"),
        (["actions", "--env", "l2rpn_case14_sandbox", "500"], "accepted: integers 0 to 198"),
        (
            ["evaluate", "--env", "rte_case14_realistic", "--agent", "do-nothing", "--opponent", "bogus"],
            "unknown opponent 'bogus'; accepted: env, none, random-line",
        ),
        (
            [
                "experiment",
                "table",
                "--env",
                "rte_case14_realistic",
                "--agents",
                "do-nothing",
                "--opponent",
                "x",
            ],
            "unknown opponent 'x'; accepted: env, none, random-line",
        ),
        (
            ["evaluate", "--env", "l2rpn_case14_sandbox", "--agent", "do-nothing", "--first-seed", "-2"],
            "--first-seed -2 must be 0 or more",
        ),
        (
            ["experiment", "stress", "--env", "l2rpn_case14_sandbox", "--seeds", "0"],
            "--seeds 0 must be at least 1",
        ),
    ],
)
def test_errors_exit_2_with_a_clear_message_and_write_nothing(tmp_path, capsys, args, message):
    """In this process (the command line's own ``main``, argparse's exits included); the test
    below runs one of them as a user does."""
    from ace_core.cli import main

    out = tmp_path / "run"
    if args[0] in ("train", "experiment"):
        args = [*args, "--out", str(out)]
    try:
        status = main(args)
    except SystemExit as exc:
        status = exc.code
    stderr = capsys.readouterr().err
    assert status == 2, stderr
    assert message in stderr
    assert "Traceback" not in stderr
    assert not out.exists()


def test_an_error_from_the_command_line_exits_2_with_its_message_only(tmp_path):
    out = tmp_path / "run"
    proc = run_cli("train", "--env", "atlantis", "--steps", "10", "--out", str(out), check_rc=2)
    assert "unknown env 'atlantis'; available: " in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_train_then_resume_from_the_command_line(tmp_path):
    out = tmp_path / "run"
    common = [
        "--env",
        "l2rpn_case14_sandbox",
        "--out",
        str(out),
        "--learning-starts",
        "32",
        "--batch-size",
        "32",
        "--hidden",
        "32",
        "--log-every",
        "50",
        "--checkpoint-every",
        "100",
        "--rho-threshold",
        "0.5",
    ]
    proc = run_cli("train", "--steps", "150", *common, check_rc=0)
    assert json.loads(proc.stdout.strip().splitlines()[-1])["steps"] == 150
    assert {"checkpoint.pt", "metrics.jsonl", "events.jsonl", "summary.json"} <= {
        p.name for p in out.iterdir()
    }
    proc = run_cli("train", "--resume", "--steps", "200", "--out", str(out), check_rc=0)
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [50, 100, 150, 200]  # nothing logged twice across the resume


def test_actions_and_envs_listing():
    proc = run_cli("actions", "--env", "l2rpn_case14_sandbox", "0", "198", check_rc=0)
    assert '"actions": 199' in proc.stdout and "substation 13" in proc.stdout
    assert "l2rpn_wcci_2020" in run_cli("envs", check_rc=0).stdout


@pytest.mark.parametrize("command", [["train"], ["experiment", "ablations"]])
def test_help_gives_each_flag_its_doc_and_one_default(command):
    from ace_core.config import config_fields

    text = " ".join(run_cli(*command, "--help", check_rc=0).stdout.split())
    assert "(default: None)" not in text
    for field in config_fields():
        assert "--" + field.name.replace("_", "-") in text
    assert "width of the hidden layers (default: 256)" in text
    assert "K of the critic's adjustments {-2K, -K, +K, +2K} (default: 0.1)" in text
    assert not re.search(r"\(default: [^()]*\) \(default: ", text)  # never twice in a row


@pytest.mark.parametrize(
    "command, dataclass",
    [
        (["mine", "--env", "l2rpn_case14_sandbox"], "ace_core.imitation.mining.MineSpec"),
        (
            ["pretrain", "--env", "e", "--dataset", "d", "--out", "o"],
            "ace_core.imitation.cloning.CloneConfig",
        ),
        (["dagger", "--env", "e", "--dataset", "d", "--out", "o"], "ace_core.imitation.cloning.CloneConfig"),
    ],
)
def test_the_imitation_commands_take_a_flag_per_field_of_their_settings(command, dataclass, capsys):
    from ace_core.cli import build_parser
    from ace_core.cli.flags import from_args

    module, _, name = dataclass.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(SystemExit):
        build_parser().parse_args([command[0], "--help"])
    text = capsys.readouterr().out
    for field in dataclasses.fields(cls):
        assert "--" + field.name.replace("_", "-") in text
    # no flag given: the dataclass's own defaults
    values = {"env": "l2rpn_case14_sandbox"} if command[0] == "mine" else {}
    assert from_args(cls, build_parser().parse_args(command)) == cls(**values)


def test_building_the_parser_imports_neither_torch_nor_grid2op():
    """Every command pays for the parser; the imitation commands' flags come from modules that
    import torch and grid2op, so they are added only when those commands run."""
    code = (
        "import sys; from ace_core.cli import build_parser; build_parser();"
        "print(sorted(m for m in ('torch', 'grid2op') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_evaluate_plays_the_grid_seeds_from_the_first_one_asked(tmp_path):
    out = tmp_path / "eval"
    args = ["--env", "l2rpn_case14_sandbox", "--agent", "do-nothing", "--episodes", "1"]
    run_cli("evaluate", *args, "--seeds", "2", "--first-seed", "5", "--out", str(out), check_rc=0)
    report = json.loads((out / "report.json").read_text())
    assert report["seeds"] == [5, 6] and len(report["episodes"]) == 2

"""Evaluation on Ray actors: the same episodes, seeds and figures as in one process, EpisodeData
written by the driver in the same layout, and a worker that dies loses only its episode."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from ace_core.evaluation.runner import evaluate

SAME = ("survival_mean", "reward_mean", "simulate_calls", "decisions", "real_action_share", "demand_scale")


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _kill_one_player(killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first Ray worker seen playing an episode (its process title names the call)."""
    while not stop.is_set() and not killed:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                title = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"RayEpisodePlayer.play" in title:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
                return
        time.sleep(0.05)


def test_ray_evaluation_gives_the_figures_of_one_process_and_survives_a_dead_worker(tmp_path):
    settings = dict(nb_episode=2, seeds=(0, 1), episode_length=48, demand_scale=1.15, opponent="storm")
    here = evaluate("l2rpn_case14_sandbox", "greedy:16", "test", out_dir=tmp_path / "here", **settings)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_one_player, args=(killed, stop))
    killer.start()
    try:
        fanned = evaluate(
            "l2rpn_case14_sandbox", "greedy:16", "test", out_dir=tmp_path / "ray", workers=2, **settings
        )
    finally:
        stop.set()
        killer.join()
    assert killed, "no Ray worker was seen playing"
    assert fanned["episodes"] == here["episodes"]
    assert {k: fanned[k] for k in SAME} == {k: here[k] for k in SAME}
    assert _files(tmp_path / "ray") == _files(tmp_path / "here")


def test_the_evaluations_of_one_ray_block_share_their_actors(tmp_path):
    """A table or the stress table starts Ray once and its actors play every evaluation: each
    evaluation's figures are still those of one process."""
    from ace_core.evaluation import episodes

    settings = dict(nb_episode=2, seeds=(0,), episode_length=24)
    agents = ("do-nothing", "greedy:16")
    here = {agent: evaluate("l2rpn_case14_sandbox", agent, "test", **settings) for agent in agents}
    with episodes.ray_started(2), episodes.ray_started(2):  # a table inside the stress table
        first = evaluate("l2rpn_case14_sandbox", agents[0], "test", workers=2, **settings)
        actors = [actor._actor_id for actor in episodes._kept]
        second = evaluate("l2rpn_case14_sandbox", agents[1], "test", workers=2, **settings)
        assert [actor._actor_id for actor in episodes._kept] == actors and len(actors) == 2
    assert episodes._kept is None  # the block's end kills them
    for agent, fanned in zip(agents, (first, second)):
        assert fanned["episodes"] == here[agent]["episodes"]
        assert {k: fanned[k] for k in SAME} == {k: here[agent][k] for k in SAME}

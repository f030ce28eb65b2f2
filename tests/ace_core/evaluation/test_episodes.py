"""Evaluation on Ray actors: the same episodes, seeds and figures as in one process, EpisodeData
written by the driver in the same layout, and a worker that dies loses only its episode."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from ace_core.evaluation.runner import evaluate
from ace_core.workers import Workers

SAME = (
    "survival_mean",
    "reward_mean",
    "simulate_calls",
    "decisions",
    "real_action_share",
    "demand_scale",
    "demand_spread",
)


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
    settings = dict(
        nb_episode=2, seeds=(0, 1), episode_length=48, demand_scale=1.15, demand_spread=0.05, opponent="storm"
    )
    here = evaluate("l2rpn_case14_sandbox", "greedy:16", "test", out_dir=tmp_path / "here", **settings)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_one_player, args=(killed, stop))
    killer.start()
    try:
        fanned = evaluate(
            "l2rpn_case14_sandbox",
            "greedy:16",
            "test",
            out_dir=tmp_path / "ray",
            workers=Workers(2),
            **settings,
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
    with (
        episodes.ray_started(Workers(2)),
        episodes.ray_started(Workers(2)),
    ):  # a table inside the stress table
        first = evaluate("l2rpn_case14_sandbox", agents[0], "test", workers=Workers(2), **settings)
        actors = [actor._actor_id for actor in episodes._kept]
        second = evaluate("l2rpn_case14_sandbox", agents[1], "test", workers=Workers(2), **settings)
        assert [actor._actor_id for actor in episodes._kept] == actors and len(actors) == 2
    assert episodes._kept is None  # the block's end kills them
    for agent, fanned in zip(agents, (first, second)):
        assert fanned["episodes"] == here[agent]["episodes"]
        assert {k: fanned[k] for k in SAME} == {k: here[agent][k] for k in SAME}


def test_several_evaluations_on_ray_are_one_queue_with_the_figures_of_one_process(tmp_path):
    """A worker free at the end of one evaluation starts the next: the evaluation queued second
    starts before the one queued first is complete, each with its own episodes; and the stress
    table, every row's episodes in one queue, gives the cells of one process."""
    from ace_core.evaluation import episodes
    from ace_core.evaluation.runner import prepare
    from ace_core.evaluation.stress import run_stress

    first = prepare("l2rpn_case14_sandbox", "greedy:16", "test", 1, episode_length=24, keep_player=False)
    second = prepare(
        "l2rpn_case14_sandbox", "do-nothing", "test", 1, seeds=(0, 1), episode_length=12, keep_player=False
    )
    stress = dict(rows="ordinary,attacks-4h", nb_episode=1, episode_length=36)
    here = run_stress("l2rpn_case14_sandbox", "do-nothing,greedy:16", tmp_path / "here", **stress)
    started, completed = {}, {}

    def done(index: int, _, seconds: float) -> None:
        completed[index] = time.perf_counter()
        started[index] = completed[index] - seconds

    with episodes.ray_started(Workers(2)):
        played = episodes.play_batches_on_ray(
            [(first.settings, first.jobs), (second.settings, second.jobs)], False, Workers(2), done=done
        )
        fanned = run_stress(
            "l2rpn_case14_sandbox", "do-nothing,greedy:16", tmp_path / "ray", workers=Workers(2), **stress
        )
    assert started[1] < completed[0]  # not after the first evaluation, whichever ends first
    assert [[episode["scenario"] for episode, _, _ in batch] for batch, _ in played] == [
        [name for name, _ in first.jobs],
        [name for name, _ in second.jobs],
    ]
    assert all(seconds > 0 for _, seconds in played)
    timing = ("decision_ms_p95",)
    assert [{k: v for k, v in c.items() if k not in timing} for c in fanned] == [
        {k: v for k, v in c.items() if k not in timing} for c in here
    ]
    assert _files(tmp_path / "ray") == _files(tmp_path / "here")

"""A small GridACE API client: the whole loop (train, evaluate, deploy, run a live session), or
follow a live session and accept the top recommendation.

Uses only ``requests``. Create a token on the **API tokens** page, then either:

    GRIDACE_TOKEN=gat_... python docs/api_client.py --url http://localhost:8000 [--session 3] [--accepts 1]

It finds the session (the newest running one unless ``--session`` says which), polls its current
recommendations, and at each new step whose top recommendation the simulation found playable it
accepts it (an operator's token), until it has accepted ``--accepts`` of them or the session ends.

    GRIDACE_TOKEN=gat_... python docs/api_client.py --loop [--config steps=2000 ...] [--episodes 2] \\
        [--override-reason "..."] [--day 0]

The whole loop, with an engineer's token: launch a training run, wait for it, evaluate it on test
days, deploy it (the deploy guard needs an evaluation in which the policy survives at least as long
as do-nothing; only if it refuses, and only with ``--override-reason``, is the deploy overridden,
and the audit keeps the reason), start a live session of it and read its recommendations. If the
token's user is an operator too, it then accepts ``--accepts`` recommendations as above.

Every refusal comes back as ``{"error": ..., "field": ..., "accepted": ...}``; a 409 on a decision
means another operator decided that step first, a 400 "stale" that the grid moved on: both just
wait for the next step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import requests

ENDED = ("succeeded", "cancelled", "failed")
"""a run's or an evaluation's statuses once it is over"""
LOOP_CONFIG = {"env": "l2rpn_case14_sandbox", "steps": 1000, "checkpoint_every": 500, "log_every": 100}
"""the run ``--loop`` launches unless ``--config`` says otherwise: a small one, over in minutes"""


class GridAce:
    def __init__(self, url: str, token: str) -> None:
        self.base = url.rstrip("/") + "/api/v1"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        while True:
            response = self.http.request(method, self.base + path, timeout=30, **kwargs)
            if response.status_code != 429:
                return response
            time.sleep(int(response.headers.get("Retry-After", "1")))  # the token's rate limit

    def get(self, path: str, **params: Any) -> dict:
        response = self.call("GET", path, params=params)
        if response.status_code != 200:
            sys.exit(f"GET {path}: {response.status_code} {response.json()}")
        return response.json()

    def post(self, path: str, body: dict, expect: int = 201) -> dict:
        response = self.call("POST", path, json=body)
        if response.status_code != expect:
            sys.exit(f"POST {path}: {response.status_code} {response.json()}")
        return response.json()

    def wait(self, path: str, what: str, poll: float) -> dict:
        """GET ``path`` until what it reads has ended; print each change of status or progress."""
        shown = None
        while True:
            item = self.get(path)
            progress = (item["status"], item.get("progress_step"))
            if progress != shown:
                shown = progress
                steps = (
                    f" at step {item['progress_step']} of {item['total_steps']}"
                    if "progress_step" in item
                    else ""
                )
                print(f"  {what} is {item['status']}{steps}")
            if item["status"] in ENDED:
                return item
            time.sleep(poll)


def _setting(text: str) -> tuple[str, Any]:
    """``name=value`` from the command line: the value as JSON when it reads as JSON, else text."""
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not name=value")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def whole_loop(api: GridAce, args: argparse.Namespace) -> int:
    """Launch, wait, evaluate, deploy, start a session, read its recommendations; the session's id."""
    config = {**LOOP_CONFIG, **dict(args.config)}
    run = api.post("/runs", {"label": "example client loop", "config": config})
    print(f"run {run['id']} launched on {run['env']} for {run['total_steps']} steps")
    run = api.wait(f"/runs/{run['id']}", f"run {run['id']}", args.poll_jobs)
    if run["status"] != "succeeded":
        sys.exit(f"run {run['id']} ended {run['status']}: {run['error']}")

    evaluation = api.post(f"/runs/{run['id']}/evaluations", {"split": "test", "nb_episode": args.episodes})
    print(f"evaluation {evaluation['id']} of run {run['id']} queued (test days, {args.episodes} per agent)")
    evaluation = api.wait(
        f"/evaluations/{evaluation['id']}", f"evaluation {evaluation['id']}", args.poll_jobs
    )
    if evaluation["status"] != "succeeded":
        sys.exit(f"evaluation {evaluation['id']} ended {evaluation['status']}: {evaluation['error']}")
    for row in evaluation["rows"]:
        survival = row["survival_mean"]
        print(f"  {row['agent']:<34} survival {'-' if survival is None else round(survival, 3)}")

    check = api.get(f"/runs/{run['id']}/deploy-check")
    deploy = api.call("POST", f"/runs/{run['id']}/deploy", json={"comment": "deployed by the example client"})
    if deploy.status_code == 409 and args.override_reason:
        print(f"deploy refused: {check['refusal']}\n  overriding: {args.override_reason}")
        deploy = api.call(
            "POST",
            f"/runs/{run['id']}/deploy",
            json={"comment": "deployed by the example client", "override_reason": args.override_reason},
        )
    if deploy.status_code != 201:
        refusal = deploy.json()
        sys.exit(
            f"deploy refused ({deploy.status_code}): {refusal['error']}; accepted: {refusal['accepted']}"
        )
    print(f"deployment {deploy.json()['id']}: run {run['id']} is the policy live sessions use")

    session = api.post(
        "/sessions", {"label": "example client loop", "scenario_index": args.day, "speed_seconds": 2.0}
    )
    print(f"session {session['id']} started on {session['env']}, day {args.day}")
    while True:
        recs = api.get(f"/sessions/{session['id']}/recommendations")
        if recs["items"]:
            break
        time.sleep(args.poll)
    print(f"step {recs['step']}: {len(recs['items'])} recommendations")
    for rec in recs["items"]:
        after = rec["max_rho_after"]
        print(
            f"  {rec['rank']}. {rec['description']} (max rho {rec['max_rho_before']:.3f} -> "
            f"{'refused: ' + rec['error'] if after is None else round(after, 3)})"
        )
    return session["id"]


def follow(api: GridAce, session_id: int, accepts: int, poll: float) -> None:
    """Accept the top playable recommendation at each new step, ``accepts`` times."""
    state = api.get(f"/sessions/{session_id}/state")
    print(f"following session {session_id} ({state['session']['env']}) at step {state['cursor']}")

    accepted, last_step = 0, None
    while accepted < accepts:
        recs = api.get(f"/sessions/{session_id}/recommendations")
        status = api.get(f"/sessions/{session_id}/state")["session"]["status"]
        if status not in ("running", "paused"):
            print(f"session {session_id} is {status}")
            break
        playable = [r for r in recs["items"] if not r["error"]]
        if recs["step"] == last_step or not recs["decisions_open"] or not playable:
            time.sleep(poll)
            continue
        last_step, top = recs["step"], playable[0]
        after = top["max_rho_after"]
        print(
            f"step {recs['step']}: top recommendation {top['description']!r} "
            f"(max rho {top['max_rho_before']:.3f} -> {after if after is None else round(after, 3)})"
        )
        response = api.call(
            "POST",
            f"/sessions/{session_id}/recommendations/{top['id']}/decision",
            json={"decision": "accept", "step": recs["step"], "comment": "accepted by the example client"},
        )
        if response.status_code == 200:
            accepted += 1
            print(f"  accepted: decision {response.json()['id']}, played at the next step")
        else:
            print(f"  refused ({response.status_code}): {response.json()['error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://localhost:8000")
    parser.add_argument("--token", default=os.environ.get("GRIDACE_TOKEN", ""))
    parser.add_argument("--session", type=int, help="default: the newest running session")
    parser.add_argument("--accepts", type=int, default=1, help="top recommendations to accept")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between two polls of a session")
    loop = parser.add_argument_group("the whole loop (an engineer's token)")
    loop.add_argument("--loop", action="store_true", help="train, evaluate, deploy, start a session")
    loop.add_argument(
        "--config",
        type=_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"a setting of the run (the launch form's names); default {LOOP_CONFIG}",
    )
    loop.add_argument("--episodes", type=int, default=2, help="test episodes of the evaluation")
    loop.add_argument(
        "--override-reason",
        default="",
        help="deploy even if the guard refuses, for this reason (10+ characters)",
    )
    loop.add_argument("--day", type=int, default=0, help="the day the live session plays")
    loop.add_argument("--poll-jobs", type=float, default=5.0, help="seconds between two polls of a run")
    args = parser.parse_args()
    if not args.token:
        sys.exit("give a token: --token gat_... or GRIDACE_TOKEN")

    api = GridAce(args.url, args.token)
    me = api.get("/me")
    print(f"signed in as {me['username']} ({', '.join(me['roles'])}) with token {me['token']}")
    session_id = args.session
    if args.loop:
        session_id = whole_loop(api, args)
        if "operator" not in me["roles"]:
            print("accepting recommendations needs an operator's token: done")
            return
    if session_id is None:
        running = api.get("/sessions", status="running", limit=1)["items"]
        if not running:
            sys.exit("no running session; start one on the Live grid page")
        session_id = running[0]["id"]
    follow(api, session_id, args.accepts, args.poll)


if __name__ == "__main__":
    main()

"""A small GridACE API client: follow a live session and accept the top recommendation.

Uses only ``requests``. Create a token on the **API tokens** page (an operator's, to decide),
then:

    GRIDACE_TOKEN=gat_... python docs/api_client.py --url http://localhost:8000 [--session 3] [--accepts 1]

It finds the session (the newest running one unless ``--session`` says which), polls its current
recommendations, and at each new step whose top recommendation the simulation found playable it
accepts it, until it has accepted ``--accepts`` of them or the session ends. Every refusal comes
back as ``{"error": ..., "field": ..., "accepted": ...}``; a 409 means another operator decided
that step first, a 400 "stale" that the grid moved on: both just wait for the next step.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import requests


class GridAce:
    def __init__(self, url: str, token: str) -> None:
        self.base = url.rstrip("/") + "/api/v1"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        while True:
            response = self.http.request(method, self.base + path, timeout=30, **kwargs)
            if response.status_code != 429:
                return response
            time.sleep(int(response.headers.get("Retry-After", "1")))  # the token's rate limit

    def get(self, path: str, **params) -> dict:
        response = self.call("GET", path, params=params)
        if response.status_code != 200:
            sys.exit(f"GET {path}: {response.status_code} {response.json()}")
        return response.json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://localhost:8000")
    parser.add_argument("--token", default=os.environ.get("GRIDACE_TOKEN", ""))
    parser.add_argument("--session", type=int, help="default: the newest running session")
    parser.add_argument("--accepts", type=int, default=1, help="top recommendations to accept")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between two polls")
    args = parser.parse_args()
    if not args.token:
        sys.exit("give a token: --token gat_... or GRIDACE_TOKEN")

    api = GridAce(args.url, args.token)
    me = api.get("/me")
    print(f"signed in as {me['username']} ({', '.join(me['roles'])}) with token {me['token']}")
    session_id = args.session
    if session_id is None:
        running = api.get("/sessions", status="running", limit=1)["items"]
        if not running:
            sys.exit("no running session; start one on the Live grid page")
        session_id = running[0]["id"]
    state = api.get(f"/sessions/{session_id}/state")
    print(f"following session {session_id} ({state['session']['env']}) at step {state['cursor']}")

    accepted, last_step = 0, None
    while accepted < args.accepts:
        recs = api.get(f"/sessions/{session_id}/recommendations")
        status = api.get(f"/sessions/{session_id}/state")["session"]["status"]
        if status not in ("running", "paused"):
            print(f"session {session_id} is {status}")
            break
        playable = [r for r in recs["items"] if not r["error"]]
        if recs["step"] == last_step or not recs["decisions_open"] or not playable:
            time.sleep(args.poll)
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


if __name__ == "__main__":
    main()

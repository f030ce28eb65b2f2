"""Latency of the HTTP API's two hottest reads under concurrent clients, against a real server.

Sets up a database (a fresh SQLite file by default, or ``--database-url`` for PostgreSQL; the
database is created when missing), a deployed policy (random weights, the real loading code), a
live session of l2rpn_case14_sandbox fed ``--steps`` steps by the real feed worker, and one API
token per client. Then starts daphne (one process, as the demo and the compose file run it) and
runs ``--clients`` threads, each with its own token and connection, alternating
``GET /api/v1/sessions/{id}/state`` and ``GET /api/v1/sessions/{id}/recommendations`` as fast as
answers come for ``--seconds``. Prints per-endpoint latency percentiles and throughput as JSON.

    .venv/bin/python bench/api_latency.py [--clients 20] [--seconds 20] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
ENV = "l2rpn_case14_sandbox"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ensure_postgres_database(url: str) -> None:
    import dj_database_url
    import psycopg

    config = dj_database_url.parse(url)
    admin = dict(host=config["HOST"], port=config["PORT"] or 5432, user=config["USER"], dbname="postgres")
    if config.get("PASSWORD"):
        admin["password"] = config["PASSWORD"]
    with psycopg.connect(**admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{config["NAME"]}"')


def set_up(clients: int, steps: int) -> tuple[int, list[str]]:
    """Migrate, deploy a policy, feed a session ``steps`` steps; the session id and the tokens."""
    import django

    django.setup()
    from django.core.management import call_command

    from ace_core.config import TrainConfig
    from ace_core.live import untrained_policy
    from webapp.accounts.services import user_create_with_role
    from webapp.api.services import token_create
    from webapp.jobs.models import JobStatus
    from webapp.operations.services import session_start, sessions_claim
    from webapp.operations.worker.feed import SessionFeed
    from webapp.training.models import Checkpoint
    from webapp.training.services.deployment import checkpoint_deploy
    from webapp.training.services.runs import run_launch

    call_command("migrate", verbosity=0)
    stamp = str(int(time.time()))
    engineer = user_create_with_role(
        username=f"bench-eng-{stamp}", password="bench-password-123", role="engineer"
    )
    operator = user_create_with_role(
        username=f"bench-op-{stamp}", password="bench-password-123", role="operator"
    )
    run = run_launch(config=TrainConfig(env=ENV, steps=300), launched_by=engineer, label="api bench")
    run.status = JobStatus.SUCCEEDED
    run.save(update_fields=["status"])
    policy = untrained_policy(
        ENV, Path(tempfile.mkdtemp(prefix="gridace-api-bench-")) / "checkpoint.pt", hidden=64
    )
    checkpoint_deploy(
        checkpoint=Checkpoint.objects.create(run=run, step=300, path=str(policy)), user=engineer
    )
    session = session_start(user=engineer, scenario_index=0, seed=0, k=3, speed_seconds=0.0)
    sessions_claim(worker_token="bench-feed")
    SessionFeed(session_id=session.pk, worker_token="bench-feed", publisher=None).run(max_steps=steps)
    tokens = [token_create(user=operator, name=f"bench client {i}")[1] for i in range(clients)]
    return session.pk, tokens


def hammer(
    base: str, session_id: int, tokens: list[str], seconds: float
) -> dict[str, list[tuple[float, int]]]:
    paths = {
        "state": f"{base}/api/v1/sessions/{session_id}/state",
        "recommendations": f"{base}/api/v1/sessions/{session_id}/recommendations",
    }
    results: dict[str, list[tuple[float, int]]] = {name: [] for name in paths}
    lock = threading.Lock()
    start = threading.Barrier(len(tokens))

    def client(token: str) -> None:
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {token}"
        for url in paths.values():  # connect and warm up outside the measurement
            http.get(url, timeout=30)
        start.wait()
        deadline = time.monotonic() + seconds
        mine: dict[str, list[tuple[float, int]]] = {name: [] for name in paths}
        while time.monotonic() < deadline:
            for name, url in paths.items():
                began = time.perf_counter()
                status = http.get(url, timeout=30).status_code
                mine[name].append(((time.perf_counter() - began) * 1000.0, status))
        with lock:
            for name, rows in mine.items():
                results[name].extend(rows)

    threads = [threading.Thread(target=client, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def summary(rows: list[tuple[float, int]], seconds: float) -> dict[str, float | int]:
    latencies = sorted(ms for ms, _ in rows)
    cut = statistics.quantiles(latencies, n=100)
    return {
        "requests": len(rows),
        "non_200": sum(1 for _, status in rows if status != 200),
        "per_second": round(len(rows) / seconds, 1),
        "p50_ms": round(cut[49], 1),
        "p95_ms": round(cut[94], 1),
        "p99_ms": round(cut[98], 1),
        "max_ms": round(latencies[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--steps", type=int, default=30, help="steps the session has recorded")
    parser.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    args = parser.parse_args()

    var_dir = Path(tempfile.mkdtemp(prefix="gridace-api-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    # one token per client, and no client near the per-token limit: the server is measured, not the limiter
    env.update(
        GRIDACE_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="webapp.settings", GRIDACE_API_RATE="100000/min"
    )
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
        if args.database_url.startswith("postgres"):
            ensure_postgres_database(args.database_url)
    os.environ.clear()
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    session_id, tokens = set_up(args.clients, args.steps)

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if requests.get(f"{base}/api/v1/openapi.json", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.5)
        else:
            raise SystemExit("daphne did not answer within 120 s")
        state_bytes = len(
            requests.get(
                f"{base}/api/v1/sessions/{session_id}/state", headers={"Authorization": f"Bearer {tokens[0]}"}
            ).content
        )
        results = hammer(base, session_id, tokens, args.seconds)
    finally:
        server.terminate()
        server.wait(timeout=30)
    from django.db import connection

    print(
        json.dumps(
            {
                "server": "daphne, 1 process (ASGI; Django runs sync views on one thread per process)",
                "database": connection.vendor,
                "clients": args.clients,
                "seconds": args.seconds,
                "session_steps": args.steps,
                "state_bytes": state_bytes,
                "endpoints": {name: summary(rows, args.seconds) for name, rows in results.items()},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()

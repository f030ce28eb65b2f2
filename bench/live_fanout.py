"""Websocket fan-out of the live console: N authenticated clients on daphne, each receiving the
live feed's step messages (1 per second by default) for a bounded time.

Sets up a Postgres database of its own (``gridace_bench_live`` on the server of
``$BENCH_DATABASE_SERVER``, default postgres://postgres@127.0.0.1:5432), needs Redis
(``$REDIS_URL``, default redis://127.0.0.1:6379/0; channels_redis with max_connections 2000 as the
settings configure it), deploys a policy with random weights for ``--env``, starts one live
session, then runs daphne and ``manage.py live_feed`` as child processes on 127.0.0.1. With
``--processes N`` (N > 1) it runs N daphne processes behind HAProxy (Debian's ``haproxy``, as
``docker/compose.yaml`` does), all fed by the same Redis groups, and the clients connect to
HAProxy. The clients (a minimal RFC 6455 client on asyncio, loopback only, sending an Origin
header and a session cookie each) measure the time from opening the TCP connection to the
snapshot received, and end-to-end latency from the worker's step (``stepped_at`` in the message)
to receipt. Prints JSON: connect times, latency p50/p95/p99/max, dropped connections, messages per
client, the step messages' size in bytes (mean and max over the steps received), daphne RSS.

    .venv/bin/python bench/live_fanout.py [--clients 200] [--seconds 60] [--speed 1.0]
        [--env l2rpn_case14_sandbox] [--processes 1] [--layer core|pubsub]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "gridace_bench_live"
DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432"
CONNECT_CONCURRENCY = 10  # clients opening at once: a ramp, as real consoles do not all open in one instant
CONNECT_TIMEOUT_S = 20.0
STEPPED_AT = re.compile(r'"stepped_at": ?([0-9.]+)')


# ----- a minimal websocket client (text frames, ping/pong, close) -----------------------------
async def ws_open(port: int, path: str, cookie: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**22)
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n"
        f"Cookie: sessionid={cookie}\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    status = await reader.readline()
    if b" 101 " not in status:
        raise ConnectionError(f"handshake refused: {status.decode().strip()}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    return reader, writer


def ws_frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def ws_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str | None:
    """The next text message (answering pings on the way); None when the server closed."""
    parts: list[bytes] = []
    while True:
        b1, b2 = await reader.readexactly(2)
        opcode, length = b1 & 0x0F, b2 & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await reader.readexactly(8))
        payload = await reader.readexactly(length)
        if opcode == 0x8:
            return None
        if opcode == 0x9:
            writer.write(ws_frame(0xA, payload))
            continue
        if opcode in (0x1, 0x0):
            parts.append(payload)
            if b1 & 0x80:
                return b"".join(parts).decode()


class Client:
    def __init__(self, index: int, cookie: str) -> None:
        self.index = index
        self.cookie = cookie
        self.latencies: list[float] = []
        self.steps = 0
        self.connected = False
        self.dropped = ""
        self.measuring = False
        self.message_bytes = 0
        self.step_bytes: list[int] = []
        """the size of each step message received while measuring (UTF-8 bytes)"""
        self.connect_ms: float | None = None
        """from opening the TCP connection to the snapshot received"""

    async def run(self, port: int, path: str, connect_gate: asyncio.Semaphore, stop: asyncio.Event) -> None:
        async with connect_gate:
            started = time.monotonic()
            try:
                reader, writer = await asyncio.wait_for(ws_open(port, path, self.cookie), CONNECT_TIMEOUT_S)
            except Exception as error:
                self.dropped = f"connect: {type(error).__name__}: {error}"
                return
        try:  # the snapshot (out of the gate: the next client opens meanwhile)
            first = await asyncio.wait_for(ws_read(reader, writer), CONNECT_TIMEOUT_S)
        except Exception as error:
            self.dropped = f"snapshot: {type(error).__name__}: {error}"
            return
        if first is None:
            self.dropped = "snapshot: closed by the server"
            return
        self.connect_ms = (time.monotonic() - started) * 1000.0
        self.connected = True
        reading = asyncio.create_task(self._read_all(reader, writer))
        await stop.wait()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await self.close(writer)

    async def close(self, writer: asyncio.StreamWriter) -> None:
        writer.close()

    def on_text(self, text: str, received_ms: float) -> None:
        """One text message from the server, received at ``received_ms`` (ms since the epoch)."""
        if self.measuring and text.startswith('{"kind":"step"'):
            stepped_at = STEPPED_AT.search(text)
            self.latencies.append(received_ms - float(stepped_at.group(1)))
            self.message_bytes = len(text)
            self.step_bytes.append(len(text.encode()))
            self.steps += 1

    async def _read_all(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Reads until cancelled; the receipt time is taken before anything is parsed."""
        try:
            while True:
                text = await ws_read(reader, writer)
                received_ms = time.time() * 1000.0
                if text is None:
                    self.dropped = "closed by the server"
                    return
                self.on_text(text, received_ms)
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            self.dropped = f"{type(error).__name__}"


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database_create(server: str, database: str) -> None:
    """A fresh, empty ``database`` on the Postgres ``server`` (dropped first when it exists)."""
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {database}")


def bench_env(*, database_url: str, redis_url: str, prefix: str, var_dir: Path) -> dict[str, str]:
    """The environment of this process and of its daphne and live_feed children."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CHANNEL_LAYER_PREFIX": prefix,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "GRIDACE_VAR_DIR": str(var_dir),
        "LIVE_RELAY_FROM_DB": "0",
    }


def django_ready(env: dict[str, str]) -> None:
    """Django set up in this process on ``env``'s database, migrated, with the role groups."""
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from webapp.accounts.services import role_groups_sync

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("migrate", verbosity=0)
    role_groups_sync()


def bench_users() -> tuple[Any, Any]:
    """An engineer (deploys, starts sessions) and an operator (watches)."""
    from webapp.accounts.services import user_create_with_role

    engineer = user_create_with_role(
        username="bench-engineer", password="bench-password-123", role="engineer"
    )
    operator = user_create_with_role(
        username="bench-operator", password="bench-password-123", role="operator"
    )
    return engineer, operator


def policy_deploy(engineer: Any, var_dir: Path, env_name: str = "l2rpn_case14_sandbox") -> None:
    """A policy with random weights for ``env_name``, deployed by ``engineer``."""
    from ace_core.live import untrained_policy
    from webapp.jobs.models import JobStatus
    from webapp.training.models import Checkpoint, TrainingRun
    from webapp.training.services.deployment import checkpoint_deploy

    run = TrainingRun.objects.create(
        config={},
        env=env_name,
        total_steps=1,
        status=JobStatus.SUCCEEDED,
        launched_by=engineer,
        out_dir=str(var_dir),
    )
    policy = untrained_policy(env_name, var_dir / "policy" / env_name / "checkpoint.pt", hidden=32)
    checkpoint_deploy(checkpoint=Checkpoint.objects.create(run=run, step=1, path=str(policy)), user=engineer)


def login_cookies(user: Any, count: int) -> list[str]:
    """``count`` session cookies of ``user``: one login (one Django session) per client."""
    from django.conf import settings
    from django.test import Client as DjangoClient

    cookies = []
    for _ in range(count):
        client = DjangoClient()
        client.force_login(user)
        cookies.append(client.cookies[settings.SESSION_COOKIE_NAME].value)
    return cookies


def daphne_start(env: dict[str, str], port: int, logs: Any) -> subprocess.Popen:
    """daphne on 127.0.0.1:``port``, writing to ``logs``."""
    return subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=logs,
        stderr=subprocess.STDOUT,
    )


def worker_start(env: dict[str, str], logs: Any) -> subprocess.Popen:
    """``manage.py live_feed``, writing to ``logs``."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "live_feed"], cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT
    )


def servers_start(env: dict[str, str], port: int, logs: Any) -> tuple[subprocess.Popen, subprocess.Popen]:
    """daphne on 127.0.0.1:``port`` and ``manage.py live_feed``, both writing to ``logs``."""
    return daphne_start(env, port, logs), worker_start(env, logs)


HAPROXY_CONFIG = """\
# written by bench/live_fanout.py: the front of the daphne processes (as docker/haproxy.cfg)
global
    maxconn 4000
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout tunnel 1h
frontend live
    bind 127.0.0.1:{port}
    default_backend daphne
backend daphne
    balance leastconn
{servers}
"""


def front_start(port: int, daphne_ports: list[int], var_dir: Path, logs: Any) -> subprocess.Popen:
    """HAProxy on 127.0.0.1:``port`` in front of daphne on ``daphne_ports`` (sockets go to the
    process with the fewest)."""
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(haproxy).exists():
        raise SystemExit("--processes needs HAProxy: apt-get install -y haproxy")
    servers = "\n".join(f"    server daphne{i} 127.0.0.1:{p}" for i, p in enumerate(daphne_ports))
    config = var_dir / "haproxy.cfg"
    config.write_text(HAPROXY_CONFIG.format(port=port, servers=servers))
    return subprocess.Popen([haproxy, "-db", "-f", str(config)], stdout=logs, stderr=subprocess.STDOUT)


def port_wait(port: int, deadline: float) -> None:
    """Until something listens on 127.0.0.1:``port`` or ``deadline`` (time.monotonic()) passes."""
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)


def processes_stop(*processes: subprocess.Popen) -> None:
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--speed", type=float, default=1.0, help="seconds between two grid steps")
    parser.add_argument("--env", default="l2rpn_case14_sandbox", help="the grid the session plays")
    parser.add_argument(
        "--processes", type=int, default=1, help="daphne processes (more than 1: behind HAProxy)"
    )
    parser.add_argument(
        "--layer",
        choices=["core", "pubsub"],
        default=os.environ.get("CHANNEL_LAYER", "pubsub"),
        help="the Redis channel layer (the CHANNEL_LAYER setting)",
    )
    args = parser.parse_args()
    if not 1 <= args.clients <= 2000 or not 1 <= args.seconds <= 600 or not 1 <= args.processes <= 8:
        raise SystemExit("accepted: 1 to 2000 clients, 1 to 600 seconds, 1 to 8 processes")

    server = os.environ.get("BENCH_DATABASE_SERVER", DEFAULT_SERVER)
    database_create(server, DATABASE)
    var_dir = Path("/tmp") / "gridace-fanout-bench"
    # the database starts empty, so do the runs: a policy deployed by an earlier run (another
    # env's, under the same run id) would be kept in place of this one
    shutil.rmtree(var_dir / "runs", ignore_errors=True)
    env = bench_env(
        database_url=f"{server}/{DATABASE}",
        redis_url=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        prefix="gridace-bench",
        var_dir=var_dir,
    )
    env["CHANNEL_LAYER"] = args.layer
    django_ready(env)
    from webapp.operations.models import LiveSession, SessionStep
    from webapp.operations.services import session_start

    engineer, operator = bench_users()
    policy_deploy(engineer, var_dir, args.env)
    session = session_start(user=engineer, scenario_index=0, speed_seconds=args.speed, label="fan-out bench")
    cookies = login_cookies(operator, args.clients)

    port = free_port()
    logs = open(var_dir / "fanout-processes.log", "w")
    daphne_ports = [port] if args.processes == 1 else [free_port() for _ in range(args.processes)]
    processes = [daphne_start(env, p, logs) for p in daphne_ports]
    daphne_pids = [process.pid for process in processes]
    if args.processes > 1:
        processes.append(front_start(port, daphne_ports, var_dir, logs))
    processes.append(worker_start(env, logs))
    try:
        deadline = time.monotonic() + 60
        for p in {port, *daphne_ports}:
            port_wait(p, deadline)
        while SessionStep.objects.filter(session=session).count() < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        figures = asyncio.run(_measure(args, port, f"/ws/live/{session.pk}/", cookies, daphne_pids))
        session.refresh_from_db()
        figures["worker_steps_total"] = session.current_step
        figures["worker_status"] = LiveSession.objects.get(pk=session.pk).status
    finally:
        processes_stop(*reversed(processes))
        logs.close()
    print(
        json.dumps({"env": args.env, "processes": args.processes, "layer": args.layer, **figures}, indent=2)
    )


async def _measure(args, port: int, path: str, cookies: list[str], daphne_pids: list[int]) -> dict:
    clients = [Client(i, cookie) for i, cookie in enumerate(cookies)]
    stop = asyncio.Event()
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    rss_before = sum(rss_mb(pid) for pid in daphne_pids)
    connect_started = time.monotonic()
    tasks = [asyncio.create_task(c.run(port, path, gate, stop)) for c in clients]
    while time.monotonic() - connect_started < 60 and sum(
        c.connected or bool(c.dropped) for c in clients
    ) < len(clients):
        await asyncio.sleep(0.2)
    connect_seconds = time.monotonic() - connect_started
    await asyncio.sleep(1.0)  # let the snapshots go through before measuring
    for c in clients:
        c.measuring = True
    samples = []
    started = time.monotonic()
    while time.monotonic() - started < args.seconds:
        await asyncio.sleep(1.0)
        samples.append(sum(rss_mb(pid) for pid in daphne_pids))
    stop.set()
    await asyncio.wait(tasks, timeout=15)
    latencies = [x for c in clients for x in c.latencies]
    if os.environ.get("FANOUT_DUMP"):
        Path(os.environ["FANOUT_DUMP"]).write_text(json.dumps([c.latencies for c in clients]))
    per_client = [c.steps for c in clients if c.connected]
    step_bytes = max((c.step_bytes for c in clients), key=len)
    connect_ms = [c.connect_ms for c in clients if c.connect_ms is not None]
    return {
        "clients": len(clients),
        "connected": sum(c.connected for c in clients),
        "connect_seconds": round(connect_seconds, 2),
        "dropped": sum(bool(c.dropped) for c in clients),
        "drop_reasons": sorted({c.dropped for c in clients if c.dropped})[:5],
        "seconds": args.seconds,
        "step_period_s": args.speed,
        "messages_received": len(latencies),
        "messages_per_client_min": min(per_client) if per_client else 0,
        "messages_per_client_max": max(per_client) if per_client else 0,
        "connect_ms_p50": round(percentile(connect_ms, 50), 1),
        "connect_ms_p99": round(percentile(connect_ms, 99), 1),
        "connect_ms_max": round(max(connect_ms), 1) if connect_ms else None,
        "message_bytes": max(c.message_bytes for c in clients),
        "step_message_bytes_mean": round(sum(step_bytes) / len(step_bytes)) if step_bytes else None,
        "step_message_bytes_max": max(step_bytes) if step_bytes else None,
        "latency_ms_p50": round(percentile(latencies, 50), 1),
        "latency_ms_p95": round(percentile(latencies, 95), 1),
        "latency_ms_p99": round(percentile(latencies, 99), 1),
        "latency_ms_max": round(max(latencies), 1) if latencies else None,
        # daphne's resident memory (all processes together)
        "daphne_rss_mb_before_clients": round(rss_before, 1),
        "daphne_rss_mb_first": round(samples[0], 1) if samples else None,
        "daphne_rss_mb_peak": round(max(samples), 1) if samples else None,
        "daphne_rss_mb_last": round(samples[-1], 1) if samples else None,
    }


if __name__ == "__main__":
    main()

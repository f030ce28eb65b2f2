"""Soak of the live console: a long live session's worth of steps (7,200: two hours at 1 step/s,
played faster) watched by 50 websocket clients, to see whether memory, sockets or database
connections pile up in daphne or in the live feed.

Reuses the set-up of ``bench/live_fanout.py``: a Postgres database of its own
(``gridace_bench_soak`` on ``$BENCH_DATABASE_SERVER``, default postgres://postgres@127.0.0.1:5432),
Redis (``$SOAK_REDIS_URL``, default redis://127.0.0.1:6379/3, channel prefix ``gridace-soak``),
a deployed policy with random weights, daphne on a free port and ``manage.py live_feed`` as child
processes, and the minimal websocket client. A session plays one scenario (288 steps at most) and
then ends (finished, or game over: the feed plays doing nothing); the engineer then starts the
next scenario's session and every client moves to it (a close frame, as a page left, then a new
socket with the same login), until ``--steps`` steps are played or ``--max-minutes`` pass.

Every ``--sample-seconds`` (and once with the clients connected at the start and at the end, and
once after they left) it samples, for daphne and the feed: RSS (/proc/PID/status VmRSS), open file
descriptors and sockets (/proc/PID/fd, split by /proc/net/tcp into websocket clients, Postgres and
Redis); the database's connections (pg_stat_activity, this script's own left out: they are named
``gridace-soak-bench``); Redis's clients (INFO clients, and those on the soak's Redis database);
messages received per client; the window's latency. Samples go to ``runs/live_soak-<time>.csv``.

Prints JSON: the memory slope of each process in MB per 1,000 steps (least squares over the
samples after the first 10 % of the steps), RSS, sockets and connections at the start and the end,
sockets refused or lost, handshake times, step messages missed, latency p50/p99 (worker's step to
receipt), steps, sessions and wall time.

    .venv/bin/python bench/live_soak.py [--clients 50] [--steps 7200] [--speed 0.1] [--max-minutes 23]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import csv
import json
import os
import re
import struct
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_fanout import (  # noqa: E402
    CONNECT_CONCURRENCY,
    CONNECT_TIMEOUT_S,
    DEFAULT_SERVER,
    ROOT,
    Client,
    bench_env,
    bench_users,
    database_create,
    django_ready,
    free_port,
    login_cookies,
    percentile,
    policy_deploy,
    port_wait,
    processes_stop,
    rss_mb,
    servers_start,
    ws_frame,
    ws_open,
)

DATABASE = "gridace_bench_soak"
PREFIX = "gridace-soak"
BENCH_NAME = "gridace-soak-bench"
"""application_name / Redis client name of this script's own connections (left out of the counts)"""
POSTGRES_PORT, REDIS_PORT = 5432, 6379
STEP = re.compile(r'"step": ?(\d+), ?"stepped_at"')
POLL_S = 0.5
RETRY_S = (0.5, 15.0)
"""a console page's reconnection delay: first, and at most (doubling in between)"""
START_STEPS = 10
"""steps the first session plays under its clients before the start sample"""
WARM_UP = 0.10
"""share of the target steps whose samples the memory slope leaves out"""


# ----- the clients --------------------------------------------------------------------------
class SoakClient(Client):
    """One console on one session, reconnecting as the page does (``static/js/live_socket.js``:
    0.5 s after a lost or refused socket, doubling up to 15 s). Its latencies also go to the run's
    window; the step numbers each socket saw tell the step messages it missed. It leaves with a
    close frame, as a page does."""

    def __init__(self, index: int, cookie: str, window: list[float]) -> None:
        super().__init__(index, cookie)
        self.measuring = True
        self.window = window
        self.open = False
        self.failures: list[str] = []
        """why a socket was refused or lost, one entry each time"""
        self.opens = 0
        self.connect_ms: list[float] = []
        """handshake to accepted socket, first message not included"""
        self.missed = 0
        self.first: int | None = None
        self.last: int | None = None
        self.socket_steps = 0

    async def run(self, port: int, path: str, connect_gate: asyncio.Semaphore, stop: asyncio.Event) -> None:
        delay = RETRY_S[0]
        while not stop.is_set():
            async with connect_gate:
                began = time.monotonic()
                try:
                    reader, writer = await asyncio.wait_for(
                        ws_open(port, path, self.cookie), CONNECT_TIMEOUT_S
                    )
                    self.connect_ms.append((time.monotonic() - began) * 1000)
                except Exception as error:
                    reader, writer = None, None
                    self.failures.append(f"connect: {type(error).__name__}: {error}"[:80])
            if reader is not None:
                self.connected, delay = True, RETRY_S[0]
                if not await self._socket(reader, writer, stop):
                    return
                self.failures.append(self.dropped)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            delay = min(delay * 2, RETRY_S[1])

    async def _socket(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stop: asyncio.Event
    ) -> bool:
        """Reads one socket until ``stop`` (False) or until the server closes or loses it (True)."""
        self.open, self.dropped = True, ""
        self.opens += 1
        self.first = self.last = None
        self.socket_steps = 0
        reading = asyncio.create_task(self._read_all(reader, writer))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        self.open = False
        if self.first is not None:
            self.missed += self.last - self.first + 1 - self.socket_steps
        if reading.done():
            stopping.cancel()
            writer.close()
            return True
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await self.close(writer)
        return False

    def on_text(self, text: str, received_ms: float) -> None:
        seen = self.steps
        super().on_text(text, received_ms)
        if self.steps > seen:
            self.window.append(self.latencies[-1])
            self.socket_steps += 1
            step = int(STEP.search(text).group(1))
            self.first = step if self.first is None else self.first
            self.last = step

    async def close(self, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            writer.write(ws_frame(0x8, struct.pack("!H", 1001)))  # 1001: going away
            await writer.drain()
        writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), 5)


class Audience:
    """The run's clients: one set of :class:`SoakClient` per session, totals kept by client."""

    def __init__(self, cookies: list[str]) -> None:
        self.cookies = cookies
        self.window: list[float] = []
        self.latencies: list[float] = []
        self.messages = [0] * len(cookies)
        self.missed = 0
        self.failures: list[str] = []
        self.opens = 0
        self.connect_ms: list[float] = []
        self.never_connected = 0
        self.current: list[SoakClient] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    async def watch(self, port: int, session_id: int) -> None:
        """Every client opens a socket on ``session_id`` (at most 10 opening at once); returns once
        each one is open or was refused once (it then retries on its own)."""
        self._stop = asyncio.Event()
        gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
        self.current = [SoakClient(i, c, self.window) for i, c in enumerate(self.cookies)]
        path = f"/ws/live/{session_id}/"
        self._tasks = [asyncio.create_task(c.run(port, path, gate, self._stop)) for c in self.current]
        while sum(c.open or bool(c.failures) for c in self.current) < len(self.current):
            await asyncio.sleep(0.1)

    async def leave(self) -> None:
        self._stop.set()
        await asyncio.wait(self._tasks, timeout=30)
        for c in self.current:
            self.messages[c.index] += c.steps
            self.latencies.extend(c.latencies)
            self.missed += c.missed
            self.failures.extend(c.failures)
            self.opens += c.opens
            self.connect_ms.extend(c.connect_ms)
            self.never_connected += not c.connected
        self.current = []

    def connected(self) -> int:
        return sum(c.open for c in self.current)

    def failures_now(self) -> int:
        return len(self.failures) + sum(len(c.failures) for c in self.current)

    def messages_now(self) -> list[int]:
        now = list(self.messages)
        for c in self.current:
            now[c.index] += c.steps
        return now

    def window_take(self) -> list[float]:
        taken = list(self.window)
        self.window.clear()
        return taken


# ----- what the processes hold --------------------------------------------------------------
def tcp_sockets() -> dict[int, tuple[int, int, str]]:
    """Every TCP socket of this network namespace by inode: (local port, remote port, state)."""
    sockets = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote = fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1]
                sockets[int(fields[9])] = (int(local, 16), int(remote, 16), fields[3])
    return sockets


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of ``pid`` so far (/proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_figures(name: str, pid: int, ws_port: int, tcp: dict[int, tuple[int, int, str]]) -> dict:
    """RSS, file descriptors and sockets of ``pid``, its sockets split by what is at the other end."""
    fds, inodes = 0, []
    with contextlib.suppress(OSError):
        for entry in os.scandir(f"/proc/{pid}/fd"):
            fds += 1
            with contextlib.suppress(OSError):
                target = os.readlink(entry.path)
                if target.startswith("socket:["):
                    inodes.append(int(target[8:-1]))
    ends = [tcp[i] for i in inodes if i in tcp]
    return {
        f"{name}_rss_mb": round(rss_mb(pid), 1),
        f"{name}_cpu_s": round(cpu_seconds(pid), 1),
        f"{name}_fds": fds,
        f"{name}_sockets": len(inodes),
        f"{name}_ws": sum(local == ws_port and state != "0A" for local, _, state in ends),
        f"{name}_pg": sum(remote == POSTGRES_PORT for _, remote, _ in ends),
        f"{name}_redis": sum(remote == REDIS_PORT for _, remote, _ in ends),
    }


class Monitor:
    """This script's own connections to Postgres and Redis, named so that the counts leave them out."""

    def __init__(self, server: str, redis_url: str) -> None:
        import psycopg
        import redis

        self.pg = psycopg.connect(f"{server}/postgres", autocommit=True, application_name=BENCH_NAME)
        self.redis = redis.Redis.from_url(redis_url, client_name=BENCH_NAME)
        self.redis_db = str(self.redis.connection_pool.connection_kwargs.get("db", 0))

    def channel_layer_clear(self) -> int:
        """Deletes what earlier runs left under the soak's prefix (a group keeps the members whose
        consumer died without leaving it for a day), so that session 1 starts with an empty group."""
        keys = list(self.redis.scan_iter(match=f"{PREFIX}*"))
        if keys:
            self.redis.delete(*keys)
        return len(keys)

    def group_members(self) -> int:
        """Members of every group under the soak's prefix: the sockets the channel layer sends to."""
        return sum(self.redis.zcard(key) for key in self.redis.scan_iter(match=f"{PREFIX}:group:*"))

    def figures(self) -> dict:
        pg_app, pg_all = self.pg.execute(
            "SELECT count(*) FILTER (WHERE application_name <> %s), count(*)"
            " FROM pg_stat_activity WHERE datname = %s",
            (BENCH_NAME, DATABASE),
        ).fetchone()
        (opened,) = self.pg.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", (DATABASE,)
        ).fetchone()
        clients = self.redis.client_list()
        return {
            "pg_connections": pg_app,
            "pg_connections_bench": pg_all - pg_app,
            "pg_connections_opened": opened,
            "redis_clients": sum(c["db"] == self.redis_db and c["name"] != BENCH_NAME for c in clients),
            "redis_clients_server": self.redis.info("clients")["connected_clients"],
            "group_members": self.group_members(),
        }

    def close(self) -> None:
        self.pg.close()
        self.redis.close()


# ----- the sessions -------------------------------------------------------------------------
def session_progress(session_id: int) -> tuple[str, int, str]:
    from webapp.operations.models import LiveSession

    session = LiveSession.objects.get(pk=session_id)
    return session.status, max(session.current_step, 0), session.end_reason


def session_stop(session_id: int, user: Any) -> None:
    from webapp.operations.services import session_control

    with contextlib.suppress(Exception):  # it may have ended on its own in the meantime
        session_control(session_id=session_id, user=user, command="stop")


class Soak:
    """Plays sessions one after another under the audience, sampling as it goes."""

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        port: int,
        processes: dict[str, Any],
        engineer: Any,
        audience: Audience,
        monitor: Monitor,
        csv_path: Path,
    ) -> None:
        self.args = args
        self.port = port
        self.processes = processes
        self.engineer = engineer
        self.audience = audience
        self.monitor = monitor
        self.csv_path = csv_path
        self.db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="soak-db")
        self.steps_before = 0
        """steps of the sessions that ended"""
        self.session_id = 0
        self.session_step = 0
        self.sessions = 0
        self.ends: collections.Counter[str] = collections.Counter()
        self.samples: list[dict] = []
        self.marks: dict[str, dict] = {}
        self.sampler: asyncio.Task | None = None
        self.started = time.monotonic()
        self.wall_s = 0.0
        """from the first session's start to the end sample"""

    async def in_db(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Django and the monitor run in one thread of their own (one connection each)."""
        return await asyncio.get_running_loop().run_in_executor(self.db, partial(function, *args, **kwargs))

    @property
    def steps(self) -> int:
        return self.steps_before + self.session_step

    def done(self) -> bool:
        return self.steps >= self.args.steps or time.monotonic() - self.started >= self.args.max_minutes * 60

    async def run(self) -> None:
        from webapp.operations.selectors import scenario_names
        from webapp.operations.services import session_start

        scenarios = len(await self.in_db(scenario_names, "l2rpn_case14_sandbox"))
        self.started = time.monotonic()
        while True:
            session = await self.in_db(
                session_start,
                user=self.engineer,
                scenario_index=self.sessions % scenarios,
                speed_seconds=self.args.speed,
                label=f"soak {self.sessions + 1}",
            )
            self.session_id, self.session_step = session.pk, 0
            self.sessions += 1
            await self.audience.watch(self.port, session.pk)
            if await self.follow() == "ended":
                await asyncio.sleep(POLL_S)  # the session's last step message is on its way
            if self.done():
                break
            await self.audience.leave()
            self.steps_before += self.session_step
            self.session_step = 0
        self.sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.sampler
        await self.sample("end")
        self.wall_s = time.monotonic() - self.started
        await self.in_db(session_stop, self.session_id, self.engineer)
        await self.audience.leave()
        await asyncio.sleep(5.0)  # the servers notice the closed sockets
        await self.sample("after_clients_left")
        self.db.shutdown()

    async def follow(self) -> str:
        """Until the session ends ('ended') or the run has its steps or its time ('done'). The
        start sample is taken once the first session has played a few steps under its clients."""
        while True:
            await asyncio.sleep(POLL_S)
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}; see its log")
            status, self.session_step, reason = await self.in_db(session_progress, self.session_id)
            if self.sampler is None and self.session_step >= START_STEPS:
                await self.sample("start")
                self.sampler = asyncio.create_task(self.sample_every())
            if status not in ("running", "paused"):
                self.ends[reason.split(":")[0] or status] += 1
                return "ended"
            if self.done():
                return "done"

    async def sample_every(self) -> None:
        while True:
            await asyncio.sleep(self.args.sample_seconds)
            await self.sample("")

    async def sample(self, mark: str) -> None:
        tcp = tcp_sockets()
        row = {
            "t_s": round(time.monotonic() - self.started, 1),
            "mark": mark,
            "steps": self.steps,
            "sessions": self.sessions,
            "load_1m": round(os.getloadavg()[0], 2),
            **process_figures("daphne", self.processes["daphne"].pid, self.port, tcp),
            **process_figures("feed", self.processes["live_feed"].pid, self.port, tcp),
            **(await self.in_db(self.monitor.figures)),
            "clients_connected": self.audience.connected(),
            "socket_failures": self.audience.failures_now(),
        }
        messages = self.audience.messages_now()
        window = self.audience.window_take()
        row.update(
            messages_per_client_min=min(messages),
            messages_per_client_max=max(messages),
            window_latency_ms_p50=round(percentile(window, 50), 1),
            window_latency_ms_p99=round(percentile(window, 99), 1),
        )
        self.samples.append(row)
        if mark:
            self.marks[mark] = row
        first = not self.csv_path.exists()
        with self.csv_path.open("a", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(row))
            if first:
                writer.writeheader()
            writer.writerow(row)


# ----- the report ---------------------------------------------------------------------------
def slope_per_1000_steps(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x, times 1,000."""
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return 1000 * sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx


def memory(soak: Soak, name: str, after: int) -> dict:
    key = f"{name}_rss_mb"
    kept = [
        (s["steps"], s[key])
        for s in soak.samples
        if s["steps"] >= after and s["mark"] != "after_clients_left"
    ]
    slope = slope_per_1000_steps(kept)
    start, end = soak.marks["start"], soak.marks["end"]
    return {
        "start": start[key],
        "after_warm_up": kept[0][1] if kept else None,
        "end": end[key],
        "peak": max(s[key] for s in soak.samples),
        "slope_mb_per_1000_steps": round(slope, 2) if slope is not None else None,
        "samples_in_fit": len(kept),
        "cpu_percent": round(
            100 * (end[f"{name}_cpu_s"] - start[f"{name}_cpu_s"]) / max(end["t_s"] - start["t_s"], 1e-9), 1
        ),
    }


HELD = ("fds", "sockets", "ws", "pg", "redis")


def held(row: dict) -> dict:
    """What the processes hold at one sample."""
    figures = {f"{p}_{k}": row[f"{p}_{k}"] for p in ("daphne", "feed") for k in HELD}
    for key in (
        "group_members",
        "pg_connections",
        "redis_clients",
        "redis_clients_server",
        "clients_connected",
        "socket_failures",
        "steps",
    ):
        figures[key] = row[key]
    return figures


def report(soak: Soak) -> dict:
    args, audience = soak.args, soak.audience
    warm_up = int(args.steps * WARM_UP)
    latencies = audience.latencies
    return {
        "clients": args.clients,
        "step_period_s": args.speed,
        "steps_target": args.steps,
        "steps_played": soak.steps,
        "wall_s": round(soak.wall_s, 1),
        "steps_per_s": round(soak.steps / soak.wall_s, 2),
        "sessions": soak.sessions,
        "session_restarts": soak.sessions - 1,
        "session_ends": dict(soak.ends),
        "samples": len(soak.samples),
        "warm_up_steps": warm_up,
        "daphne_rss_mb": memory(soak, "daphne", warm_up),
        "feed_rss_mb": memory(soak, "feed", warm_up),
        "start": held(soak.marks["start"]),
        "end": held(soak.marks["end"]),
        "after_clients_left": held(soak.marks["after_clients_left"]),
        "socket_opens": audience.opens,
        "connect_ms_p50": round(percentile(audience.connect_ms, 50), 1),
        "connect_ms_p99": round(percentile(audience.connect_ms, 99), 1),
        "connect_ms_max": round(max(audience.connect_ms), 1) if audience.connect_ms else None,
        "sockets_refused_or_lost": len(audience.failures),
        "failure_reasons": dict(collections.Counter(audience.failures).most_common(5)),
        "clients_never_connected_to_a_session": audience.never_connected,
        "pg_connections_opened_per_s": round(
            (soak.marks["end"]["pg_connections_opened"] - soak.marks["start"]["pg_connections_opened"])
            / max(soak.marks["end"]["t_s"] - soak.marks["start"]["t_s"], 1e-9),
            1,
        ),
        "messages_received": len(latencies),
        "messages_per_client_min": min(audience.messages),
        "messages_per_client_max": max(audience.messages),
        "step_messages_missed": audience.missed,
        "latency_ms_p50": round(percentile(latencies, 50), 1),
        "latency_ms_p99": round(percentile(latencies, 99), 1),
        "latency_ms_max": round(max(latencies), 1) if latencies else None,
        "load_1m_mean": round(sum(s["load_1m"] for s in soak.samples) / len(soak.samples), 2),
        "csv": str(soak.csv_path.relative_to(ROOT)),
    }


# ----- main ---------------------------------------------------------------------------------
def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--steps", type=int, default=7200, help="grid steps to play, all sessions together")
    parser.add_argument("--speed", type=float, default=0.1, help="seconds between two grid steps")
    parser.add_argument("--max-minutes", type=float, default=23.0, help="of stepping, set-up excluded")
    parser.add_argument("--sample-seconds", type=float, default=30.0)
    args = parser.parse_args()
    if not 1 <= args.clients <= 2000 or not 1 <= args.steps <= 100_000 or args.sample_seconds < 1:
        raise SystemExit("accepted: 1 to 2000 clients, 1 to 100,000 steps, samples 1 s apart or more")
    return args


def main() -> None:
    args = arguments()
    server = os.environ.get("BENCH_DATABASE_SERVER", DEFAULT_SERVER)
    redis_url = os.environ.get("SOAK_REDIS_URL", "redis://127.0.0.1:6379/3")
    database_create(server, DATABASE)
    var_dir = Path("/tmp") / "gridace-soak-bench"
    env = bench_env(database_url=f"{server}/{DATABASE}", redis_url=redis_url, prefix=PREFIX, var_dir=var_dir)
    django_ready(env)
    from django.conf import settings
    from django.db import connections

    engineer, operator = bench_users()
    policy_deploy(engineer, var_dir)
    cookies = login_cookies(operator, args.clients)
    settings.DATABASES["default"].setdefault("OPTIONS", {})["application_name"] = BENCH_NAME
    connections.close_all()  # from now on this process's connections carry the name

    (ROOT / "runs").mkdir(exist_ok=True)
    csv_path = ROOT / "runs" / f"live_soak-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    port = free_port()
    logs = open(var_dir / "soak-processes.log", "w")
    monitor = Monitor(server, redis_url)
    stale_keys = monitor.channel_layer_clear()
    daphne, worker = servers_start(env, port, logs)
    try:
        port_wait(port, time.monotonic() + 60)
        processes = {"daphne": daphne, "live_feed": worker}
        figures = asyncio.run(_soak(args, port, processes, engineer, cookies, monitor, csv_path))
        figures["stale_channel_keys_cleared"] = stale_keys
    finally:
        processes_stop(worker, daphne)
        monitor.close()
        logs.close()
    print(json.dumps(figures, indent=2))


async def _soak(args, port, processes, engineer, cookies, monitor, csv_path) -> dict:
    soak = Soak(
        args,
        port=port,
        processes=processes,
        engineer=engineer,
        audience=Audience(cookies),
        monitor=monitor,
        csv_path=csv_path,
    )
    await soak.run()
    return report(soak)


if __name__ == "__main__":
    main()

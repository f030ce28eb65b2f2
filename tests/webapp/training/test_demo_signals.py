"""``make demo`` ends its children however it is ended: SIGTERM and SIGHUP like Ctrl-C, and even
SIGKILL (the kernel ends them); a demo started while another process holds its port names that
process and starts nothing."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(GRIDACE_VAR_DIR=str(tmp_path), GRIDACE_DEMO_PASSWORD="demo-password-123")
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _demo(tmp_path: Path, port: int) -> subprocess.Popen:
    command = [sys.executable, "manage.py", "demo", "--no-run", "--no-live", "--port", str(port)]
    return subprocess.Popen(
        command, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                status = (proc / "status").read_text()
            except OSError:
                continue
            if f"\nPPid:\t{pid}\n" in status:
                found.append(int(proc.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = next(
            line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:")
        )
    except (OSError, StopIteration):
        return False
    return "Z" not in state.split()[1]  # a zombie has ended; only its parent has not read its status


# SIGHUP and SIGINT take the same path as SIGTERM: checked on a small parent below, in seconds
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_the_demo_stops_its_children_however_it_is_ended(tmp_path, signum):
    port = _free_port()
    demo = _demo(tmp_path, port)
    output = []
    for line in demo.stdout:
        output.append(line)
        if "GridACE is running at" in line:
            break
    assert demo.poll() is None, "".join(output)
    children = _children(demo.pid)
    assert len(children) == 4, children  # web server, worker, watchdog, live feed
    demo.send_signal(signum)
    rest = demo.communicate(timeout=90)[0]
    if signum != signal.SIGKILL:
        assert demo.returncode == 0, "".join(output) + rest
        assert f"stopped by {signal.Signals(signum).name}" in rest
    deadline = time.monotonic() + 60
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in children if _alive(pid)], "children outlived the demo"
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))  # nothing listens there any more


def test_a_demo_names_the_process_holding_its_port(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        demo = _demo(tmp_path, port)
        output = demo.communicate(timeout=120)[0]
    assert demo.returncode != 0
    assert f"port {port} is held by pid {os.getpid()}: " in output, output
    assert f"kill {os.getpid()}" in output and "--port" in output
    assert not (tmp_path / "gridace.sqlite3").exists()  # stopped before starting anything


PARENT = """
import subprocess, sys, time
from pathlib import Path
from webapp import children

started = [children.start(["sh", "-c", "sleep 300 & sleep 300"], Path(".")) for _ in range(2)]
try:
    with children.stopping_on_signals():
        print("ready", flush=True)
        time.sleep(300)
except (children.Stopped, KeyboardInterrupt) as stopped:
    print("stopping:", repr(stopped), flush=True)
finally:
    children.stop(started, grace_seconds=5)
"""


def _group_alive(pgid: int) -> bool:
    return any(
        _alive(int(proc.name))
        for proc in Path("/proc").iterdir()
        if proc.name.isdigit() and _pgid(proc) == pgid
    )


def _pgid(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_children_and_their_own_children_stop_on_int_term_and_hup(signum):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert parent.stdout.readline().strip() == "ready"
    groups = _children(parent.pid)
    assert len(groups) == 2 and all(_group_alive(pgid) for pgid in groups)
    parent.send_signal(signum)
    output = parent.communicate(timeout=30)[0]
    assert parent.returncode == 0 and "stopping:" in output, output
    assert not [pgid for pgid in groups if _group_alive(pgid)]

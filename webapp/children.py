"""Child processes of a command (``manage.py demo``): started so that they end with it, however
it ends, and a clear word when an earlier run's processes still hold its port.

* :func:`start` runs each child in its own process group (Ctrl-C in a terminal reaches the
  command only, which then stops its children in order) and, on Linux, asks the kernel to send
  it SIGTERM if the command dies without stopping it (``kill -9``, a crash).
* :func:`stopping_on_signals` turns SIGTERM and SIGHUP (``kill``, a closed terminal, ``docker
  stop``, a process manager) into :class:`Stopped`, handled like Ctrl-C's KeyboardInterrupt; it
  also installs Python's SIGINT handler explicitly, since a command started in the background by
  a shell (``make demo &``) inherits SIGINT ignored and ``kill -INT`` would do nothing.
* :func:`stop` sends SIGTERM to each child's whole process group, then SIGKILL after a grace time.
* :func:`port_holder` names the process listening on a TCP port (read from ``/proc``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """The command was asked to stop by a signal (its number in ``signum``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start(command: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        command, cwd=cwd, env=os.environ.copy(), start_new_session=True, preexec_fn=_die_with_parent
    )


@contextlib.contextmanager
def stopping_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Stopped` in the main thread, and SIGINT
    raises KeyboardInterrupt even when the command inherited it ignored."""

    def handler(signum: int, frame: object) -> None:
        raise Stopped(signum)

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def stop(children: list[subprocess.Popen], grace_seconds: float = 30) -> None:
    """SIGTERM to every child's process group (the child and whatever it started), then wait;
    SIGKILL to the groups still alive after ``grace_seconds``. A second Ctrl-C or SIGTERM while
    stopping does not cut it short."""
    with _signals_ignored():
        _stop(children, grace_seconds)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (*STOP_SIGNALS, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _stop(children: list[subprocess.Popen], grace_seconds: float) -> None:
    for child in children:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM)
    for child in children:
        try:
            child.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        # the child's own children, if it left any behind in its group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``port`` (connections of an earlier server still closing,
    TIME_WAIT, do not count: servers bind with SO_REUSEADDR, and so does this probe)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                # local address is HEX_IP:HEX_PORT; state 0A is LISTEN
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add(fields[9])
    return inodes


def port_holder(port: int) -> str | None:
    """``"pid 1234: python -m daphne ..."`` for the process listening on ``port``, or None when
    nothing visible to this user listens there (or ``/proc`` is not available)."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    return f"pid {proc.name}: {cmdline.strip()}"
    return None

"""``webapp.children``: SIGINT stops a command even when it was started in the background, where
the shell hands it SIGINT ignored (``make demo &`` then ``kill -INT``)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND = """
import signal, time
from webapp import children

assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN, "started as a background job is"
try:
    with children.stopping_on_signals():
        print("ready", flush=True)
        time.sleep(300)
except KeyboardInterrupt:
    print("stopped by SIGINT", flush=True)
assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN, "restored after the block"
"""


def _ignore_sigint() -> None:  # runs in the child before exec, as a background shell does
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigint_stops_a_command_that_inherited_it_ignored():
    command = subprocess.Popen(
        [sys.executable, "-c", COMMAND],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_ignore_sigint,
    )
    try:
        assert command.stdout.readline().strip() == "ready"
        command.send_signal(signal.SIGINT)
        output = command.communicate(timeout=60)[0]
    finally:
        command.kill()
    assert command.returncode == 0 and "stopped by SIGINT" in output, output

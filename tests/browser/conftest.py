"""Browser tests: headless Chromium (Debian's /usr/bin/chromium driven by playwright) against a
real daphne server and a real db_worker, both separate processes on the test database.

Playwright's sync API runs an event loop in the test thread, where Django refuses ORM calls:
tests set data up before opening the browser and read the database through :func:`in_thread`.
Screenshots of every page go to ``artifacts/browser/<test>/``. Predicates for ``wait_for_function``
are functions (``"() => ..."``): playwright evaluates a bare expression with ``eval`` in the page,
which the site's Content-Security-Policy refuses.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from django.db import connection, connections

from tests.webapp.conftest import trainer_refinements  # noqa: F401 - a fixture for the reviewer's test

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("GRIDACE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
T = TypeVar("T")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
            if not Path(CHROMIUM).exists():
                item.add_marker(
                    pytest.mark.skip(reason=f"{CHROMIUM} is missing: apt-get install -y chromium")
                )


def in_thread(function: Callable[[], T]) -> T:
    """Run ORM code outside the browser's event loop (and close that thread's connection)."""

    def run() -> T:
        try:
            return function()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


def _database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def process_env(transactional_db: Any, tmp_path: Path, settings: Any) -> dict[str, str]:
    """Environment of the server and worker processes: this test's database and run folder. The
    test's own process writes there too (a policy it deploys is copied under it), so no test finds
    a file another test left under the same run id (each test database counts its runs from 1)."""
    settings.GRIDACE_RUNS_DIR = tmp_path / "runs"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": _database_url(),
        "GRIDACE_RUNS_DIR": str(tmp_path / "runs"),
        "PYTHONUNBUFFERED": "1",
    }
    env["GRIDACE_TRAINER"] = "ace_core.training.run"  # the real trainer, whatever the shell says
    if not env.get("REDIS_URL"):
        env["LIVE_RELAY_FROM_DB"] = "1"  # without Redis the page polls the database for new rows
    return env


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


DAPHNE_START_S = 240
"""how long daphne may take to listen: seconds when idle, over a minute on a loaded machine (a wait
until ready, never a fixed wait)"""


@pytest.fixture
def server(process_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    log = open(tmp_path / "daphne.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
        cwd=ROOT,
        env=process_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + DAPHNE_START_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            break
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited: {(tmp_path / 'daphne.log').read_text()[-2000:]}")
        time.sleep(0.2)
    else:
        raise RuntimeError(f"daphne did not start listening within {DAPHNE_START_S} s")
    yield f"http://127.0.0.1:{port}"
    _stop(process)
    log.close()


@pytest.fixture
def worker(process_env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen]:
    log = open(tmp_path / "worker.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--queue-name",
            "training",
            "--no-startup-delay",
            "--no-reload",
            "--interval",
            "0.2",
        ],
        cwd=ROOT,
        env=process_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield process
    _stop(process)
    log.close()


@pytest.fixture
def artifacts(request: pytest.FixtureRequest) -> Path:
    folder = ROOT / "artifacts" / "browser" / request.node.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@contextlib.contextmanager
def browser(tmp_path: Path) -> Iterator[Any]:
    """A page in a fresh headless Chromium profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            page = context.new_page()
            page.set_default_timeout(15_000)
            yield page
        finally:
            context.close()


def log_in(page: Any, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")


def pause_and_settle(page: Any, session_id: int) -> None:
    """Pause the live session from the page, and wait until its worker is idle and the page shows
    the last step: a step may be in flight when the pause lands, so the worker has to be heard
    from after the pause (its heartbeat reads the status before each step, and recording a step
    stamps it too) before the last recorded step is final."""
    from django.utils import timezone

    from webapp.operations.models import LiveSession

    page.click("#pause")
    page.wait_for_function("() => document.getElementById('session-status').textContent.startsWith('paused')")
    paused_at = timezone.now()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        session = in_thread(lambda: LiveSession.objects.get(pk=session_id))
        shown = int(page.get_attribute("#diagram", "data-step"))
        if session.heartbeat_at > paused_at and shown == session.current_step:
            return
        page.wait_for_timeout(200)
    raise AssertionError("the worker did not settle, or the page catch up, within 60 s of the pause")

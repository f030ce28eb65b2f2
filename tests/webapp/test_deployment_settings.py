"""Settings: the production module passes ``check --deploy``; the embedded default (SQLite file,
in-process channel layer) sets up and runs a run end to end, as ``make demo`` does."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, env: dict[str, str], timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(extra)
    return env


def test_production_settings_pass_the_deploy_check():
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="webapp.settings_production",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="gridace.example.org",
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres",
        REDIS_URL="redis://127.0.0.1:6379/0",
    )
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    shown = _manage(
        "shell",
        "-c",
        "from django.conf import settings; from django.test import Client;"
        # (the home page's redirect to the login page: no static files to look up without collectstatic)
        "response = Client(HTTP_HOST='gridace.example.org').get('/', secure=True);"
        "print(settings.SESSION_COOKIE_AGE, settings.AXES_FAILURE_LIMIT);"
        "print(response['Content-Security-Policy'])",
        env={**env, "GRIDACE_SESSION_HOURS": "8"},
    )
    assert shown.returncode == 0, shown.stderr
    age, policy = shown.stdout.strip().splitlines()[-2:]
    assert age == "28800 5"  # a shift, not two weeks; five failed log-ins lock
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe" not in policy


def test_production_settings_refuse_the_development_key():
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="webapp.settings_production", ALLOWED_HOSTS="x", DATABASE_URL="sqlite:///x"
    )
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set to a random string of 50+ characters" in result.stderr


def test_the_demo_sets_up_the_embedded_default_and_starts_a_run(tmp_path, tiny_llm_dir):
    """``make demo``'s set-up on the embedded default: SQLite file, in-process channel layer, and
    the real trainer with a local LLM (the tiny test model in place of the offline default, whose
    first load converts a GGUF for a minute)."""
    env = _clean_env(GRIDACE_VAR_DIR=str(tmp_path), GRIDACE_DEMO_PASSWORD="demo-password-123")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _manage(
        "demo",
        "--check",
        "--port",
        str(port),
        "--set",
        "steps=200",
        "--set",
        f"llm_model={tiny_llm_dir}",
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "demo users operator, engineer, reviewer" in result.stdout
    assert f"GridACE is running at http://127.0.0.1:{port}/" in result.stdout
    assert "check passed" in result.stdout
    assert (tmp_path / "gridace.sqlite3").is_file()
    status = _manage(
        "shell",
        "-c",
        "from django.conf import settings; from webapp.training.models import TrainingRun;"
        "run = TrainingRun.objects.get(label='demo');"
        "print(run.env, run.config['llm'], settings.GRIDACE_TRAINER, settings.CHANNEL_LAYERS['default']['BACKEND'], settings.LIVE_RELAY_FROM_DB)",
        env=env,
    )
    assert status.stdout.split()[-5:] == [
        "rte_case14_realistic",
        "local",
        "ace_core.training.run",
        "channels.layers.InMemoryChannelLayer",
        "True",
    ]

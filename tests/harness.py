"""Helpers for tests that drive real processes and servers: wait for a condition, run the CLI,
read what reached a chat hook. One copy for every test layer (integration, e2e)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wait_for(check, timeout: float = 30, what: str = "the condition", interval: float = 0.2):
    """Poll `check` until it returns something true, and return that; fail naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def run_cli(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m monitor ARGS` from the repository, with `env` over this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def cli_json(*args: str, env: dict):
    """`python -m monitor ARGS --json` with exactly `env`, parsed; fails with its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "monitor", *args, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"monitor {' '.join(args)} --json failed: {done.stderr.strip()}"
    return json.loads(done.stdout)


def chat_hook(httpserver) -> str:
    """A json:// channel URL that delivers to `httpserver` (pytest-httpserver), answering 200."""
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    return f"json://{httpserver.host}:{httpserver.port}/hook"


def chat_messages(httpserver) -> list[dict]:
    """The JSON bodies that reached the hook and were accepted, oldest first."""
    return [json.loads(request.get_data()) for request, response in httpserver.log if response.status_code == 200]

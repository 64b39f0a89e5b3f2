"""Helpers for tests that drive real processes and servers: wait for a condition, run the CLI,
read what reached a chat hook, run a child process that is always stopped, ask whether a URL
answers, start Chromium. One copy for every test layer (integration, e2e)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"  # Debian's, driven by Playwright: p.chromium.launch(executable_path=CHROMIUM, args=...)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# A log line in the text format (monitor/logs.py): UTC time with the date, level, logger, message.
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) +([\w.]+): (.*)$")


def log_messages(output: str, level: str | None = None) -> list[str]:
    """The messages of the text-format log lines in `output` (of `level`, if given); other lines are skipped."""
    found = [m for m in map(LOG_LINE.match, output.splitlines()) if m]
    return [m.group(3) for m in found if level is None or m.group(1) == level]


def seconds_logging(output: str) -> float:
    """Seconds from the first to the last text-format log line in `output` (a run's own pace, not its start-up)."""
    stamps = [datetime.fromisoformat(line[:23]) for line in output.splitlines() if LOG_LINE.match(line)]
    return (stamps[-1] - stamps[0]).total_seconds()


def log_records(name: str) -> list[str]:
    """The messages logger `name` (e.g. lagmon.alerts) logs from now on at INFO and above, in this process,
    from any thread: a list that grows (its handler stays for the session; it only appends)."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(name)
    logger.addHandler(Keep(logging.INFO))
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    return lines


def error_line(stderr: str) -> str:
    """The message of a command that stopped with one error: its stderr is exactly one ERROR log line."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one error line, got: {stderr!r}"
    match = LOG_LINE.match(lines[0])
    assert match and match.group(1) == "ERROR", f"not an ERROR log line: {lines[0]!r}"
    return match.group(3)


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


@contextmanager
def running(cmd: list[str], env: dict, log: Path, stop=signal.SIGINT):
    """A child process (own process group) that is always stopped: `stop`, then SIGKILL of its group."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        stop_process(proc, stop)


def stop_process(proc: subprocess.Popen, sig=signal.SIGINT) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # anything it left behind in its own group
    proc.wait()


def http_ok(url: str) -> bool:
    """`url` answers 200 now."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False

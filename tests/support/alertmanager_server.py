"""A throwaway Alertmanager for tests: Debian's prometheus-alertmanager on a free loopback port, clustering
off, its storage in a temporary folder, routing every alert to a webhook (a pytest-httpserver) so what
it notifies can be seen. Read back through its v2 API.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("prometheus-alertmanager", "alertmanager")

CONFIG = """
route:
  receiver: hook
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: {hook}
        send_resolved: true
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary() -> str:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("Alertmanager not found: run `make setup` (installs Debian's prometheus-alertmanager)")


@dataclass
class Alertmanager:
    """One Alertmanager process; `start()` again after `stop()` keeps its port and storage (an outage)."""

    hook: str  # the webhook every alert is routed to
    config: str = CONFIG  # with {hook} where the webhook goes
    port: int = field(default_factory=free_port)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="lagmon-am-")))
    process: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def channel(self) -> str:
        """The lagmon channel URL that reaches it."""
        return f"alertmanager://127.0.0.1:{self.port}"

    def start(self) -> Alertmanager:
        config = self.folder / "alertmanager.yml"
        config.write_text(self.config.replace("{hook}", json.dumps(self.hook)))
        log = open(self.folder / "alertmanager.log", "ab")  # noqa: SIM115 (the process keeps it)
        self.process = subprocess.Popen(
            [
                binary(),
                f"--config.file={config}",
                f"--storage.path={self.folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Alertmanager exited: {self.log()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"Alertmanager not ready after 30 s: {self.log()[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def log(self) -> str:
        path = self.folder / "alertmanager.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def get(self, path: str):
        with urllib.request.urlopen(f"{self.base}{path}", timeout=5) as response:
            return json.loads(response.read())

    def alerts(self, **labels: str) -> list[dict]:
        """The alerts it holds (active, silenced, inhibited) whose labels include `labels`."""
        return [a for a in self.get("/api/v2/alerts") if labels.items() <= a["labels"].items()]

    def post(self, alerts: list[dict]) -> None:
        """Alerts as Prometheus or lagmon post them (v2 API)."""
        request = urllib.request.Request(
            f"{self.base}/api/v2/alerts", json.dumps(alerts).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=5):
            pass

    def groups(self) -> list[dict]:
        return self.get("/api/v2/alerts/groups")

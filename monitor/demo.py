"""`make demo`: a local Kafka, the demo workload, the collector (with /metrics and alerts
to a receiver that prints them here) and the dashboard.

A tiny supervisor: each part runs as a child process; if one dies the demo says
which and stops; Ctrl-C (or SIGTERM) stops every child and the cluster, leaving
nothing running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from monitor import devcluster
from monitor.config import StoreSettings
from monitor.logs import get_logger
from monitor.stopping import stop_on_signals

DASHBOARD_PORT = 8501
METRICS_PORT = 9308

log = get_logger("demo")


def demo_processes(
    bootstrap: str, dashboard_port: int = DASHBOARD_PORT, metrics_port: int = METRICS_PORT
) -> dict[str, list[str]]:
    """The demo's parts, as commands (names shown to the user)."""
    py = [sys.executable, "-m", "monitor"]
    return {
        "workload (sim mixed)": [*py, "sim", "mixed", "--bootstrap", bootstrap],
        "collector": [*py, "collect", "--interval", "5s", "--metrics-port", str(metrics_port)],
        "dashboard": [
            *py,
            "dashboard",
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(dashboard_port),
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
        ],
        "analysis (Spark, every minute)": [*py, "analyze", "--every", "1m"],
    }


def free_port(preferred: int = DASHBOARD_PORT) -> int:
    """`preferred` if nothing listens there, else any free loopback port."""
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise OSError("no free port on 127.0.0.1")


def demo_environment(bootstrap: str, receiver_port: int, dashboard_port: int) -> dict[str, str]:
    """The demo watches its own cluster and alerts to its own receiver; the database is
    lagmon's default unless the user set one."""
    return {
        "LAGMON_CLUSTER_NAME": "demo",
        "LAGMON_CHANNELS": f"demo=json://127.0.0.1:{receiver_port}/",
        "LAGMON_DASHBOARD_URL": f"http://127.0.0.1:{dashboard_port}/",
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": bootstrap,
    }


class _PrintAlerts(BaseHTTPRequestHandler):
    """Stands in for Slack: prints each alert message the collector sends (Apprise's JSON)."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            message = json.loads(body)
            text = f"{message.get('title', '')}\n{message.get('message', '')}".strip()
        except ValueError:
            text = body.decode(errors="replace")
        print("\n".join(["demo: alert received " + "-" * 40, text, "-" * 61]), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):  # no access log lines in the demo's terminal
        pass


def start_alert_receiver() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PrintAlerts)
    threading.Thread(target=server.serve_forever, name="alert-receiver", daemon=True).start()
    return server


def run(cluster_dir: Path = devcluster.DEFAULT_DIR) -> int:
    stop = threading.Event()
    stop_on_signals(stop)
    log.info("starting a local Kafka ...")
    cluster = devcluster.start(cluster_dir)
    children: dict[str, subprocess.Popen] = {}
    receiver = start_alert_receiver()
    try:
        if stop.is_set():  # Ctrl-C while Kafka was starting
            return 0
        port, metrics_port = free_port(), free_port(METRICS_PORT)
        env = demo_environment(cluster.bootstrap, receiver.server_address[1], port)
        for name, cmd in demo_processes(cluster.bootstrap, port, metrics_port).items():
            children[name] = subprocess.Popen(cmd, start_new_session=True, env=env)
        log.info("Kafka at %s (data in %s)", cluster.bootstrap, cluster.dir)
        log.info(
            "Prometheus metrics at http://127.0.0.1:%s/metrics; alert messages are printed here as they arrive",
            metrics_port,
        )
        log.info(
            "the collector writes to %s; in another terminal try: .venv/bin/python -m monitor groups",
            StoreSettings.from_env(env).database_url,
        )
        log.info("dashboard at http://127.0.0.1:%s/ (the first samples arrive within seconds)", port)
        log.info("running %s; Ctrl-C stops everything", ", ".join(children))
        while not stop.wait(1):
            for name, proc in children.items():
                if proc.poll() is not None:
                    log.error("%s exited with code %s; stopping", name, proc.returncode)
                    return 1
        log.info("stopping ...")
        return 0
    finally:
        _stop_all(children.values())
        receiver.shutdown()
        devcluster.stop(cluster_dir)
        log.info("stopped; nothing left running")


def _stop_all(procs) -> None:
    procs = [p for p in procs if p.poll() is None]
    for p in procs:
        p.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 15
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

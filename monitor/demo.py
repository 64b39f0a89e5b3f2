"""`make demo`: a local Kafka, the demo workload and (as they land) lagmon's own processes.

A tiny supervisor: each part runs as a child process; if one dies the demo says
which and stops; Ctrl-C (or SIGTERM) stops every child and the cluster, leaving
nothing running.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from monitor import devcluster


def demo_processes(bootstrap: str) -> dict[str, list[str]]:
    """The demo's parts, as commands (names shown to the user)."""
    py = [sys.executable, "-m", "monitor"]
    return {
        "workload (sim mixed)": [*py, "sim", "mixed", "--bootstrap", bootstrap],
        "collector": [*py, "collect", "--interval", "5s"],
        "analysis (Spark, every minute)": [*py, "analyze", "--every", "1m"],
    }


def demo_environment(bootstrap: str) -> dict[str, str]:
    """The demo watches its own cluster; the database is lagmon's default unless the user set one."""
    return {"LAGMON_CLUSTER_NAME": "demo", **os.environ, "LAGMON_BOOTSTRAP_SERVERS": bootstrap}


def run(cluster_dir: Path = devcluster.DEFAULT_DIR) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    print("demo: starting a local Kafka ...", flush=True)
    cluster = devcluster.start(cluster_dir)
    children: dict[str, subprocess.Popen] = {}
    try:
        env = demo_environment(cluster.bootstrap)
        for name, cmd in demo_processes(cluster.bootstrap).items():
            children[name] = subprocess.Popen(cmd, start_new_session=True, env=env)
        print(f"demo: Kafka at {cluster.bootstrap} (data in {cluster.dir})")
        print("demo: the collector writes to", env.get("LAGMON_DATABASE_URL", "sqlite:///lagmon.db"),
              "; in another terminal try: .venv/bin/python -m monitor groups")
        print(f"demo: running {', '.join(children)}; Ctrl-C stops everything", flush=True)
        while True:
            for name, proc in children.items():
                if proc.poll() is not None:
                    print(f"demo: {name} exited with code {proc.returncode}; stopping", file=sys.stderr)
                    return 1
            time.sleep(1)
    except KeyboardInterrupt:
        print("\ndemo: stopping ...", flush=True)
        return 0
    finally:
        _stop_all(children.values())
        devcluster.stop(cluster_dir)
        print("demo: stopped; nothing left running")


def _interrupt(signum, frame):
    """SIGTERM stops the demo the same way Ctrl-C does."""
    raise KeyboardInterrupt


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

"""A Spark standalone cluster for tests and benchmarks: a master and one worker from the pyspark package.

The venv's own `spark-class` starts them (loopback only), as docs/production.md
"Scaling out" does; each child runs in a process group of its own and is always ended.
bench_spark.py runs on it with --master standalone; tests/e2e/test_scale_out.py imports it from
here (pytest.ini puts bench/ on their path).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from monitor.demo import free_port

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the venv's spark-class and spark-submit, from the pyspark package


@contextmanager
def started(cmd: list, env: dict, log: Path):
    """A child in its own process group, always ended: SIGTERM, then SIGKILL of the group."""
    with open(log, "w") as out:
        child = subprocess.Popen(
            [str(c) for c in cmd], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield child
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()


def read_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.load(answer)


@contextmanager
def spark_cluster(tmp_path: Path, cores: int = 1, memory: str = "1g"):
    """A standalone master and one worker on loopback; yields (master URL, master's JSON status URL)."""
    port, master_ui, worker_ui = free_port(0), free_port(0), free_port(0)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    master = f"spark://127.0.0.1:{port}"
    with (
        started(
            [
                BIN / "spark-class",
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                port,
                "--webui-port",
                master_ui,
            ],
            env,
            tmp_path / "master.log",
        ) as m,
        started(
            [
                BIN / "spark-class",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--webui-port",
                worker_ui,
                "--cores",
                cores,
                "--memory",
                memory,
                "--work-dir",
                tmp_path / "work",
                master,
            ],
            env,
            tmp_path / "worker.log",
        ) as w,
    ):
        status = f"http://127.0.0.1:{master_ui}/json"
        deadline = time.monotonic() + 90
        while True:
            try:
                if read_json(status).get("aliveworkers") == 1:
                    break
            except OSError:
                pass
            logs = "".join((tmp_path / f"{n}.log").read_text()[-2000:] for n in ("master", "worker"))
            assert m.poll() is None and w.poll() is None and time.monotonic() < deadline, logs
            time.sleep(0.5)
        yield master, status

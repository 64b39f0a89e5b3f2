"""The collector's supervisor: when a worker is started again, and what it is told (monitor/supervisor.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest
from harness import wait_for

from monitor.__main__ import build_parser
from monitor.cli.collect import collect_arguments
from monitor.supervisor import (
    FIRST_DELAY_S,
    HEALTHY_RUN_S,
    MAX_DELAY_S,
    compute_restart_delay,
    describe_exit,
    supervise,
    worker_command,
)


@pytest.mark.parametrize(
    ("returncode", "ran_s", "previous", "delay"),
    [
        (-signal.SIGSEGV, 5.0, None, FIRST_DELAY_S),  # the first crash: again at once, nearly
        (-signal.SIGSEGV, 5.0, 4.0, 8.0),  # crashing again soon: twice the wait
        (-signal.SIGSEGV, 5.0, MAX_DELAY_S, MAX_DELAY_S),  # never more than a minute
        (-signal.SIGSEGV, HEALTHY_RUN_S, 32.0, FIRST_DELAY_S),  # after a long healthy run: from the start
        (1, 5.0, None, FIRST_DELAY_S),  # an unexpected error (a bug, a database down at start) is retried too
        (75, 5.0, None, FIRST_DELAY_S),  # EX_TEMPFAIL: the store is away for now
        (2, 5.0, None, None),  # a bad setting or a refused store: a person must act
        (0, 5.0, None, None),  # stopped cleanly (someone signalled the worker itself)
    ],
)
def test_restart_delay(returncode, ran_s, previous, delay):
    assert compute_restart_delay(returncode, ran_s, previous) == delay


@pytest.mark.parametrize(
    ("returncode", "text"),
    [
        (-signal.SIGSEGV, "died of SIGSEGV (a crash in native code)"),
        (-signal.SIGABRT, "died of SIGABRT (a crash in native code)"),
        (-signal.SIGKILL, "died of SIGKILL"),
        (1, "exited with code 1"),
    ],
)
def test_how_a_worker_ended_is_said_plainly(returncode, text):
    assert describe_exit(returncode) == text


def test_the_worker_gets_the_options_of_collect_and_the_history_of_its_predecessors():
    args = build_parser().parse_args(["collect", "--interval", "2s", "--metrics-port", "9308", "--shard", "2/3"])
    forwarded = collect_arguments(args)
    assert forwarded == ["--interval", "2s", "--metrics-port", "9308", "--shard", "2/3"]
    command = worker_command(forwarded, 3, "died of SIGSEGV")
    assert command[:4] == [sys.executable, "-m", "monitor", "collect"]
    again = build_parser().parse_args(command[3:])
    assert (again.interval, again.metrics_port, again.shard, again.worker) == ("2s", "9308", "2/3", os.getpid())
    assert (again.worker_restarts, again.worker_last_exit) == (3, "died of SIGSEGV")


def test_a_worker_that_crashes_is_started_again_and_a_stop_reaches_the_new_one(tmp_path):
    """Real processes: the first worker dies of a real SIGSEGV, the second runs until the stop."""
    started = tmp_path / "started"
    script = (
        "import os, signal, sys, time\n"
        f"log = open({str(started)!r}, 'a'); log.write(' '.join(sys.argv[1:]) + '\\n'); log.close()\n"
        "if '--worker-restarts' not in sys.argv: os.kill(os.getpid(), signal.SIGSEGV)\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
        "time.sleep(60)\n"
    )

    def start(command):
        return subprocess.Popen([sys.executable, "-c", script, *command[4:]])

    stop = threading.Event()
    result = {}
    thread = threading.Thread(target=lambda: result.update(code=supervise(["--interval", "1s"], stop, start)))
    thread.start()
    try:
        wait_for(lambda: started.exists() and len(started.read_text().splitlines()) == 2, 20, "a second worker")
        lines = started.read_text().splitlines()
    finally:
        stop.set()
        thread.join(30)
    me = os.getpid()
    assert lines == [
        f"--interval 1s --worker {me}",
        f"--interval 1s --worker {me} --worker-restarts 1 --worker-last-exit died of SIGSEGV (a crash in native code)",
    ]
    assert result == {"code": 0}


def test_the_supervisor_holds_no_kafka_client_its_worker_does(tmp_path):
    """A crash in librdkafka can only take the worker: the supervisor never loads it. The worker runs with
    glibc's malloc settings for a long-running process."""
    import os
    from pathlib import Path

    import psutil

    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": "127.0.0.1:9",  # nothing listens: the worker retries, which is all we need
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
    }
    root = Path(__file__).resolve().parents[2]
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "monitor", "collect"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def loaded(pid: int) -> bool:
        return "librdkafka" in Path(f"/proc/{pid}/maps").read_text()

    try:
        worker = wait_for(lambda: psutil.Process(supervisor.pid).children(), 20, "the worker")[0]
        wait_for(lambda: loaded(worker.pid), 30, "the worker to load the Kafka client")
        assert not loaded(supervisor.pid)
        environ = Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0")
        assert b"MALLOC_ARENA_MAX=2" in environ and b"MALLOC_MMAP_THRESHOLD_=65536" in environ
    finally:
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(30) == 0


def test_a_worker_whose_supervisor_is_already_gone_stops_at_once(tmp_path):
    """A supervisor killed while its worker was still starting: the worker must not run on, unsupervised."""
    import os

    env = {
        **os.environ,
        "LAGMON_BOOTSTRAP_SERVERS": "127.0.0.1:9",
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
    }
    not_my_parent = 1
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "collect", "--worker", str(not_my_parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "the collector's supervisor is gone: stopping" in done.stderr

"""Kafka Streams instances for the sim: each a JVM running the demo app, owned by the runner.

The runner's own process starts them (not a spawned Python child: nothing would be
left for it to do), so they need their own tie to it: PR_SET_PDEATHSIG, set between
fork and exec, SIGKILLs an instance whose sim died. SIGKILL rather than SIGTERM: the
app's shutdown hook closes without a timeout, and with the sim gone nobody would
wait for it. A reader thread turns the app's "state A -> B" lines into truth events.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from monitor.sim.specs import StreamsSpec, parse_streams_state, parse_streams_tasks, streams_command, streams_properties
from monitor.sim.truth import TruthWriter

PR_SET_PDEATHSIG = 1
OUTPUT_LINES_KEPT = 40


class StreamsInstance:
    """One running instance: its process, whether it has been RUNNING, how many active tasks it holds
    (RUNNING alone is also reached with the empty assignment held before the coordinator's first),
    and its last output lines."""

    def __init__(self, spec: StreamsSpec, truth: TruthWriter):
        self.spec, self.truth = spec, truth
        self.dir = Path(tempfile.mkdtemp(prefix=f"{spec.client_id}-"))
        self.running_once = False
        self.active_tasks = 0
        self.last_state_at = 0.0  # epoch s of the last state or task change
        self.stopping = False  # we asked it to stop (or killed it): its exit is no failure
        self.output: list[str] = []
        props = self.dir / "app.properties"
        state_dir = self.dir / "state"
        props.write_text("".join(f"{k}={v}\n" for k, v in streams_properties(spec, state_dir).items()))
        java = shutil.which("java") or "java"
        self.process = subprocess.Popen(
            streams_command(spec, props, java),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )
        self.write("join", protocol="streams", instance_id=None, pid=self.process.pid)
        self.reader = threading.Thread(target=self.read_output, name=f"{spec.client_id}-output", daemon=True)
        self.reader.start()

    @property
    def client_id(self) -> str:
        return self.spec.client_id

    def alive(self) -> bool:
        return self.process.poll() is None

    def read_output(self) -> None:
        for line in self.process.stdout:
            line = line.rstrip("\n")
            if self.spec.verbose:
                print(f"{self.client_id}: {line}", flush=True)
            self.output = [*self.output[-OUTPUT_LINES_KEPT + 1 :], line]
            change = parse_streams_state(line)
            if change:
                self.write("state", before=change[0], after=change[1])
                self.last_state_at = time.time()
                self.running_once |= change[1] == "RUNNING"
            tasks = parse_streams_tasks(line)
            if tasks is not None:
                self.active_tasks = tasks
                self.last_state_at = time.time()

    def terminate(self) -> None:
        """SIGTERM: the app's shutdown hook closes Kafka Streams, which leaves the group."""
        self.stopping = True
        if self.alive():
            self.process.terminate()

    def kill(self) -> None:
        """SIGKILL, as if its machine died: the group notices only after the session timeout."""
        self.stopping = True
        if self.alive():
            self.write("crash", pid=self.process.pid)
            self.process.kill()
            self.process.wait(5)

    def finish(self, timeout_s: float) -> bool:
        """Wait for the exit; write `leave` if it exited on its own terms. False if it is still alive."""
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        self.reader.join(2)
        if code != -signal.SIGKILL:
            self.write("leave", member_id=None, instance_id=None, left_group=True, exit_code=code)
        shutil.rmtree(self.dir, ignore_errors=True)
        return True

    def write(self, event: str, **fields) -> None:
        self.truth.write(event, group=self.spec.group, client_id=self.client_id, **fields)


def _die_with_parent(parent: int):
    """The preexec_fn: SIGKILL this child when `parent` dies (exits at once if it already has)."""

    def preexec() -> None:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:
            os._exit(1)

    return preexec

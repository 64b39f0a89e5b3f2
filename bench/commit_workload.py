"""bench_collector's case (b) load: every group commits new offsets once a period (1 s), no member ever joins.

`sim many-groups` commits with AdminClient.alter_consumer_group_offsets, one call
per group. Each call costs about a millisecond of CPU (a coordinator lookup, an
admin operation and a future): on this 2-core machine one process reached ~800
commits/s and five processes ~2,200/s for 5,000 groups, while taking the cores from
the collector being measured. This sends the request that call sends, OffsetCommit
v2 with generation -1 and no member id (a "simple" group's commit), straight to
the broker, pipelined on a few connections: ~40 us of CPU per commit, and the
broker, not the client, sets the pace. Single-node clusters only: the one broker
is every group's coordinator.
"""

from __future__ import annotations

import multiprocessing
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor

from kafka_wire import arr, i16, i32, i64, s16

RECORDS_PER_TICK = 10  # records produced to every partition each period
CONNECTIONS = 8  # the broker handles one request at a time per connection
PIPELINE = 200  # requests written before their responses are read (bounded, so neither side's buffers fill)
OFFSET_COMMIT, VERSION = 8, 2


def offset_commit_request(correlation: int, group: str, topic: str, offsets: list[tuple[int, int]]) -> bytes:
    """A size-prefixed OffsetCommit v2: generation -1, member "", default retention, no metadata."""
    header = i16(OFFSET_COMMIT) + i16(VERSION) + i32(correlation) + s16("lagmon-bench")
    partitions = [i32(p) + i64(offset) + s16(None) for p, offset in offsets]
    body = header + s16(group) + i32(-1) + s16("") + i64(-1) + arr([s16(topic) + arr(partitions)])
    return i32(len(body)) + body


class CommitConnection:
    """One connection to the broker; commit() writes PIPELINE requests at a time, then reads their responses."""

    def __init__(self, address: str):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.buffer = bytearray()
        self.correlation = 0

    def commit(self, topic: str, commits: list[tuple[str, list[tuple[int, int]]]]) -> int:
        """Commit each (group, [(partition, offset)]); the number of groups with an error."""
        failed = 0
        for start in range(0, len(commits), PIPELINE):
            chunk = commits[start : start + PIPELINE]
            requests = []
            for group, offsets in chunk:
                self.correlation += 1
                requests.append(offset_commit_request(self.correlation, group, topic, offsets))
            self.sock.sendall(b"".join(requests))
            failed += sum(1 for _ in chunk if self._partition_errors(self._response()))
        return failed

    def _response(self) -> bytes:
        size = struct.unpack(">i", self._read(4))[0]
        return self._read(size)

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self.buffer += chunk
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    @staticmethod
    def _partition_errors(response: bytes) -> int:
        """Partitions with a non-zero error code in an OffsetCommit v2 response."""
        errors, pos = 0, 4  # after the correlation id
        (topics,) = struct.unpack_from(">i", response, pos)
        pos += 4
        for _ in range(topics):
            (name_length,) = struct.unpack_from(">h", response, pos)
            (partitions,) = struct.unpack_from(">i", response, pos + 2 + name_length)
            pos += 2 + name_length + 4
            for _ in range(partitions):
                errors += struct.unpack_from(">h", response, pos + 4)[0] != 0
                pos += 6
        return errors

    def close(self) -> None:
        self.sock.close()


def run(
    bootstrap: str, topic: str, partitions: int, groups: list[str], period_s: float, stop, commits, failures, late_ticks
) -> None:
    """The workload process: each period, RECORDS_PER_TICK records to every partition, then a commit for every
    group on every partition, offsets trailing the log end by 0..RECORDS_PER_TICK (lags differ, every commit is new).
    """
    from confluent_kafka import Producer

    if "," in bootstrap:
        raise ValueError("the commit workload needs a single-node cluster (one coordinator)")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    connections = [CommitConnection(bootstrap) for _ in range(CONNECTIONS)]
    shares = [list(enumerate(groups))[c::CONNECTIONS] for c in range(CONNECTIONS)]
    base = 5  # what `sim many-groups` produced to each partition
    try:
        with ThreadPoolExecutor(CONNECTIONS) as pool:
            tick, next_at = 0, time.monotonic()
            while not stop.is_set():
                tick += 1
                for p in range(partitions):
                    for _ in range(RECORDS_PER_TICK):
                        producer.produce(topic, b"x", partition=p)
                producer.flush(1)
                end = base + RECORDS_PER_TICK * tick
                batches = [
                    [
                        (group, [(p, end - (i + p) % (RECORDS_PER_TICK + 1)) for p in range(partitions)])
                        for i, group in share
                    ]
                    for share in shares
                ]
                done = list(pool.map(lambda c, b: (len(b), c.commit(topic, b)), connections, batches))
                with commits.get_lock():
                    commits.value += sum(n - bad for n, bad in done)
                with failures.get_lock():
                    failures.value += sum(bad for _, bad in done)
                next_at += period_s
                if time.monotonic() > next_at:
                    with late_ticks.get_lock():
                        late_ticks.value += 1
                stop.wait(max(0.0, next_at - time.monotonic()))
                next_at = max(next_at, time.monotonic())
    except KeyboardInterrupt:
        pass
    finally:
        for connection in connections:
            connection.close()


class Workload:
    """The workload in its own process (its CPU is not the collector's), with shared counters to read its pace."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, groups: list[str], period_s: float = 1.0):
        ctx = multiprocessing.get_context("spawn")
        self.groups, self.period_s = len(groups), period_s
        self.stop = ctx.Event()
        self.commits, self.failures, self.late_ticks = (ctx.Value("q", 0) for _ in range(3))
        self.proc = ctx.Process(
            target=run,
            name="commit-workload",
            daemon=True,
            args=(
                bootstrap,
                topic,
                partitions,
                groups,
                period_s,
                self.stop,
                self.commits,
                self.failures,
                self.late_ticks,
            ),
        )
        self.proc.start()

    def has_done(self, commits: int) -> bool:
        """At least `commits` commits so far; raises if the workload process died."""
        if self.proc.exitcode is not None:
            raise RuntimeError(f"the commit workload exited with {self.proc.exitcode} (see its error above)")
        return self.commits.value >= commits

    def counts(self) -> tuple[float, int, int, int]:
        return time.monotonic(), self.commits.value, self.failures.value, self.late_ticks.value

    def rate_since(self, before: tuple[float, int, int, int]) -> dict:
        """What it achieved since `before` (the measured window): an honest load generator says when it lagged."""
        now = self.counts()
        return {
            "commits_per_s": (now[1] - before[1]) / (now[0] - before[0]),
            "needed_per_s": self.groups / self.period_s,
            "failures": now[2] - before[2],
            "late_ticks": now[3] - before[3],
        }

    def close(self) -> None:
        self.stop.set()
        self.proc.join(20)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()

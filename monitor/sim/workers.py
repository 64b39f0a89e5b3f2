"""The child processes of a simulation: one producer, and one process per group member.

Each runs in its own process (multiprocessing "spawn") so a scenario can SIGKILL a
member as if its machine died, and so the work spreads over the cores. Children
stop cleanly on SIGTERM (consumers close, which leaves the group unless static),
ignore SIGINT (the parent owns Ctrl-C), and die with the parent (PR_SET_PDEATHSIG)
so a run never leaves processes behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys
import time
import traceback

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from monitor.sim.specs import MemberSpec, ProducerSpec, Shared, client_logging, consumer_config
from monitor.sim.truth import TruthWriter

COMMIT_INTERVAL_S = 1.0
PRODUCED_INTERVAL_S = 1.0
POLL_S = 0.1
# How long a leaving member serves its revocation before closing regardless.
LEAVE_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1


def generation_of(consumer: Consumer) -> int | None:
    """The classic generation / KIP-848 member epoch, from the serialized group metadata.

    librdkafka serializes it as b"CGMDv2:" + native int32 generation + group + member id.
    The Python API exposes no accessor, so this is best effort: None if the layout differs.
    """
    try:
        raw = consumer.consumer_group_metadata()
    except Exception:
        return None
    if isinstance(raw, bytes) and raw.startswith(b"CGMDv2:") and len(raw) >= 11:
        return struct.unpack("=i", raw[7:11])[0]
    return None


def partition_list(partitions) -> list[list]:
    return sorted([tp.topic, tp.partition] for tp in partitions)


class StopFlag:
    """Set by SIGTERM (or the parent's death); checked by the worker loops."""

    def __init__(self):
        self.stop = False
        signal.signal(signal.SIGTERM, self._set)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _die_with_parent()

    def _set(self, *_):
        self.stop = True

    def sleep(self, seconds: float) -> bool:
        """Sleep unless asked to stop; True if the sleep ran to the end."""
        deadline = time.monotonic() + seconds
        while not self.stop and time.monotonic() < deadline:
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        return not self.stop


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM us when the parent dies, so no member outlives a killed sim."""
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return  # not Linux: the parent's own cleanup has to do
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


# ---------------------------------------------------------------- producer


def run_producer(spec: ProducerSpec) -> None:
    """Child entry: produce round-robin over partitions at each topic's rate until SIGTERM."""
    flag = StopFlag()
    truth = TruthWriter(spec.truth_path)
    try:
        _produce_until_stopped(spec, flag, truth)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    finally:
        truth.close()


def _produce_until_stopped(spec: ProducerSpec, flag: StopFlag, truth: TruthWriter) -> None:
    producer = Producer(
        {"bootstrap.servers": spec.bootstrap, "linger.ms": 5, **client_logging(spec.verbose, "producer")}
    )
    counts: dict[tuple[str, int], int] = {}
    ends: dict[tuple[str, int], int] = {}
    created: dict[str, list[int]] = {}  # topic -> [earliest, latest] create time delivered

    def delivered(err, msg):
        if err is None:
            key = (msg.topic(), msg.partition())
            counts[key] = counts.get(key, 0) + 1
            ends[key] = msg.offset() + 1
            at = msg.timestamp()[1]
            span = created.setdefault(msg.topic(), [at, at])
            span[0], span[1] = min(span[0], at), max(span[1], at)

    sent = dict.fromkeys(spec.rates, 0)
    started = last_report = time.monotonic()
    while not flag.stop:
        elapsed = time.monotonic() - started
        for topic, rate in spec.rates.items():
            due = int(rate * elapsed) - sent[topic]
            for _ in range(due):
                partition = sent[topic] % spec.partitions[topic]
                try:
                    producer.produce(topic, b"sim %d" % sent[topic], partition=partition, on_delivery=delivered)
                except BufferError:
                    producer.poll(0.1)
                    break
                sent[topic] += 1
        producer.poll(0.05)
        if time.monotonic() - last_report >= PRODUCED_INTERVAL_S:
            _report_produced(truth, counts, ends, created)
            last_report = time.monotonic()
    producer.flush(5)
    _report_produced(truth, counts, ends, created)


def _report_produced(truth: TruthWriter, counts: dict, ends: dict, created: dict) -> None:
    """One `produced` line per topic with the records delivered since the last report."""
    by_topic: dict[str, dict] = {}
    for (topic, partition), n in counts.items():
        line = by_topic.setdefault(topic, {"topic": topic, "counts": {}, "end_offsets": {}})
        line["counts"][str(partition)] = n
        line["end_offsets"][str(partition)] = ends[(topic, partition)]
        line["created_ms"] = created[topic]
    truth.write_many([{"event": "produced", **line} for line in by_topic.values()])
    counts.clear()
    created.clear()


# ---------------------------------------------------------------- group member


def run_member(spec: MemberSpec, shared: Shared, go_at) -> None:
    """Child entry: be a group member until SIGTERM, following the spec's cycle and stall plan.

    `go_at` is a shared double the parent sets (epoch s) once the group has settled;
    cycling members wait for it before their first leave.
    """
    flag = StopFlag()
    truth = TruthWriter(spec.truth_path)
    try:
        Member(spec, shared, truth, flag).run(go_at)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    finally:
        truth.close()


class Member:
    """One member process: consume (optionally rate-limited), commit every second, cycle, stall."""

    def __init__(self, spec: MemberSpec, shared: Shared, truth: TruthWriter, flag: StopFlag):
        self.spec, self.shared, self.truth, self.flag = spec, shared, truth, flag
        self.consumer: Consumer | None = None
        self.first_assigned_at: float | None = None
        self.stalled_at: float | None = None
        self.stall_done = False
        self.dirty = False
        self.committed: dict[tuple[str, int], int] = {}
        self.last_commit_at = 0.0
        self.next_record_at = 0.0  # pacing for consume_rate (a token bucket with 1 s of credit)

    # -- lifecycle

    def run(self, go_at) -> None:
        spec = self.spec
        if not spec.cycles:
            self.session(until=None)
            return
        self.session(until=lambda: go_at.value != 0.0, keep_open=True)  # no cycling before settling
        leave_at = go_at.value + spec.first_leave_s
        while not self.flag.stop:
            self.session(until=lambda at=leave_at: time.time() >= at)
            if not self.flag.sleep(spec.cycle_down_s):
                return
            leave_at = time.time() + spec.cycle_up_s

    def session(self, until, keep_open: bool = False) -> None:
        """Be in the group until `until()` is true or SIGTERM; then close unless keep_open."""
        if self.consumer is None:
            self.open()
        while not self.flag.stop and not (until and until()):
            self.step()
        if not keep_open or self.flag.stop:
            self.close()

    def open(self) -> None:
        spec = self.spec
        self.consumer = Consumer(consumer_config(spec))
        self.consumer.subscribe(
            list(spec.topics), on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost
        )
        self.truth.write(
            "join",
            group=spec.group,
            client_id=spec.client_id,
            instance_id=spec.instance_id,
            protocol=spec.protocol,
            pid=os.getpid(),
        )

    def close(self) -> None:
        if self.consumer is None:
            return
        member_id = self.consumer.memberid()
        self.commit()
        if self.spec.instance_id is None:
            self.leave()
        self.consumer.close()
        self.consumer = None
        self.truth.write(
            "leave",
            group=self.spec.group,
            client_id=self.spec.client_id,
            member_id=member_id,
            instance_id=self.spec.instance_id,
            left_group=self.spec.instance_id is None,
        )

    def leave(self) -> None:
        """Unsubscribe and serve the revocation in the poll loop, so close() finds nothing to unassign.

        An assignment that reaches a consumer while close() is unassigning can hang the close
        (librdkafka #4527, #4884; a KIP-848 member hung so in a CI run when another member's
        leave handed it partitions mid-close). Served here, it is an ordinary rebalance.
        """
        self.consumer.unsubscribe()
        deadline = time.monotonic() + LEAVE_WAIT_S
        while self.consumer.assignment() and time.monotonic() < deadline:
            self.consumer.poll(POLL_S)

    # -- the poll loop

    def step(self) -> None:
        """One turn of the loop: stall/resume when due, poll, commit every second."""
        self.update_stall()
        if self.stalled_at is not None:
            self.consumer.pause(self.consumer.assignment())  # new assignments arrive unpaused
            self.consumer.poll(POLL_S)  # keeps the member alive (max.poll.interval) and serves rebalances
            return
        if self.wait_for_pace():
            msg = self.consumer.poll(POLL_S)
            if msg is not None and not msg.error():
                self.dirty = True
                if self.spec.consume_rate:
                    self.next_record_at += 1.0 / self.spec.consume_rate
        if time.monotonic() - self.last_commit_at >= COMMIT_INTERVAL_S:
            self.commit()

    def wait_for_pace(self) -> bool:
        """Sleep (at most one poll interval) until the rate allows a record; True when it does."""
        if not self.spec.consume_rate:
            return True
        now = time.monotonic()
        self.next_record_at = max(self.next_record_at, now - 1.0)
        if self.next_record_at <= now:
            return True
        time.sleep(min(self.next_record_at - now, POLL_S))
        return self.next_record_at <= time.monotonic()

    def update_stall(self) -> None:
        spec, now = self.spec, time.monotonic()
        if spec.stall_after_s is None or self.first_assigned_at is None or self.stall_done:
            return
        if self.stalled_at is None and now - self.first_assigned_at >= spec.stall_after_s:
            self.commit()  # the last commit before the stall: lag grows from here
            self.stalled_at = now
            self.consumer.pause(self.consumer.assignment())
            self.write_member_event("stall")
        elif (
            self.stalled_at is not None
            and spec.recover_after_s is not None
            and now - self.stalled_at >= spec.recover_after_s
        ):
            self.consumer.resume(self.consumer.assignment())
            self.stalled_at, self.stall_done = None, True
            self.write_member_event("resume")

    def commit(self) -> None:
        """Commit consumed offsets synchronously and record each offset that moved."""
        self.last_commit_at = time.monotonic()
        if not self.dirty or self.consumer is None or self.stalled_at is not None:
            return
        self.dirty = False
        try:
            result = self.consumer.commit(asynchronous=False) or []
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                self.dirty = True  # e.g. a rebalance is in progress: try again next time
            return
        moved = []
        for tp in result:
            key = (tp.topic, tp.partition)
            if tp.error is None and tp.offset >= 0 and self.committed.get(key) != tp.offset:
                self.committed[key] = tp.offset
                moved.append(
                    {
                        "event": "commit",
                        "group": self.spec.group,
                        "client_id": self.spec.client_id,
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "offset": tp.offset,
                    }
                )
        self.truth.write_many(moved)
        if moved:
            self.shared.last_commit_at.value = time.time()

    # -- rebalance callbacks (run inside poll/close)

    def on_assign(self, consumer, partitions) -> None:
        if self.first_assigned_at is None:
            self.first_assigned_at = time.monotonic()
        self.write_assignment("assigned", consumer, partitions)

    def on_revoke(self, consumer, partitions) -> None:
        self.commit()
        self.write_assignment("revoked", consumer, partitions)

    def on_lost(self, consumer, partitions) -> None:
        self.dirty = False  # the partitions belong to someone else now: do not commit them
        self.write_assignment("lost", consumer, partitions)

    def write_assignment(self, event: str, consumer, partitions) -> None:
        spec = self.spec
        self.truth.write(
            event,
            group=spec.group,
            client_id=spec.client_id,
            member_id=consumer.memberid(),
            instance_id=spec.instance_id,
            protocol=spec.protocol,
            generation=generation_of(consumer),
            partitions=partition_list(partitions),
        )
        self.shared.last_rebalance_at.value = time.time()
        if event == "assigned":
            self.shared.assign_count.value += 1

    def write_member_event(self, event: str) -> None:
        self.truth.write(
            event, group=self.spec.group, client_id=self.spec.client_id, member_id=self.consumer.memberid()
        )

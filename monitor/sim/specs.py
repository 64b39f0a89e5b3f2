"""What the parent tells its children: producer, member, share-member and Streams-instance specs,
plus their client settings.

Kept free of confluent_kafka so `import monitor.sim` (which the CLI does for every
command, to build its parser) stays fast; the children import the client.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from monitor import jvm


@dataclass(frozen=True)
class ProducerSpec:
    """Topics to produce to, with their rate (records/s) and partition count."""

    bootstrap: str
    rates: dict[str, float]
    partitions: dict[str, int]
    truth_path: str | None = None
    verbose: bool = False


@dataclass(frozen=True)
class MemberSpec:
    """One group member's behaviour; all times are seconds.

    protocol: "eager" / "cooperative" (classic group) or "consumer" (KIP-848).
    consume_rate: records/s, None = as fast as it can.
    cycle_up_s/cycle_down_s: after the scenario settles, leave after first_leave_s,
      stay away cycle_down_s, come back for cycle_up_s, and so on (churn, static restarts).
    stall_after_s: pause all partitions (keep polling, stop committing) this long
      after the first assignment; recover_after_s: resume after stalling this long.
    """

    bootstrap: str
    group: str
    topics: tuple[str, ...]
    client_id: str
    protocol: str = "eager"
    assignor: str = "range"
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    instance_id: str | None = None
    consume_rate: float | None = None
    first_leave_s: float | None = None
    cycle_up_s: float = 0.0
    cycle_down_s: float = 0.0
    stall_after_s: float | None = None
    recover_after_s: float | None = None
    truth_path: str | None = None
    verbose: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def cycles(self) -> bool:
        return self.first_leave_s is not None


@dataclass(frozen=True)
class ShareMemberSpec:
    """One share-group member (KIP-932): it acknowledges every record it is given, explicitly.

    Records are accepted, except every `release_every`-th offset on its first delivery
    (released: it comes back) and every `reject_every`-th (rejected: never delivered again).
    stall_after_s: after the groups settled, keep the next batch unacknowledged and stop
      polling for stall_s; the records stay acquired until their lock runs out.
    leave_after_s: after the groups settled, close (leave) and come back after down_s.
    """

    bootstrap: str
    group: str
    topics: tuple[str, ...]
    client_id: str
    release_every: int = 0
    reject_every: int = 0
    stall_after_s: float | None = None
    stall_s: float = 0.0
    leave_after_s: float | None = None
    down_s: float = 0.0
    truth_path: str | None = None
    verbose: bool = False


@dataclass(frozen=True)
class StreamsSpec:
    """One instance of the Kafka Streams demo app (kafka/apps/LagmonStreams.java), a JVM of its own.

    group is the application.id, which names the streams group; process_delay_ms slows
    each record so lag shows. state.dir differs per instance (two instances sharing one
    would lock each other out).
    """

    bootstrap: str
    group: str
    client_id: str
    input_topic: str
    output_topic: str
    kafka_libs: Path
    process_delay_ms: int = 0
    num_standby_replicas: int = 0
    heap: str = "256m"  # the 2-core demo machine runs a few of these beside Kafka
    truth_path: str | None = None
    verbose: bool = False
    tasks: int = 0  # active tasks the group runs in all (0: not known)


def share_consumer_config(spec: ShareMemberSpec) -> dict:
    """librdkafka settings for a share member; explicit mode so it can RELEASE and REJECT."""
    return {
        "bootstrap.servers": spec.bootstrap,
        "group.id": spec.group,
        "client.id": spec.client_id,
        "share.acknowledgement.mode": "explicit",
        **client_logging(spec.verbose, "share"),
    }


def share_ack(offset: int, delivery_count: int, release_every: int, reject_every: int) -> str:
    """How a share member acknowledges a record: "accept", "release" or "reject".

    A function of the record alone, so the truth is reproducible; a released record
    is accepted when it comes back (delivery_count > 1), so it is delivered twice.
    """
    if reject_every and offset % reject_every == reject_every - 1:
        return "reject"
    if release_every and delivery_count <= 1 and offset % release_every == release_every // 2:
        return "release"
    return "accept"


def streams_properties(spec: StreamsSpec, state_dir: Path) -> dict[str, str]:
    """The app's properties file: short commits so lag moves, small polls so close is quick."""
    return {
        "bootstrap.servers": spec.bootstrap,
        "application.id": spec.group,
        "client.id": spec.client_id,
        "input.topic": spec.input_topic,
        "output.topic": spec.output_topic,
        "state.dir": str(state_dir),
        "process.delay.ms": str(spec.process_delay_ms),
        "num.standby.replicas": str(spec.num_standby_replicas),
        "group.protocol": "streams",
        "commit.interval.ms": "1000",
        "max.poll.records": "50",
    }


def streams_command(spec: StreamsSpec, properties_path: Path, java: str = "java") -> list[str]:
    """The JVM command line for one instance, heap capped. Its temporary files go to the properties' folder:
    RocksDB unpacks its 15 MB native library into the JVM's temporary folder and removes it only when the
    JVM exits normally, so a killed instance left one in /tmp each time."""
    libs = spec.kafka_libs
    return [
        java,
        f"-Xmx{spec.heap}",
        "-XX:+UseSerialGC",
        jvm.QUICK_JIT,
        "-Djava.awt.headless=true",
        f"-Djava.io.tmpdir={properties_path.parent}",
        "-cp",
        f"{libs}/*:{libs}/apps",
        "LagmonStreams",
        str(properties_path),
    ]


def parse_streams_state(line: str) -> tuple[str, str] | None:
    """(before, now) from the app's "state REBALANCING -> RUNNING" lines, else None."""
    parts = line.split()
    if len(parts) == 4 and parts[0] == "state" and parts[2] == "->":
        return parts[1], parts[3]
    return None


def parse_streams_tasks(line: str) -> int | None:
    """The active task count from the app's "tasks 4" lines, else None."""
    parts = line.split()
    if len(parts) == 2 and parts[0] == "tasks" and parts[1].isdigit():
        return int(parts[1])
    return None


def streams_assigned(instances: Sequence) -> bool:
    """Every instance (a .spec and its .active_tasks) holds an active task, and each group's instances hold
    all of its tasks: none is in flight from one to another, so the coordinator calls the group Stable."""
    held: Counter[str] = Counter()
    for i in instances:
        held[i.spec.group] += i.active_tasks
    return all(i.active_tasks > 0 and held[i.spec.group] >= i.spec.tasks for i in instances)


class Shared:
    """Lock-free values a member publishes and the parent reads (safe to SIGKILL a writer)."""

    def __init__(self, ctx):
        self.assign_count = ctx.RawValue("i", 0)
        self.last_rebalance_at = ctx.RawValue("d", 0.0)
        self.last_commit_at = ctx.RawValue("d", 0.0)  # wall time of the last commit that moved an offset


def consumer_config(spec: MemberSpec) -> dict:
    """librdkafka settings for a member; KIP-848 members must not set the classic knobs."""
    conf = {
        "bootstrap.servers": spec.bootstrap,
        "group.id": spec.group,
        "client.id": spec.client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        **client_logging(spec.verbose, "consumer"),
        **spec.extra,
    }
    if spec.protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["partition.assignment.strategy"] = spec.assignor
        conf["session.timeout.ms"] = spec.session_timeout_ms
        conf["heartbeat.interval.ms"] = spec.heartbeat_interval_ms
    if spec.instance_id:
        conf["group.instance.id"] = spec.instance_id
    return conf


def client_logging(verbose: bool, name: str) -> dict:
    """librdkafka logs to stderr by default; the sim's clients stay silent unless --verbose."""
    logger = logging.getLogger(f"lagmon.sim.librdkafka.{name}")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler(sys.stderr) if verbose else logging.NullHandler())
    logger.setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    return {"logger": logger, "log_level": 6 if verbose else 0}

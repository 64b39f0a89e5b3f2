"""A coordinated collector in the collectors' own consumer group.

docs/architecture.md section 9, "Coordinated collectors", has the design and why.

The collectors of one cluster subscribe to __consumer_offsets in one consumer group
(KIP-848's protocol, or the classic one with cooperative-sticky where the broker has
no other), and never fetch from it: the partitions Kafka assigns a collector say which
groups are its (KafkaShard), and Kafka moves them when a collector joins, leaves or dies.
Its commits are where the collector's tail has read each partition to, so any Kafka
tool shows the collectors' own lag on __consumer_offsets. It never touches a
monitored group: this group is lagmon's own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from monitor.clock import wall_ms
from monitor.kafka.common import OFFSETS_TOPIC, quiet_logger
from monitor.logs import get_logger
from monitor.output import compute_ranges
from monitor.shard import KafkaShard
from monitor.tail_sessions import FailureLog

log = get_logger("collectors")
COMMIT_EVERY_S = 5.0
RELEASE_WAIT_S = 30.0  # a revoked partition is let go after the cycle and the tail's batch in progress, or this
FATAL_PAUSE_S = 5.0  # after a fatal error (other than a missing protocol) before joining with a new consumer
_NO_NEW_PROTOCOL = (KafkaError.UNSUPPORTED_VERSION, KafkaError._UNSUPPORTED_FEATURE)


class CollectorsGroupMember:
    """A background part: joins `group_id`, keeps `shard` holding what Kafka assigned, commits `positions()`."""

    def __init__(
        self,
        config: dict[str, str],
        group_id: str,
        shard: KafkaShard,
        positions: Callable[[], dict[int, int]] = dict,
        timeout_s: float = 10.0,
    ):
        self.group_id = group_id
        self.shard = shard
        self.positions = positions  # partition -> the next offset the tail will read (what it has stored)
        self.timeout_s = timeout_s
        self._report = FailureLog(log)
        self._committed: dict[int, int] = {}
        self._config = {
            **{k: v for k, v in config.items() if k != "group.protocol"},
            "group.id": group_id,
            "client.id": f"lagmon-collector-{shard.name}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "error_cb": self._on_error,
            "logger": quiet_logger(),
            "log_level": 3,
        }
        self._protocol = "consumer"
        self._fatal: KafkaError | None = None

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="collectors-group", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            consumer = self._join()
            try:
                self._member(consumer, stop)
            except Exception as e:  # a member must never take the collector down: join again
                self._report(f"collectors' group {self.group_id!r}: {type(e).__name__}: {e} (joining again)", True)
                stop.wait(1.0)
            finally:
                self._leave(consumer)
            if self._fatal is not None:
                self._after_fatal(self._fatal, stop)

    def _join(self) -> Consumer:
        extra = (
            {"group.protocol": "consumer"}
            if self._protocol == "consumer"
            else {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky"}
        )
        consumer = Consumer({**self._config, **extra})
        consumer.subscribe([OFFSETS_TOPIC], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost)
        log.info(
            "joined the collectors' group %r as %r (%s protocol): waiting for partitions of %s",
            self.group_id,
            self.shard.name,
            self._protocol,
            OFFSETS_TOPIC,
        )
        return consumer

    def _member(self, consumer: Consumer, stop: threading.Event) -> None:
        committed_at = time.monotonic()
        while not stop.is_set() and self._fatal is None:
            message = consumer.poll(0.2)  # heartbeats and rebalance callbacks happen in here
            if message is not None and message.error() is not None:
                self._on_error(message.error())
            if time.monotonic() - committed_at >= COMMIT_EVERY_S:
                committed_at = time.monotonic()
                self._commit(consumer)

    def _assigned(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        consumer.incremental_assign(partitions)
        consumer.pause(partitions)  # the collector's tail reads them; this member only holds them
        numbers = {tp.partition for tp in partitions}
        if numbers:
            self.shard.hold(numbers, self._partition_count(consumer), wall_ms())
            log.info(
                "collectors' group: holding %s partitions %s (%d in all)",
                OFFSETS_TOPIC,
                compute_ranges(numbers),
                len(self.shard.held),
            )
        self._report.healthy()

    def _revoked(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        numbers = {tp.partition for tp in partitions}
        if not numbers:
            return
        self._commit(consumer)
        if not self.shard.release(numbers, RELEASE_WAIT_S):
            log.warning("collectors' group: partitions %s let go before this collector's work on them ended", numbers)
        log.info("collectors' group: handed over %s partitions %s", OFFSETS_TOPIC, compute_ranges(numbers))

    def _lost(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        numbers = {tp.partition for tp in partitions}
        self.shard.release(numbers, 0.0)
        log.warning(
            "collectors' group: lost %s partitions %s (this collector was out of touch with Kafka for longer than "
            "its session: another holds them now)",
            OFFSETS_TOPIC,
            compute_ranges(numbers),
        )

    def _commit(self, consumer: Consumer) -> None:
        """The tail's positions of the held partitions that moved since the last commit."""
        held = self.shard.held
        moved = {p: o for p, o in self.positions().items() if p in held and self._committed.get(p) != o}
        if not moved:
            return
        try:
            consumer.commit(
                offsets=[KafkaTopicPartition(OFFSETS_TOPIC, p, o) for p, o in sorted(moved.items())],
                asynchronous=False,
            )
        except KafkaException as e:  # e.g. a rebalance in flight: the next commit carries them
            self._report(f"collectors' group: positions not committed: {e.args[0].str()}")
            return
        self._committed.update(moved)

    def _partition_count(self, consumer: Consumer) -> int:
        if self.shard.partitions:
            return self.shard.partitions
        topic = consumer.list_topics(OFFSETS_TOPIC, timeout=self.timeout_s).topics[OFFSETS_TOPIC]
        return len(topic.partitions)

    def _leave(self, consumer: Consumer) -> None:
        """Close: the last commit, then the revocation hands the partitions over at once."""
        try:
            self._commit(consumer)
            consumer.close()
        except Exception as e:
            log.warning("collectors' group: leaving: %s: %s", type(e).__name__, e)
        self.shard.release(set(self.shard.held), 0.0)
        self._committed.clear()

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal() or err.code() in (KafkaError._FATAL, *_NO_NEW_PROTOCOL):
            self._fatal = err  # this consumer can go no further
        self._report(f"collectors' group {self.group_id!r}: {err.str()}")

    def _after_fatal(self, err: KafkaError, stop: threading.Event) -> None:
        """Join again: at once with the classic protocol where the brokers lack KIP-848's (which librdkafka
        reports as a fatal error naming the broker's answer), else after a pause."""
        self._fatal = None
        lacking = err.code() in _NO_NEW_PROTOCOL or any(KafkaError(c).str() in err.str() for c in _NO_NEW_PROTOCOL)
        if self._protocol == "consumer" and lacking:
            log.warning("the brokers do not offer KIP-848's consumer protocol: joining with the classic one")
            self._protocol = "classic"
        else:
            stop.wait(FATAL_PAUSE_S)

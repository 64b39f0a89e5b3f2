"""The tails' consumer (docs/architecture.md section 4): every partition of __consumer_offsets or __share_group_state.

It assign()s and never joins or commits; the topic names the tail needs for
KIP-848 records (fetch_topic_names) come from here too.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from monitor.kafka.common import OFFSETS_TOPIC, compute_kafka_error, quiet_logger
from monitor.models import KafkaUnavailable, TopicNotCreated
from monitor.offsets_topic import topic_id_str

SHARE_STATE_TOPIC = "__share_group_state"  # the share coordinator's log (KIP-932)
# librdkafka insists on a group.id even for a consumer that only assign()s. This one never
# subscribes, never commits (no auto commit, no offset store) and never joins: it is never a member.
TAIL_GROUP_ID = "lagmon-offsets-tail-never-joins"


class OffsetsTopicReader:
    """Reads every partition of __consumer_offsets (or another internal topic) from given offsets, as TailRecords.

    librdkafka reconnects by itself and fetches on from its position, so a broker
    restart or a leader change neither skips nor repeats a record.
    """

    def __init__(self, config: dict[str, str], timeout_s: float = 10.0, topic: str = OFFSETS_TOPIC):
        self.timeout_s = timeout_s
        self.topic = topic
        self._errors: list[str] = []
        self._config = {
            **config,
            "group.id": TAIL_GROUP_ID,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",  # aborted transactional commits never happened
            # a commit record is ~150 bytes: 16 MB queued is over a second of decoding, and
            # a tail that falls behind holds no more than that (256 MB made the collector 300 MB)
            "fetch.max.bytes": 8_388_608,
            "queued.max.messages.kbytes": 16_384,
            "error_cb": lambda err: self._errors.append(err.str()),
            "logger": quiet_logger(),
            "log_level": 3,
        }
        self._config.pop("group.protocol", None)
        self.consumer = None
        self.partitions: list[int] = []

    def open(self, start: Callable[[int], int | None], only: frozenset[int] | None = None) -> list[int]:
        """Assign every partition (or those in `only`) at start(p) (None = the beginning); returns their numbers.

        Raises KafkaUnavailable when the topic cannot be described or read, NotAuthorized when
        that is for want of a Describe/Read ACL, TopicNotCreated before Kafka created it.
        """
        from confluent_kafka import OFFSET_BEGINNING, Consumer

        self.consumer = Consumer(self._config)
        try:
            topic = self.consumer.list_topics(self.topic, timeout=self.timeout_s).topics.get(self.topic)
        except KafkaException as e:
            raise _cannot_read(e.args[0], self.topic) from e
        if topic is not None and topic.error is not None and topic.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise _cannot_read(topic.error, self.topic)
        if topic is None or not topic.partitions:
            raise TopicNotCreated(f"cannot read {self.topic}: topic not created yet")
        self.partitions = sorted(p for p in topic.partitions if only is None or p in only)
        self.consumer.assign(
            [
                KafkaTopicPartition(self.topic, p, OFFSET_BEGINNING if start(p) is None else start(p))
                for p in self.partitions
            ]
        )
        return self.partitions

    def fetch_ends(self) -> dict[int, int]:
        """High watermark of every assigned partition.

        Fetching is paused meanwhile: a broker answers one connection's requests in order, so each
        request would wait behind a fetch held open for fetch.wait.max.ms (half a second per
        partition: 25 s for 50, during which the tail could not even see a stop).
        """
        assigned = [KafkaTopicPartition(self.topic, p) for p in self.partitions]
        self.consumer.pause(assigned)
        try:
            ends = {tp.partition: self.consumer.get_watermark_offsets(tp, timeout=self.timeout_s)[1] for tp in assigned}
        except KafkaException as e:  # e.g. no leader yet on a cluster that has just started
            raise _cannot_read(e.args[0], self.topic) from e
        finally:
            self.consumer.resume(assigned)
        unknown = sorted(p for p, end in ends.items() if end < 0)  # a leader moving: librdkafka says -1001
        if unknown:
            raise KafkaUnavailable(f"cannot read {self.topic}: no end offset for partitions {unknown} yet")
        return ends

    def fetch_batch(self, max_records: int = 10_000, timeout_s: float = 0.5):
        """(records, {partition: end offset reached}, [errors]) from one consume() call."""
        from monitor.offsets_topic.history import TailRecord

        records, ends, errors = [], {}, []
        append = records.append
        for msg in self.consumer.consume(num_messages=max_records, timeout=timeout_s):
            err = msg.error()
            if err is None:
                append(TailRecord(msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(), msg.value()))
            elif err.code() == KafkaError._PARTITION_EOF:
                ends[msg.partition()] = msg.offset()
            elif err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED or err.fatal():
                raise _cannot_read(err, self.topic)
            else:
                errors.append(err.str())
        errors += self._errors
        self._errors.clear()
        return records, ends, errors

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()  # no group joined: closing commits and leaves nothing
            self.consumer = None


def _cannot_read(err: KafkaError, topic: str) -> KafkaUnavailable:
    return compute_kafka_error(err, f"cannot read {topic}: {err.str()}")


def compute_topic_id(uuid) -> str:
    """Kafka's string form of a confluent_kafka.Uuid, as the offsets topic's records are named.

    str(Uuid) is standard base64 ('+', '/'), Kafka's is URL-safe ('-', '_'): about half of
    all topic ids differ between the two.
    """
    raw = b"".join(
        bits.to_bytes(8, "big", signed=True)
        for bits in (uuid.get_most_significant_bits(), uuid.get_least_significant_bits())
    )
    return topic_id_str(raw)


def fetch_topic_names(config: dict[str, str], timeout_s: float = 10.0) -> dict[str, str]:
    """{topic id: name} of every topic, to name the partitions in KIP-848 records."""
    from confluent_kafka import TopicCollection

    admin = AdminClient({**config, "logger": quiet_logger(), "log_level": 3})
    names = [t for t in admin.list_topics(timeout=timeout_s).topics if t != OFFSETS_TOPIC]
    out = {}
    if not names:
        return out
    for name, future in admin.describe_topics(TopicCollection(names), request_timeout=timeout_s).items():
        try:
            out[compute_topic_id(future.result().topic_id)] = name
        except KafkaException:
            continue  # deleted in the meantime
    return out

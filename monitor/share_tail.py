"""The share-state tail: a thread of the collector reading `__share_group_state` (KIP-932).

The share coordinator keeps each share-partition's start offset and in-flight
record states in that topic; no admin call librdkafka offers returns them. Like
the coordinator when it loads a partition, every session reads every partition
from its beginning and folds the records (monitor.offsets_topic.share_partitions),
so what it holds once caught up is what the coordinator holds. Nothing is stored:
the collector samples the result every cycle like any other offsets. Before the
first share group Kafka has not created the topic, which means no state yet, not
an error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from monitor.logs import get_logger
from monitor.models import DecodeError, NotAuthorized, SharePartition, TopicNotCreated, TopicPartition
from monitor.offsets_topic.records import ShareSnapshot, ShareUpdate
from monitor.offsets_topic.share_partitions import SharePartitions
from monitor.offsets_topic.share_state import decode_share_state
from monitor.tail import OffsetsReader
from monitor.tail_sessions import FailureLog, run_sessions

log = get_logger("share-tail")
ABSENT_RECHECK_S = 5.0  # how often to look for a topic Kafka has not created yet (a metadata call)


class ShareStateTail:
    """Owns one SharePartitions at a time; `partitions_of` is what the sampler asks."""

    def __init__(self, open_reader: Callable[[], OffsetsReader], batch: int = 10_000):
        self.open_reader = open_reader
        self.batch = batch
        self.disabled = False
        self.records_read = 0
        self._state: SharePartitions | None = None  # None until a session has read to the end
        self._states_made = 0  # counts the states `_state` has held: versions start again with each
        self._lock = threading.Lock()
        self._error = FailureLog(log)

    def partitions_of(self, group: str, topic_names: dict[str, str]) -> dict[TopicPartition, SharePartition] | None:
        """The group's share-partitions; None while no session has caught up (unknown, not empty)."""
        with self._lock:
            return None if self._state is None else self._state.of_group(group, topic_names)

    @property
    def caught_up(self) -> bool:
        """A session has read to the end: `partitions_of` answers."""
        return self._state is not None

    def version_of(self, group: str) -> tuple[int, int] | None:
        """(session, records of the group applied) now, None before a catch-up: unchanged, same answer."""
        with self._lock:
            return None if self._state is None else (self._states_made, self._state.versions.get(group, 0))

    @property
    def failing(self) -> bool:
        """Its newest session ended in a failure (said in the log) and none has read since."""
        return self._error.session_failed

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="share-state-tail", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Sessions until stopped (monitor.tail_sessions); a topic we may not read turns the tail off (share
        groups show no lag), one Kafka has not created yet is looked for again every ABSENT_RECHECK_S."""
        run_sessions(
            "share-state tail", self.open_reader, self._session_or_absent, stop, self._error, refused=self._refused
        )

    def _refused(self, e: NotAuthorized) -> bool:
        self.disabled = True
        log.warning("share-state tail off: %s (share groups need Read on __share_group_state for lag)", e)
        return True

    def _session_or_absent(self, reader: OffsetsReader, stop: threading.Event) -> float | None:
        try:
            self._session(reader, stop)
        except TopicNotCreated:
            with self._lock:
                self._state, self._states_made = SharePartitions(), self._states_made + 1  # no state yet
            return ABSENT_RECHECK_S
        return None

    def _session(self, reader: OffsetsReader, stop: threading.Event) -> None:
        partitions = reader.open(lambda p: None)
        state, ended, caught_up = SharePartitions(), set(), False
        while not stop.is_set():
            records, ends, errors = reader.fetch_batch(self.batch, 0.5)
            for message in errors:
                self._error(f"share-state tail: {message}")
            for rec in records:
                try:
                    decoded = decode_share_state(rec.key, rec.value)
                except DecodeError as e:
                    self._error(f"share-state tail skipped __share_group_state-{rec.partition}@{rec.offset}: {e}")
                    continue
                if isinstance(decoded, (ShareSnapshot, ShareUpdate)):
                    with self._lock:
                        state.apply(decoded, rec.timestamp)
            self.records_read += len(records)
            ended.update(ends)
            if not caught_up and ended >= set(partitions):  # each has reached its end once: a busy one never rests
                caught_up = True
                with self._lock:  # from now on the sampler reads this session's state
                    self._state, self._states_made = state, self._states_made + 1
                log.info("share-state tail caught up: %s records", f"{self.records_read:,}")
            if records or ends:
                self._error.healthy()


def build_share_tail(config: dict[str, str]) -> ShareStateTail:
    """The share-state tail, reading with the collector's client config."""
    from monitor.kafka import SHARE_STATE_TOPIC, OffsetsTopicReader

    return ShareStateTail(lambda: OffsetsTopicReader(config, topic=SHARE_STATE_TOPIC))

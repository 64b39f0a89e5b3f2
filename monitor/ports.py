"""The runtime collaborators as Protocols: what each consumer calls, so the real parts and tests' fakes agree.

Only what the consumer uses is named here; the real classes have more. There is
no type checker in the build: tests/unit/test_ports.py checks that the real
classes have each member with parameters the consumer can call them with.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # names for the signatures only: the lean supervisor imports this module (monitor/supervisor.py)
    from monitor.models import ClusterSnapshot, GroupSnapshot, RecordTime, SharePartition, TopicPartition


@runtime_checkable
class Background(Protocol):
    """A long-running part of the collector process (docs/architecture.md section 3, "Long-running parts").

    `start` runs it in a daemon thread of its own and returns that thread; the part ends soon
    after `stop` is set, finishing only the call in hand. Whoever started it sets `stop` and joins
    the thread (monitor.stopping.join_all); there is no other way to stop it.
    """

    def start(self, stop: threading.Event) -> threading.Thread: ...


@runtime_checkable
class Sampler(Protocol):
    """What the collector samples a cluster with (monitor.kafka.KafkaSampler)."""

    def fetch_snapshot(self, now_ms: Callable[[], int]) -> ClusterSnapshot: ...


@runtime_checkable
class Tail(Background, Protocol):
    """The offsets-topic tail (monitor.tail.OffsetsTail) as the sampler and the collector use it."""

    partitions: list[int]  # of __consumer_offsets, once a session has opened it
    disabled: bool  # turned off for good (no Read on __consumer_offsets)
    records_skipped: int  # this session's records it could not decode or fold

    def committed_when_caught_up(
        self, ends: dict[int, int], groups: list[str], wait_s: float = 1.0
    ) -> dict[str, dict[TopicPartition, int]] | None: ...

    def committed_as_read(self, groups: list[str]) -> dict[str, dict[TopicPartition, int]] | None: ...

    def log_group_snapshots(
        self, share: ShareTail | None, coordinator_of: Callable[[str], int | None]
    ) -> dict[str, GroupSnapshot] | None: ...

    def resume(self) -> None: ...

    def take_commit_counts(self) -> dict[tuple[str, str], int]: ...


@runtime_checkable
class ShareTail(Background, Protocol):
    """The share-state tail (monitor.share_tail.ShareStateTail): share-partitions of one group, None if unknown."""

    def partitions_of(self, group: str, topic_names: dict[str, str]) -> dict[TopicPartition, SharePartition] | None: ...

    def version_of(self, group: str) -> tuple[int, int] | None: ...


@runtime_checkable
class Sender(Protocol):
    """The alert engine's outbox sender (monitor.alerts.notify.OutboxSender): told when messages were queued."""

    def wake(self) -> None: ...


@runtime_checkable
class RecordTimestamps(Protocol):
    """Exact lag seconds (LAGMON_LAG_EXACT_TOP): the record times at committed offsets (monitor.kafka)."""

    def fetch_timestamps(self, wanted: dict[TopicPartition, int]) -> dict[TopicPartition, RecordTime]: ...

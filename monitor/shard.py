"""Collector shards: which collector owns a consumer group (pure, but for a lock).

Several collectors can split one cluster's groups two ways (LAGMON_SHARD, `--shard`):
- static, `i/n`: a group belongs to shard i when crc32(utf-8 group id) mod n == i - 1.
  crc32 is the same in every process and every Python version (unlike `hash()`, which
  is salted per process), so every group has exactly one owner and each shard agrees
  with every other which one.
- coordinated, `kafka`: Kafka's own placement. A group lives in one partition of
  __consumer_offsets (`coordinator_partition`); the collectors join a consumer group of
  their own on that topic, and a collector owns the groups of the partitions Kafka
  assigned it (KafkaShard), which move when a collector joins or dies
  (docs/architecture.md section 9, "Coordinated collectors").
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from monitor.models import ConfigError
from monitor.names import full_id, is_stand_in

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
KAFKA = "kafka"  # LAGMON_SHARD's coordinated mode, and the label its collectors store under together


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`; Shard(1, 1), the default, owns every group."""

    index: int = 1
    count: int = 1
    version = 0  # what it owns never changes
    name = None  # the shard is the collector: samples need no collector's name

    def owns(self, group_id: str) -> bool:
        return self.count == 1 or compute_shard_index(group_id, self.count) == self.index

    @property
    def scope(self) -> str:
        """The topic field of this shard's cluster-wide alerts (collector health): "shard 2/3", '' unsharded."""
        return f"shard {self}" if self.sharded else ""

    def owns_alert(self, group_id: str, topic: str) -> bool:
        """A group's alert belongs to the group's shard; a cluster-wide one to the shard named in its topic."""
        return self.owns(group_id) if group_id else topic == self.scope

    @property
    def label(self) -> str:
        """How the shard is stored and shown: "2/3" ("kafka" coordinated)."""
        return KAFKA if self.coordinated else f"{self.index}/{self.count}"

    @property
    def coordinated(self) -> bool:
        """LAGMON_SHARD=kafka: the groups this collector owns come from a KafkaShard at run time."""
        return self.count == 0

    def working(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext(0)

    @property
    def sharded(self) -> bool:
        return self.count > 1

    @property
    def leads(self) -> bool:
        """Shard 1 also does the cluster-wide chores (retention), so they run once."""
        return self.index == 1

    def __str__(self) -> str:
        return self.label


UNSHARDED = Shard()
COORDINATED = Shard(0, 0)  # parsed from "kafka"; the collector builds its KafkaShard from it


class KafkaShard:
    """A coordinated collector's groups: those of the __consumer_offsets partitions Kafka assigned it.

    The membership thread (monitor.kafka.membership) calls `hold` and `release`; the cycle and the
    tail do their work inside `working()`, which sees the partitions held when it began to its end
    (`owns`, `version`), so a cycle never judges half its groups under one owner and half under
    another. A release returns once no work begun before it is still running: what the old owner
    stores of released groups is stored before the next owner is told to start.
    """

    coordinated = True
    sharded = True
    label = KAFKA  # the samples, tail positions and statuses of all of them: a group's history stays in one place
    count = 0

    def __init__(self, name: str):
        self.name = name  # the collector's name among the others (its client id in the collectors' group)
        self.partitions = 0  # of __consumer_offsets; 0 until the membership has read it
        self.since: dict[int, int] = {}  # partition -> when it was assigned (ms)
        self._held: frozenset[int] = frozenset()
        self._version = 0
        self._working: dict[object, int] = {}  # work in progress -> the version it began with
        self._cond = threading.Condition()
        self._view = threading.local()  # this thread's work in progress: (held, version) as it began

    @property
    def held(self) -> frozenset[int]:
        """The partitions held as the calling thread's work began (outside work: now)."""
        view = getattr(self._view, "now", None)
        return self._held if view is None else view[0]

    @property
    def version(self) -> int:
        """Moves each time the partitions held change (as the calling thread's work began)."""
        view = getattr(self._view, "now", None)
        return self._version if view is None else view[1]

    def owns(self, group_id: str) -> bool:
        held = self.held
        if not held:
            return False
        real = full_id(group_id) if is_stand_in(group_id) else group_id
        return real is not None and coordinator_partition(real, self.partitions) in held

    @property
    def leads(self) -> bool:
        """The holder of partition 0 does the cluster-wide chores (retention): one collector, another when it dies."""
        return 0 in self.held

    @property
    def scope(self) -> str:
        return f"collector {self.name}"

    def owns_alert(self, group_id: str, topic: str) -> bool:
        return self.owns(group_id) if group_id else topic == self.scope

    def hold(self, partitions: set[int], count: int, now_ms: int) -> None:
        with self._cond:
            self.partitions = count
            self.since.update((p, now_ms) for p in partitions - self._held)
            self._held = self._held | frozenset(partitions)
            self._version += 1

    def release(self, partitions: set[int], wait_s: float) -> bool:
        """Let `partitions` go once the work begun while they were held has ended (False: not within `wait_s`)."""
        with self._cond:
            self._held = self._held - frozenset(partitions)
            for p in partitions:
                self.since.pop(p, None)
            self._version += 1
            version = self._version
            return self._cond.wait_for(lambda: all(v >= version for v in self._working.values()), wait_s)

    @contextlib.contextmanager
    def working(self) -> Iterator[int]:
        """Work done for the groups held now (a cycle, a tail's batch); yields the version it began with."""
        token, outer = object(), getattr(self._view, "now", None)
        with self._cond:
            self._view.now = view = (self._held, self._version) if outer is None else outer
            self._working[token] = view[1]
        try:
            yield self.version
        finally:
            with self._cond:
                del self._working[token]
                self._view.now = outer
                self._cond.notify_all()

    def __str__(self) -> str:
        return KAFKA


def wait_for_partitions(shard: KafkaShard, stop: threading.Event, within_s: float) -> bool:
    """Whether Kafka assigned `shard` some partitions within `within_s` (False at once when stopped)."""
    deadline = time.monotonic() + within_s
    while not shard.held and time.monotonic() < deadline:
        if stop.wait(0.1):
            return False
    return bool(shard.held)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (32-bit, over UTF-16 code units): Kafka places groups with it."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@functools.lru_cache(maxsize=1 << 16)  # asked for every idle group, and by a coordinated collector for every group
def coordinator_partition(group_id: str, offsets_partitions: int) -> int:
    """The __consumer_offsets partition that holds a group: Utils.abs(hashCode) % partitions."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % offsets_partitions


def compute_shard_index(group_id: str, count: int) -> int:
    """The 1-based shard of `count` that owns `group_id`: crc32 of its UTF-8 bytes, mod count."""
    return zlib.crc32(group_id.encode("utf-8")) % count + 1


def compute_other_layouts(shard: Shard | KafkaShard, labels) -> list[str]:
    """Shard labels ("1/3", "kafka") of another layout than `shard`'s: collectors that split the groups otherwise."""
    count = str(shard.count)
    return sorted(x for x in labels if x != shard.label and (shard.coordinated or x.partition("/")[2] != count))


def parse_shard(text: str | None, name: str = "LAGMON_SHARD") -> Shard:
    """ "2/3" -> Shard(2, 3); "kafka" -> COORDINATED; empty or None -> unsharded; anything else is one ConfigError."""
    if text is None or not str(text).strip():
        return UNSHARDED
    if str(text).strip().lower() == KAFKA:
        return COORDINATED
    match = _SPEC.match(str(text))
    if not match:
        raise ConfigError(f"{name}: {text!r} is not a shard; use i/n with 1 <= i <= n, e.g. 2/3, or kafka")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"{name}: {text!r} is not a shard; use i/n with 1 <= i <= n, e.g. 2/3, or kafka")
    return Shard(index, count)

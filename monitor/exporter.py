"""Prometheus /metrics from what the collector already gathered: a scrape never calls Kafka.

Metric names and labels are kafka-lag-exporter's (docs/production.md), so the
Grafana dashboards and alert rules people already have keep working; lagmon's
own metrics are prefixed `lagmon_`. The collector hands every cycle to
`MetricsExporter.observe` with its snapshot and health report (monitor.health):
lag, lag seconds and status are the health engine's, not computed again.

A scrape streams the text exposition (format 0.0.4) line by line from the pure
`compute_exposition`, instead of building prometheus_client metric objects: at
20,000 group-partitions that is four times less CPU and no 50 MB transient peak.

Granularity (LAGMON_METRICS_GRANULARITY, as KMinion's consumer-group granularity):
`partition` serves every series; `topic` leaves out the per-partition ones (the
group-partition lag, offset and lag seconds with their owner labels, the log
offsets per partition and a share group's share-partitions), so the series count
follows groups x topics, not partitions, and no series carries a member's id, host
or client id: a rebalance changes values, never the set of series. The per-topic
and per-group series are served either way.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from operator import attrgetter
from typing import NamedTuple

from monitor.health.report import HealthReport, ShareHealth
from monitor.models import (
    ClusterSnapshot,
    Granularity,
    GroupSnapshot,
    GroupType,
    PartitionOffsets,
    Rebalance,
    Status,
    TaskKind,
    TopicPartition,
)
from monitor.version import build_labels

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CHUNK_LINES = 2000  # lines per write: the body is never held whole
STOP_CHECK_S = 0.5  # how soon the server sees `stop` between scrapes
# A group's counters (rebalances, offset commits) leave /metrics this long after it was last seen
# (in a snapshot, a rebalance or a commit): short-lived groups do not grow the series for ever.
FORGET_AFTER_MS = 3_600_000


@dataclass
class ExporterState:
    """Everything a scrape shows: the newest good snapshot and counts since the collector started."""

    cluster: str
    granularity: Granularity = Granularity.PARTITION
    snapshot: ClusterSnapshot | None = None
    health: HealthReport | None = None  # of the same cycle as `snapshot`
    rebalances: Counter = field(default_factory=Counter)  # group id -> completed rebalances
    commits: Counter = field(default_factory=Counter)  # (group id, topic) -> offset commits the tail read
    cycles: Counter = field(default_factory=Counter)  # "ok" / "failed" -> cycles
    last_success_s: float | None = None
    last_sampling_ms: int | None = None  # the Kafka part of the newest cycle
    last_cycle_ms: int | None = None  # the whole newest cycle, up to the exporter (which only keeps references)
    from_tail: bool | None = None  # the newest good cycle's committed offsets came from the offsets-topic tail
    build: tuple[tuple[str, str], ...] = ()  # lagmon_build_info's labels: version, python
    collector: object = None  # a coordinated collector's own row (monitor.store.collectors.CollectorRow)
    store_write_errors: int = 0  # cycles the store could not take when they ran
    unstored_cycles: int = 0  # cycles kept until the store takes them
    restarts: int = 0  # times the supervisor started the collector's worker again after it died
    tail_skipped: int = 0  # records the offsets-topic tail's session could not decode or fold
    seen_at: dict[str, int] = field(default_factory=dict)  # group id -> when it was last seen (FORGET_AFTER_MS)


def _forget_gone_groups(state: ExporterState, now: int) -> None:
    """Drop the counters of groups not seen for FORGET_AFTER_MS (a counter that comes back starts at 0,
    which rate() takes for a reset)."""
    _forget_groups(state, {g for g, at in state.seen_at.items() if now - at >= FORGET_AFTER_MS})


def _forget_groups(state: ExporterState, gone: set[str]) -> None:
    if not gone:
        return
    for g in gone:
        del state.seen_at[g]
        state.rebalances.pop(g, None)
    state.commits = Counter({key: n for key, n in state.commits.items() if key[0] not in gone})


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())


def _head(name: str, kind: str, text: str) -> str:
    return f"# HELP {name} {text}\n# TYPE {name} {kind}\n"


def _owners(group: GroupSnapshot | None) -> dict[TopicPartition, str]:
    """Each assigned partition's member_host/consumer_id/client_id labels; none for a share group, whose
    members share every partition (one of them would be named at random and change at every scrape)."""
    if group is None or group.type is GroupType.SHARE:
        return {}
    return {
        tp: _labels(member_host=m.host, consumer_id=m.member_id, client_id=m.client_id)
        for m in group.members
        for tp in m.assignment
    }


_NO_OWNER = _labels(member_host="", consumer_id="", client_id="")


class PartitionLag(NamedTuple):
    """A group-partition with a lag, as the per-partition series show it."""

    labels: str  # up to and with its owner
    topic: str
    committed: int
    lag: int
    seconds: float | None
    seconds_error: float | None  # the true lag is within seconds ± this; +Inf for a lower bound


class GroupLag(NamedTuple):
    """A group the health engine judged and Kafka answered for this cycle."""

    labels: str  # cluster and group
    simple: str  # "true": no member (commits without joining), kafka-lag-exporter's is_simple_consumer
    status: int
    partitions: list[PartitionLag]


class TopicLag(NamedTuple):
    """A group's partitions of one topic, rolled up."""

    topic: str
    sum_lag: int
    max_lag: int
    max_seconds: float | None
    offset_sum: int


class ShareTopic(NamedTuple):
    """A share group's share-partitions of one topic, rolled up."""

    topic: str
    records: tuple[int, int, int]  # by SHARE_STATES
    max_delivery_count: int
    archived_total: int


@dataclass(frozen=True)
class Scrape:
    """What every metric family reads: the state, and what several families need, computed once per scrape."""

    state: ExporterState
    cluster: str  # the cluster label
    per_partition: bool  # Granularity.PARTITION
    groups: list[GroupLag]
    partitions: list[tuple[TopicPartition, PartitionOffsets]]  # answered this cycle, in order
    shares: list[tuple[str, tuple[ShareHealth, ...]]]  # (group labels, share-partitions) of share groups


def compute_exposition(state: ExporterState) -> Iterator[str]:
    """The whole exposition for one scrape, from plain data, one line (or header) at a time: each family
    of METRIC_FAMILIES in turn."""
    scrape = compute_scrape(state)
    for family in METRIC_FAMILIES:
        yield from family(scrape)


def compute_scrape(state: ExporterState) -> Scrape:
    cluster = _labels(cluster_name=state.cluster)
    snapshot, health = state.snapshot, state.health
    per_partition = state.granularity is Granularity.PARTITION
    groups, partitions, shares = [], [], []
    if snapshot is not None:
        partitions = sorted((tp, p) for tp, p in snapshot.partitions.items() if tp not in snapshot.stale_partitions)
    if snapshot is not None and health is not None:
        for group_id, gh in sorted(health.groups.items()):
            group = snapshot.groups.get(group_id)
            if group is not None and group.stale_since is not None:
                continue  # Kafka did not answer for it this cycle: no series rather than an old one
            prefix = f'{cluster},group="{_label(group_id)}"'
            owners = _owners(group) if per_partition else {}
            lags = []
            for p in sorted(gh.partitions, key=lambda p: p.tp):
                if p.lag is None or p.tp in snapshot.stale_partitions:
                    continue
                seconds = None if p.clock is None else p.clock.at(health.at)
                lags.append(
                    PartitionLag(
                        f'{prefix},topic="{_label(p.tp.topic)}",partition="{p.tp.partition}",'
                        f"{owners.get(p.tp, _NO_OWNER)}",
                        p.tp.topic,
                        p.committed,
                        p.lag,
                        None if seconds is None else seconds.seconds,
                        None if seconds is None else seconds.error_bound,
                    )
                )
            simple = "true" if group is None or not group.members else "false"
            groups.append(GroupLag(prefix, simple, int(gh.status), lags))
            if gh.share:
                shares.append((prefix, gh.share))
    return Scrape(state, cluster, per_partition, groups, partitions, shares)


# -- the metric families, in the order a scrape shows them --------------------------


def group_partition_series(scrape: Scrape) -> Iterator[str]:
    """Offset, lag and lag seconds of each group-partition with its owner (partition granularity only)."""
    if not scrape.per_partition:
        return
    for name, text, value in (
        ("kafka_consumergroup_group_offset", "Last committed offset of a group's partition", "committed"),
        ("kafka_consumergroup_group_lag", "Log end minus committed offset, in offsets", "lag"),
        ("kafka_consumergroup_group_lag_seconds", "Estimated lag in seconds", "seconds"),
    ):
        yield _head(name, "gauge", text)
        get = attrgetter(value)
        for group in scrape.groups:
            for p in group.partitions:
                if (v := get(p)) is not None:
                    yield f"{name}{{{p.labels}}} {v}\n"


def group_series(scrape: Scrape) -> Iterator[str]:
    """Each group's highest lag (offsets and seconds) and total lag."""
    yield _head("kafka_consumergroup_group_max_lag", "gauge", "Highest partition lag of a group, in offsets")
    for g in scrape.groups:
        if g.partitions:
            most = max(p.lag for p in g.partitions)
            yield f'kafka_consumergroup_group_max_lag{{{g.labels},is_simple_consumer="{g.simple}"}} {most}\n'
    yield _head("kafka_consumergroup_group_max_lag_seconds", "gauge", "Highest partition lag of a group, in seconds")
    worst = [
        (g, max(known))
        for g in scrape.groups
        if (known := [(p.seconds, p.seconds_error) for p in g.partitions if p.seconds is not None])
    ]
    for g, (seconds, _) in worst:
        yield f'kafka_consumergroup_group_max_lag_seconds{{{g.labels},is_simple_consumer="{g.simple}"}} {seconds}\n'
    yield _head(
        "lagmon_consumergroup_group_max_lag_seconds_error",
        "gauge",
        "Most the true lag can differ from kafka_consumergroup_group_max_lag_seconds, in seconds (+Inf: a lower bound)",
    )
    for g, (_, error) in worst:
        yield (
            f'lagmon_consumergroup_group_max_lag_seconds_error{{{g.labels},is_simple_consumer="{g.simple}"}} '
            f"{'+Inf' if error == math.inf else error}\n"
        )
    yield _head("kafka_consumergroup_group_sum_lag", "gauge", "Total lag of a group, in offsets")
    for g in scrape.groups:
        if g.partitions:
            yield f"kafka_consumergroup_group_sum_lag{{{g.labels}}} {sum(p.lag for p in g.partitions)}\n"


def group_topic_series(scrape: Scrape) -> Iterator[str]:
    """Each group's lag and committed offsets per topic (served at either granularity)."""
    topics = [(g.labels, compute_topic_rollups(g.partitions)) for g in scrape.groups]
    for name, text, value in (
        ("kafka_consumergroup_group_topic_sum_lag", "Total lag of a group on one topic", "sum_lag"),
        ("lagmon_consumergroup_topic_max_lag", "Highest partition lag of a group on one topic, in offsets", "max_lag"),
        (
            "lagmon_consumergroup_topic_max_lag_seconds",
            "Highest partition lag of a group on one topic, in seconds",
            "max_seconds",
        ),
        (
            "lagmon_consumergroup_topic_offset_sum",
            "Sum of a group's committed offsets on one topic (its rate is the group's consumption rate)",
            "offset_sum",
        ),
    ):
        yield _head(name, "gauge", text)
        for labels, rollups in topics:
            for t in rollups:
                if (v := getattr(t, value)) is not None:
                    yield f'{name}{{{labels},topic="{_label(t.topic)}"}} {v}\n'


def partition_series(scrape: Scrape) -> Iterator[str]:
    """Log end and start of each partition (partition granularity only)."""
    if not scrape.per_partition:
        return
    for name, text, attribute in (
        ("kafka_partition_latest_offset", "Log end offset (high watermark)", "log_end"),
        ("kafka_partition_earliest_offset", "Log start offset", "log_start"),
    ):
        yield _head(name, "gauge", text)
        for tp, offsets in scrape.partitions:
            yield (
                f'{name}{{{scrape.cluster},topic="{_label(tp.topic)}",partition="{tp.partition}"}} '
                f"{getattr(offsets, attribute)}\n"
            )


def topic_series(scrape: Scrape) -> Iterator[str]:
    """Each topic's log end and start, summed over its partitions: their rates are produce and deletion."""
    for name, text, attribute in (
        (
            "lagmon_topic_latest_offset_sum",
            "Sum of a topic's log end offsets (its rate is the produce rate)",
            "log_end",
        ),
        ("lagmon_topic_earliest_offset_sum", "Sum of a topic's log start offsets", "log_start"),
    ):
        yield _head(name, "gauge", text)
        sums: Counter = Counter()
        for tp, offsets in scrape.partitions:
            sums[tp.topic] += getattr(offsets, attribute)
        for topic, total in sorted(sums.items()):
            yield f'{name}{{{scrape.cluster},topic="{_label(topic)}"}} {total}\n'


def cycle_time_series(scrape: Scrape) -> Iterator[str]:
    state, cluster = scrape.state, scrape.cluster
    yield _head("kafka_consumergroup_poll_time_ms", "gauge", "Time the newest cycle spent sampling Kafka")
    if state.last_sampling_ms is not None:
        yield f"kafka_consumergroup_poll_time_ms{{{cluster}}} {state.last_sampling_ms}\n"
    yield _head(
        "lagmon_collector_cycle_seconds",
        "gauge",
        "Duration of the newest collector cycle, whole (sampling, store, health, alerts) and its sampling part",
    )
    if state.last_sampling_ms is not None:
        yield f'lagmon_collector_cycle_seconds{{{cluster},part="sampling"}} {state.last_sampling_ms / 1000}\n'
    if state.last_cycle_ms is not None:
        yield f'lagmon_collector_cycle_seconds{{{cluster},part="whole"}} {state.last_cycle_ms / 1000}\n'


def group_counter_series(scrape: Scrape) -> Iterator[str]:
    """Rebalances and offset commits since the start, per group (forgotten FORGET_AFTER_MS after it is gone)."""
    state, cluster = scrape.state, scrape.cluster
    yield _head("lagmon_consumergroup_rebalances_total", "counter", "Rebalances completed since the start")
    for group_id, n in sorted(state.rebalances.items()):
        yield f'lagmon_consumergroup_rebalances_total{{{cluster},group="{_label(group_id)}"}} {n}\n'
    yield _head(
        "lagmon_consumergroup_offset_commits_total",
        "counter",
        "Offsets committed since the start, one per partition, as the offsets-topic tail read them",
    )
    for (group_id, topic), n in sorted(state.commits.items()):
        yield (
            f'lagmon_consumergroup_offset_commits_total{{{cluster},group="{_label(group_id)}",'
            f'topic="{_label(topic)}"}} {n}\n'
        )


def status_series(scrape: Scrape) -> Iterator[str]:
    yield _head(
        "lagmon_consumergroup_status", "gauge", "Group health: " + ", ".join(f"{s.value} {s.name}" for s in Status)
    )
    for g in scrape.groups:
        yield f"lagmon_consumergroup_status{{{g.labels}}} {g.status}\n"


def group_info_series(scrape: Scrape) -> Iterator[str]:
    """Each group's type (classic, consumer, share, streams) and state."""
    snapshot = scrape.state.snapshot
    yield _head("lagmon_consumergroup_info", "gauge", "A group's type (classic, consumer, share, streams) and state")
    for group_id, g in sorted(snapshot.groups.items()) if snapshot is not None else ():
        yield (
            f'lagmon_consumergroup_info{{{scrape.cluster},group="{_label(group_id)}",type="{_label(str(g.type))}",'
            f'state="{_label(str(g.state))}"}} 1\n'
        )


def share_partition_series(scrape: Scrape) -> Iterator[str]:
    """A share group's share-partitions (KIP-932; partition granularity only): start offset, records in
    flight by state, the most deliveries of one. Their lag is in kafka_consumergroup_* already (KIP-1226)."""
    if not scrape.per_partition:
        return
    yield _head("lagmon_sharegroup_start_offset", "gauge", "Share-partition start offset: records before it are done")
    for where, sh in _share_partitions(scrape.shares):
        if sh.start_offset >= 0:  # -1: the share coordinator has not said
            yield f"lagmon_sharegroup_start_offset{{{where}}} {sh.start_offset}\n"
    yield _head("lagmon_sharegroup_records", "gauge", "Records after a share-partition's start offset, by state")
    for where, sh in _share_partitions(scrape.shares):
        for record_state in SHARE_STATES:
            yield f'lagmon_sharegroup_records{{{where},state="{record_state}"}} {getattr(sh, record_state)}\n'
    yield _head(
        "lagmon_sharegroup_max_delivery_count",
        "gauge",
        "The most deliveries a record in flight of a share-partition has had (archived at the delivery limit)",
    )
    for where, sh in _share_partitions(scrape.shares):
        yield f"lagmon_sharegroup_max_delivery_count{{{where}}} {sh.max_delivery_count}\n"


def share_topic_series(scrape: Scrape) -> Iterator[str]:
    """A share group's records in flight per topic (served at either granularity)."""
    topics = [(labels, compute_share_topic_rollups(share)) for labels, share in scrape.shares]
    yield _head("lagmon_sharegroup_topic_records", "gauge", "Records in flight of a share group on one topic by state")
    for labels, rollups in topics:
        for t in rollups:
            where = f'{labels},topic="{_label(t.topic)}"'
            for record_state, n in zip(SHARE_STATES, t.records, strict=True):
                yield f'lagmon_sharegroup_topic_records{{{where},state="{record_state}"}} {n}\n'
    yield _head(
        "lagmon_sharegroup_topic_max_delivery_count",
        "gauge",
        "The most deliveries a record in flight of a share group on one topic has had",
    )
    for labels, rollups in topics:
        for t in rollups:
            yield (
                f'lagmon_sharegroup_topic_max_delivery_count{{{labels},topic="{_label(t.topic)}"}} '
                f"{t.max_delivery_count}\n"
            )
    yield _head(
        "lagmon_sharegroup_archived_records_total",
        "counter",
        "Records a share group gave up on (archived) as lagmon saw them: the rises of the archived count",
    )
    for labels, rollups in topics:
        for t in rollups:
            yield f'lagmon_sharegroup_archived_records_total{{{labels},topic="{_label(t.topic)}"}} {t.archived_total}\n'


def streams_series(scrape: Scrape) -> Iterator[str]:
    """A streams group's members and tasks by kind (KIP-1071)."""
    snapshot = scrape.state.snapshot
    groups = sorted(snapshot.groups.items()) if snapshot is not None else []
    streams = [(group_id, g) for group_id, g in groups if g.type is GroupType.STREAMS]
    yield _head("lagmon_streamsgroup_members", "gauge", "Members (stream threads) of a streams group")
    for group_id, g in streams:
        yield f'lagmon_streamsgroup_members{{{scrape.cluster},group="{_label(group_id)}"}} {len(g.members)}\n'
    yield _head("lagmon_streamsgroup_tasks", "gauge", "Tasks a streams group's members run, by kind")
    for group_id, g in streams:
        for kind in TaskKind:
            n = sum(len(m.streams.tasks.of(kind)) for m in g.members if m.streams is not None)
            yield f'lagmon_streamsgroup_tasks{{{scrape.cluster},group="{_label(group_id)}",kind="{kind}"}} {n}\n'


def collector_series(scrape: Scrape) -> Iterator[str]:
    """The collector itself: cycles, restarts, the tail's skipped records, the store, build, last success."""
    state, cluster = scrape.state, scrape.cluster
    yield _head("lagmon_collector_cycles_total", "counter", "Collector cycles by outcome")
    for outcome, n in sorted(state.cycles.items()):
        yield f'lagmon_collector_cycles_total{{{cluster},outcome="{outcome}"}} {n}\n'
    yield _head("lagmon_collector_restarts_total", "counter", "Times the collector's worker died and was started again")
    yield f"lagmon_collector_restarts_total{{{cluster}}} {state.restarts}\n"
    yield _head(
        "lagmon_offsets_tail_records_skipped",
        "gauge",
        "Records of __consumer_offsets the tail's current session could not decode or fold (each named in the log)",
    )
    yield f"lagmon_offsets_tail_records_skipped{{{cluster}}} {state.tail_skipped}\n"
    yield _head("lagmon_store_write_errors_total", "counter", "Cycles the store could not take when they ran")
    yield f"lagmon_store_write_errors_total{{{cluster}}} {state.store_write_errors}\n"
    yield _head(
        "lagmon_store_unstored_cycles", "gauge", "Cycles kept in memory until the store takes them (0: all stored)"
    )
    yield f"lagmon_store_unstored_cycles{{{cluster}}} {state.unstored_cycles}\n"
    yield _head("lagmon_build_info", "gauge", "Which lagmon and Python serve these metrics (always 1)")
    if state.build:
        yield f"lagmon_build_info{{{_labels(**dict(state.build))}}} 1\n"
    yield _head(
        "lagmon_collector_last_success_timestamp_seconds", "gauge", "When the newest successful cycle was taken"
    )
    if state.last_success_s is not None:
        yield f"lagmon_collector_last_success_timestamp_seconds{{{cluster}}} {state.last_success_s}\n"
    yield _head(
        "lagmon_collector_offsets_from_tail",
        "gauge",
        "1 when the newest good cycle read committed offsets from the caught-up offsets-topic tail, 0 from OffsetFetch",
    )
    if state.from_tail is not None:
        yield f"lagmon_collector_offsets_from_tail{{{cluster}}} {int(state.from_tail)}\n"
    yield from _coordinated_series(state.collector, cluster)


def _coordinated_series(row, cluster: str) -> Iterator[str]:
    """A coordinated collector (`--shard kafka`): what it holds of the cluster, and how far its tail is behind."""
    if row is None:
        return
    labels = f'{cluster},collector="{_label(row.name)}"'
    yield _head("lagmon_collector_partitions_held", "gauge", "__consumer_offsets partitions Kafka assigned it")
    yield f"lagmon_collector_partitions_held{{{labels}}} {len(row.partitions)}\n"
    yield _head("lagmon_collector_groups_held", "gauge", "Groups of those partitions this collector watches")
    yield f"lagmon_collector_groups_held{{{labels}}} {row.groups}\n"
    if row.tail_lag is not None:
        yield _head(
            "lagmon_collector_tail_lag_records",
            "gauge",
            "Records of its __consumer_offsets partitions this collector's tail has not read yet",
        )
        yield f"lagmon_collector_tail_lag_records{{{labels}}} {row.tail_lag}\n"


METRIC_FAMILIES: tuple[Callable[[Scrape], Iterator[str]], ...] = (
    group_partition_series,
    group_series,
    group_topic_series,
    partition_series,
    topic_series,
    cycle_time_series,
    group_counter_series,
    status_series,
    group_info_series,
    share_partition_series,
    share_topic_series,
    streams_series,
    collector_series,
)
SHARE_STATES = ("acknowledged", "archived", "redelivering")  # lagmon_sharegroup_records' `state` label


def _share_partitions(shares) -> Iterator[tuple[str, ShareHealth]]:
    """(labels up to the partition, share-partition) of `shares`, (group labels, share-partitions) pairs."""
    for prefix, share in shares:
        for sh in share:
            yield f'{prefix},topic="{_label(sh.tp.topic)}",partition="{sh.tp.partition}"', sh


def compute_share_topic_rollups(share: Iterable[ShareHealth]) -> list[ShareTopic]:
    """A group's share-partitions per topic, in topic order: records by state and archived summed, the most
    deliveries."""
    out: dict[str, list] = {}
    for sh in share:
        row = out.setdefault(sh.tp.topic, [0, 0, 0, 0, 0])
        row[0] += sh.acknowledged
        row[1] += sh.archived
        row[2] += sh.redelivering
        row[3] = max(row[3], sh.max_delivery_count)
        row[4] += sh.archived_total
    return [ShareTopic(topic, (r[0], r[1], r[2]), r[3], r[4]) for topic, r in sorted(out.items())]


def compute_topic_rollups(partitions: Iterable[PartitionLag]) -> list[TopicLag]:
    """A group's partitions per topic, in topic order: lag summed and its highest, the highest lag in
    seconds (None if none is known), committed offsets summed."""
    out: dict[str, list] = {}
    for p in partitions:
        row = out.get(p.topic)
        if row is None:
            out[p.topic] = [p.lag, p.lag, p.seconds, p.committed]
            continue
        row[0] += p.lag
        row[1] = max(row[1], p.lag)
        if p.seconds is not None:
            row[2] = p.seconds if row[2] is None else max(row[2], p.seconds)
        row[3] += p.committed
    return [TopicLag(topic, *row) for topic, row in sorted(out.items())]


class MetricsExporter:
    """The collector's side: observe each cycle (last of its observers); Prometheus's side: scrape."""

    def __init__(
        self,
        cluster: str,
        granularity: str = Granularity.PARTITION,
        build: dict[str, str] | None = None,
        shard=None,
    ):
        """`build`: lagmon_build_info's labels (default: this lagmon's version and Python's); `shard`: a
        coordinated collector's KafkaShard, whose groups let go drop their counters at once (the collector
        that took them counts them now: two series of one group would add up twice)."""
        self.shard = shard
        self._shard_version = None if shard is None else shard.version
        if granularity not in {g.value for g in Granularity}:
            raise ValueError(f"granularity {granularity!r} is not one of {', '.join(Granularity)}")
        self._state = ExporterState(cluster, Granularity(granularity), build=tuple((build or build_labels()).items()))
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def __call__(self, result, snapshot: ClusterSnapshot | None, report: HealthReport | None) -> None:
        """A collector observer; `result.duration_ms` is the cycle so far, i.e. all of it but this call."""
        self.observe(
            snapshot,
            report,
            result.duration_ms,
            result.sampling_ms,
            result.rebalances_completed,
            result.offsets_from_tail,
            result.offset_commits,
            result.store_error is not None,
            result.unstored_cycles,
            result.tail_skipped,
        )

    def observe(
        self,
        snapshot: ClusterSnapshot | None,
        report: HealthReport | None,
        cycle_ms: int,
        sampling_ms: int | None = None,
        completed: Iterable[Rebalance] = (),
        from_tail: bool = False,
        commits: Iterable[tuple[str, str, int]] = (),
        store_failed: bool = False,
        unstored: int = 0,
        tail_skipped: int = 0,
    ) -> None:
        """One cycle; `commits` are (group, topic, offset commits) since the previous one; `store_failed`:
        the store did not take it, `unstored` cycles wait for it."""
        with self._lock:
            state = self._state
            state.store_write_errors += store_failed
            state.unstored_cycles = unstored
            state.tail_skipped = tail_skipped
            state.last_cycle_ms = cycle_ms
            state.last_sampling_ms = sampling_ms
            state.cycles["ok" if snapshot is not None else "failed"] += 1
            if snapshot is not None:
                state.snapshot = snapshot
                state.health = report
                state.last_success_s = snapshot.taken_at / 1000
                state.from_tail = from_tail
            completed, commits = list(completed), list(commits)
            for r in completed:
                state.rebalances[r.group_id] += 1
            for group_id, topic, n in commits:
                state.commits[group_id, topic] += n
            if snapshot is not None and self.shard is not None and self.shard.version != self._shard_version:
                self._shard_version = self.shard.version
                _forget_groups(state, {g for g in state.seen_at if not self.shard.owns(g)})
            if snapshot is not None:
                now = snapshot.taken_at
                state.seen_at.update(dict.fromkeys(snapshot.groups, now))
                state.seen_at.update(dict.fromkeys((r.group_id for r in completed), now))
                state.seen_at.update(dict.fromkeys((group_id for group_id, _, _ in commits), now))
                _forget_gone_groups(state, now)

    def observe_collector(self, row) -> None:
        """A coordinated collector's own row (monitor.roster): what it holds, for lagmon_collector_*_held."""
        with self._lock:
            self._state.collector = row

    def count_restarts(self, restarts: int) -> None:
        """How many workers of this collector died before this one (monitor/supervisor.py)."""
        with self._lock:
            self._state.restarts = restarts

    def exposition(self) -> Iterator[str]:
        """One scrape: the state is copied under the lock (snapshots and reports are never changed)."""
        with self._lock:
            state = replace(
                self._state,
                rebalances=Counter(self._state.rebalances),
                cycles=Counter(self._state.cycles),
                commits=Counter(self._state.commits),
            )
        return compute_exposition(state)

    def bind(self, port: int, address: str = "127.0.0.1") -> int:
        """Take the port now (OSError if in use: a bad setting stops the start-up); `start` serves it. Returns it."""
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                lines = []
                for line in exporter.exposition():
                    lines.append(line)
                    if len(lines) >= CHUNK_LINES:
                        self.wfile.write("".join(lines).encode())
                        lines.clear()
                self.wfile.write("".join(lines).encode())

            def log_message(self, *args):  # no access log lines in the collector's output
                pass

        server = ThreadingHTTPServer((address, port), Handler)
        server.daemon_threads = True
        server.timeout = STOP_CHECK_S  # handle_request returns at least this often
        self._server = server
        return server.server_address[1]

    def start(self, stop: threading.Event) -> threading.Thread:
        """Serve scrapes (each in a thread of its own) on the bound port until `stop` is set, then close it."""
        server = self._server
        if server is None:
            raise RuntimeError("MetricsExporter.start before bind")

        def serve() -> None:
            with server:
                while not stop.is_set():
                    server.handle_request()

        thread = threading.Thread(target=serve, name="metrics", daemon=True)
        thread.start()
        return thread

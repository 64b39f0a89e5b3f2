"""monitor.wiring: what `collect` builds, in the order its parts start, and the tail held back until a cycle is done."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from monitor import wiring
from monitor.alerts.notify import OutboxSender
from monitor.collector import Retention
from monitor.config import load_settings
from monitor.exporter import MetricsExporter
from monitor.shard import Shard
from monitor.share_tail import ShareStateTail
from monitor.tail import OffsetsTail
from monitor.wiring import AfterFirstCycle, CollectOptions, build_collector, read_tails_to_end

NO_BROKER = {"bootstrap.servers": "127.0.0.1:9"}  # librdkafka connects only when asked


@pytest.fixture
def build(sqlite_url, monkeypatch):
    for name in ("LAGMON_CHANNELS", "LAGMON_ALERT_RULES", "LAGMON_OFFSETS_TOPIC"):
        monkeypatch.delenv(name, raising=False)

    def build_with(tail_mode="auto", **options):
        settings = load_settings({"LAGMON_DATABASE_URL": sqlite_url, "LAGMON_OFFSETS_TOPIC": tail_mode})
        defaults = {"interval_s": 1.0, "shard": Shard(), "metrics_port": 0, "metrics_address": "127.0.0.1"}
        return build_collector(settings, CollectOptions(**{**defaults, **options}), NO_BROKER)

    return build_with


def kinds(process) -> list[type]:
    return [type(p.part) if isinstance(p, AfterFirstCycle) else type(p) for p in process.parts]


def test_collect_starts_retention_the_tails_the_exporter_then_the_sender(build):
    process = build()
    assert kinds(process) == [Retention, OffsetsTail, ShareStateTail, MetricsExporter, OutboxSender]
    assert isinstance(process.parts[1], AfterFirstCycle)  # the tail waits for the first cycle


@pytest.mark.parametrize(("interval_s", "wait_s"), [(1.0, 1.0), (5.0, 2.5), (10.0, 5.0)])
def test_a_cycle_waits_for_the_tail_up_to_half_an_interval_one_second_at_least(build, interval_s, wait_s):
    # 100,000 group-partitions committing every 5 s: the tail needs more than a second for each burst, and
    # OffsetFetch for 5,000 groups instead made cycles of 20 s (bench_collector.py --interval 5)
    assert build(interval_s=interval_s).sampler.tail_wait_s == wait_s


def test_retention_runs_on_the_leading_shard_only(build):
    assert Retention in kinds(build(shard=Shard(1, 3)))
    assert Retention not in kinds(build(shard=Shard(2, 3)))


def test_once_starts_the_tails_at_once_then_the_exporter_and_no_sender(build):
    assert kinds(build(once=True)) == [OffsetsTail, ShareStateTail, MetricsExporter]  # read first: no AfterFirstCycle
    assert kinds(build(once=True, metrics_port=None, tail_mode="off")) == []


def test_without_the_tail_there_is_no_share_tail_either(build):
    assert kinds(build(tail_mode="off")) == [Retention, MetricsExporter, OutboxSender]


class Recorded:
    def __init__(self):
        self.started = threading.Event()

    def start(self, stop: threading.Event) -> threading.Thread:
        self.started.set()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        return thread


def test_a_part_after_the_first_cycle_starts_then_and_is_joined_through_its_starter(build):
    collector = build().collector
    part, stop = Recorded(), threading.Event()
    starter = AfterFirstCycle(collector, part).start(stop)
    assert not part.started.wait(0.5)
    collector.cycled.set()
    assert part.started.wait(5)
    stop.set()
    starter.join(5)
    assert not starter.is_alive()


def test_a_part_after_the_first_cycle_never_starts_if_stopped_before_it(build):
    collector = build().collector
    part, stop = Recorded(), threading.Event()
    starter = AfterFirstCycle(collector, part).start(stop)
    stop.set()
    starter.join(5)
    assert not starter.is_alive() and not part.started.is_set()


class Reading:
    """A tail as `read_tails_to_end` sees it: records read so far, caught up (or off) when told."""

    def __init__(self):
        self.records_read, self.caught_up_at, self.caught_up, self.disabled = 0, None, False, False
        self.failing = False


def test_once_waits_for_both_tails_to_read_to_their_end(monkeypatch):
    monkeypatch.setattr(wiring, "PROGRESS_EVERY_S", 0.0)
    tail, share = Reading(), Reading()
    threading.Timer(0.3, lambda: setattr(tail, "caught_up_at", 1.0)).start()
    threading.Timer(0.6, lambda: setattr(share, "caught_up", True)).start()
    started = time.monotonic()
    assert read_tails_to_end(tail, share, 30)
    assert 0.6 <= time.monotonic() - started < 5


def test_once_says_how_far_the_tails_are_and_gives_up_at_the_bound(monkeypatch, caplog):
    monkeypatch.setattr(wiring, "PROGRESS_EVERY_S", 0)  # a progress line every turn, however slow the machine
    caplog.set_level(logging.INFO, logger="lagmon")
    tail, share = Reading(), Reading()
    tail.records_read, share.records_read = 1_234_567, 89
    assert not read_tails_to_end(tail, share, 0.5)
    said = [r.getMessage() for r in caplog.records]
    assert "reading the tails to their end" in said[0]
    assert "__consumer_offsets 1,234,567 records, __share_group_state 89 records" in said[0]
    assert said[-1] == (
        "the offsets-topic tails did not read to their end within 0.5s (--tail-wait; __consumer_offsets 1,234,567 "
        "records, __share_group_state 89 records read): this cycle has no share or streams groups"
    )


def test_a_tail_turned_off_is_not_waited_for():
    tail, share = Reading(), Reading()
    tail.disabled = share.disabled = True
    assert read_tails_to_end(tail, share, 30)


def test_once_does_not_wait_for_a_tail_that_cannot_read(caplog):
    """Kafka unreachable or refusing: the tail said why; the cycle goes on at once and says it too."""
    tail, share = Reading(), Reading()
    share.failing = True
    started = time.monotonic()
    assert not read_tails_to_end(tail, share, 30)
    assert time.monotonic() - started < 1
    assert "cannot read (see above): this cycle has no share or streams groups" in caplog.records[-1].getMessage()


def test_once_does_not_wait_for_the_tails_when_no_broker_can_be_reached():
    """librdkafka told the sampler's client that every broker refused (or could not be resolved): the tails
    would only time out, so the cycle goes on at once and says why."""
    tail = Reading()
    started = time.monotonic()
    assert not read_tails_to_end(tail, None, 30, unreachable=lambda: True)
    assert time.monotonic() - started < 1

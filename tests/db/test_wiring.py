"""monitor.wiring: what `collect` builds, in the order its parts start, and the tail held back until a cycle is done."""

from __future__ import annotations

import threading

import pytest

from monitor.alerts.notify import OutboxSender
from monitor.collector import Retention
from monitor.config import load_settings
from monitor.exporter import MetricsExporter
from monitor.shard import Shard
from monitor.share_tail import ShareStateTail
from monitor.tail import OffsetsTail
from monitor.wiring import AfterFirstCycle, CollectOptions, build_collector

NO_BROKER = {"bootstrap.servers": "127.0.0.1:9"}  # librdkafka connects only when asked


@pytest.fixture
def build(sqlite_url, monkeypatch):
    for name in ("LAGMON_CHANNELS", "LAGMON_ALERT_RULES", "LAGMON_OFFSETS_TOPIC"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings({"LAGMON_DATABASE_URL": sqlite_url})

    def build_with(**options):
        defaults = {"interval_s": 1.0, "shard": Shard(), "metrics_port": 0, "metrics_address": "127.0.0.1"}
        return build_collector(settings, CollectOptions(**{**defaults, **options}), NO_BROKER)

    return build_with


def kinds(process) -> list[type]:
    return [type(p.part) if isinstance(p, AfterFirstCycle) else type(p) for p in process.parts]


def test_collect_starts_retention_the_tails_the_exporter_then_the_sender(build):
    process = build()
    assert kinds(process) == [Retention, OffsetsTail, ShareStateTail, MetricsExporter, OutboxSender]
    assert isinstance(process.parts[1], AfterFirstCycle)  # the tail waits for the first cycle


def test_retention_runs_on_the_leading_shard_only(build):
    assert Retention in kinds(build(shard=Shard(1, 3)))
    assert Retention not in kinds(build(shard=Shard(2, 3)))


def test_once_starts_only_the_exporter_and_no_tail(build):
    assert kinds(build(once=True)) == [MetricsExporter]
    assert kinds(build(once=True, metrics_port=None)) == []
    assert build(once=True).collector.tail is None


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

"""The collaborators' Protocols (monitor/ports.py): the real parts fit them, and every long-running part stops one way.

Tests' own fakes are checked where they live (tests/db/test_alert_engine.py, tests/db/test_tail.py).
"""

from __future__ import annotations

import threading
import time
import urllib.request

import pytest
from ports_check import misfits

from monitor.alerts.notify import OutboxSender
from monitor.collector import Retention
from monitor.exporter import MetricsExporter
from monitor.kafka import KafkaSampler, OffsetsTopicReader, RecordTimestampReader
from monitor.ports import Background, RecordTimestamps, Sampler, Sender, Tail
from monitor.store import RetentionPolicy
from monitor.tail import OffsetsReader, OffsetsTail


def real_parts():
    """(the object, or the class where making one would open a Kafka client, and the Protocol it must fit)."""
    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c")  # librdkafka connects only when asked
    tail = OffsetsTail(lambda: OffsetsTopicReader({}), None, "c", span_ms=1)
    sender = OutboxSender(None, "c", {})
    return [
        (sampler, Sampler),
        (tail, Tail),
        (OffsetsTopicReader({}), OffsetsReader),
        (sender, Sender),
        (RecordTimestampReader, RecordTimestamps),
        (tail, Background),
        (sender, Background),
        (MetricsExporter("c"), Background),
        (Retention(None, "c", RetentionPolicy(), lambda: 0), Background),
    ]


@pytest.mark.parametrize("impl, proto", real_parts(), ids=lambda x: getattr(x, "__name__", type(x).__name__))
def test_the_real_parts_fit_their_protocols(impl, proto):
    assert misfits(impl, proto) == []
    assert isinstance(impl, (type, proto))  # runtime_checkable: the names are there


def test_a_misfit_is_named():
    class Half:
        def fetch_snapshot(self, when):
            pass

    assert misfits(Half(), Sampler) == ["fetch_snapshot: parameter 1 should be 'now_ms'"]


def ends_soon(thread: threading.Thread, stop: threading.Event, within_s: float = 2.0) -> bool:
    stop.set()
    thread.join(within_s)
    return not thread.is_alive()


def test_the_sender_ends_soon_after_stop_even_while_it_waits(caplog):
    stop = threading.Event()
    thread = OutboxSender(None, "c", {}).start(stop)  # no database: it fails (and logs it), then waits 5 s
    failed = lambda: [r for r in caplog.records if r.name == "lagmon.alerts"]  # noqa: E731
    deadline = time.monotonic() + 5
    while not failed() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert failed() and ends_soon(thread, stop)


def test_the_exporter_serves_until_stop_then_closes_its_port():
    exporter = MetricsExporter("c")
    port = exporter.bind(0)
    stop = threading.Event()
    thread = exporter.start(stop)
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert "lagmon_collector_cycles_total" in body
    assert ends_soon(thread, stop)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_retention_ends_soon_after_stop():
    stop = threading.Event()
    assert ends_soon(Retention(None, "c", RetentionPolicy(), lambda: 0).start(stop), stop)

"""The collaborators' Protocols (monitor/ports.py): the real parts fit them.

Tests' own fakes are checked where they live (tests/db/test_alert_engine.py, tests/db/test_offsets_tail_store.py).
"""

from __future__ import annotations

import pytest
from ports_check import misfits

from monitor.alerts.notify import OutboxSender
from monitor.kafka import KafkaSampler, OffsetsTopicReader, RecordTimestampReader
from monitor.ports import RecordTimestamps, Sampler, Sender, Tail
from monitor.tail import OffsetsReader, OffsetsTail


def real_parts():
    """(the object, or the class where making one would open a Kafka client, and the Protocol it must fit)."""
    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c")  # librdkafka connects only when asked
    tail = OffsetsTail(lambda: OffsetsTopicReader({}), None, "c", span_ms=1)
    sender = OutboxSender(None, {})
    return [
        (sampler, Sampler),
        (tail, Tail),
        (OffsetsTopicReader({}), OffsetsReader),
        (sender, Sender),
        (RecordTimestampReader, RecordTimestamps),
    ]


@pytest.mark.parametrize("impl, proto", real_parts(), ids=lambda x: getattr(x, "__name__", type(x).__name__))
def test_the_real_parts_fit_their_protocols(impl, proto):
    assert misfits(impl, proto) == []
    assert isinstance(impl, (type, proto))  # runtime_checkable: the names are there


def test_a_misfit_is_named():
    class Half:
        def fetch_snapshot(self, when):
            pass

    assert misfits(Half(), Sampler) == [
        "no attribute offsets_from_tail",
        "fetch_snapshot: parameter 1 should be 'now_ms'",
    ]

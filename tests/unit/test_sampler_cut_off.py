"""A cycle fails at once when librdkafka says no broker can be reached, and only on news of this cycle."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError

from monitor.kafka import KafkaSampler
from monitor.models import KafkaUnavailable

DOWN = KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down")


class _Admin:
    """Answers an empty listing after `answer_s`, and hands `queued` errors to the error callback on poll,
    as librdkafka does (its callbacks run only from poll)."""

    def __init__(self, error_cb, answer_s: float):
        self.error_cb, self.answer_s, self.queued = error_cb, answer_s, []

    def poll(self, timeout=None):
        while self.queued:
            self.error_cb(self.queued.pop(0))

    def list_consumer_groups(self, request_timeout=None):
        future = concurrent.futures.Future()
        threading.Timer(self.answer_s, future.set_result, [SimpleNamespace(valid=[], errors=[])]).start()
        return future

    def list_topics(self, timeout=None):
        return SimpleNamespace(topics={})


def sampler_with(answer_s: float) -> tuple[KafkaSampler, _Admin]:
    sampler = KafkaSampler({"bootstrap.servers": "127.0.0.1:9"}, "c1")
    sampler.admin = admin = _Admin(sampler._config["error_cb"], answer_s)
    return sampler, admin


def test_a_client_told_every_broker_is_down_fails_the_cycle_without_waiting_for_the_answer():
    sampler, admin = sampler_with(answer_s=5.0)
    admin.queued.append(DOWN)  # said as the client started, before any request
    started = time.monotonic()
    with pytest.raises(KafkaUnavailable, match="1/1 brokers are down"):
        sampler.fetch_snapshot()
    assert time.monotonic() - started < 1


def test_an_outage_reported_between_cycles_and_over_fails_no_cycle():
    """librdkafka says "all brokers down" once, when it happens: told it after a cycle, the next one
    cannot know whether it is over, so it asks and waits for the answer as usual."""
    sampler, admin = sampler_with(answer_s=0.3)
    assert sampler.fetch_snapshot().errors == ()
    admin.queued.append(DOWN)
    assert sampler.fetch_snapshot().errors == ()

"""bench/stage_profile.py reads py-spy's raw samples into shares per thread and stage."""

from __future__ import annotations

from stage_profile import compute_stage_shares

MAIN = "thread (101): MainThread;main (monitor/__main__.py:286);Collector._cycle (monitor/collector.py:350)"
RAW = f"""\
{MAIN};HealthStage.judge (monitor/health/stage.py:62) 6
{MAIN};KafkaSampler.fetch_snapshot (monitor/kafka/sampler.py:230) 2
{MAIN};Collector._wait (monitor/collector.py:373) 2
thread (202): offsets-tail;OffsetsTail._batch (monitor/tail.py:310);TailState.apply (history.py:186) 3
thread (303): Thread-4 (process_request_thread);MetricsExporter.bind.<locals>.Handler.do_GET (exporter.py:90) 1
"""


def test_samples_go_to_the_first_stage_on_their_stack_and_threads_keep_their_names():
    names, shares = compute_stage_shares(RAW)
    assert names == {101: "MainThread", 202: "offsets-tail", 303: "Thread-4 (process_request_thread)"}
    assert shares["MainThread"] == [
        ("health: judging every group", 0.6),
        ("sampling: Kafka's answers", 0.2),
        ("other", 0.2),
    ]
    assert shares["offsets-tail"] == [("tail: decode and fold", 1.0)]
    assert shares["Thread-4 (process_request_thread)"] == [("exporter", 1.0)]

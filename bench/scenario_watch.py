"""Run a sim scenario while lagmon's collector watches it, then score lagmon against the truth file.

Shared by the rebalance tests and bench/bench_rebalance_recall.py: one or more
collectors (one per polling interval, each with its own database) sample the
scenario's group in threads while the scenario runs as a real subprocess.
`run_collector` runs one hand-built collector as `collect` does (the offsets-tail
tests use it too). The tests import this module from here (pytest.ini puts bench/
on their path): a benchmark imports nothing from tests/.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from monitor.collector import Collector
from monitor.kafka import KafkaSampler, fetch_offsets_topic_ends
from monitor.models import Rebalance
from monitor.sim.recall import Recall, compute_recall, truth_rebalance_times
from monitor.sim.truth import phase_ts, read_truth
from monitor.store import Store, make_engine, read_rebalances, upgrade
from monitor.tail import build_offsets_tail

SLACK_MS = 500


def watch_scenario(
    bootstrap: str,
    scenario: str,
    workdir: Path,
    suffix: str,
    duration_s: float,
    intervals: tuple[float, ...] = (1.0,),
    tail: bool = False,
) -> tuple[dict[float, Recall], dict[float, list[Rebalance]], list[dict]]:
    """(recall per interval, every recorded rebalance per interval, truth lines).

    With `tail`, one more collector (key "tail": 1 s polling plus the offsets-topic
    tail) watches too, into its own database `workdir / f"{scenario}-tail.db"`.
    """
    group = f"sim-{scenario}-{suffix}-group"
    collectors = {}
    for interval in (*intervals, *(["tail"] if tail else [])):
        url = f"sqlite:///{workdir / f'{scenario}-{interval}.db'}"
        upgrade(url)
        store = Store(make_engine(url))
        offsets_tail = (
            build_offsets_tail({"bootstrap.servers": bootstrap}, store, "sim", mode="on", span_s=3600)
            if interval == "tail"
            else None
        )
        sampler = KafkaSampler(
            {"bootstrap.servers": bootstrap}, "sim", wants_group=lambda g: g == group, offsets_tail=offsets_tail
        )
        collectors[interval] = Collector(sampler, store, "sim", tail=offsets_tail)
    stop = threading.Event()
    threads = [
        threading.Thread(target=run_collector, args=(c, 1.0 if interval == "tail" else interval, stop), daemon=True)
        for interval, c in collectors.items()
    ]
    for t in threads:
        t.start()
    truth_path = workdir / f"{scenario}.truth.jsonl"
    try:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "monitor",
                "sim",
                scenario,
                "--bootstrap",
                bootstrap,
                "--duration",
                str(duration_s),
                "--truth",
                str(truth_path),
                "--suffix",
                suffix,
            ],
            check=True,
            capture_output=True,
            timeout=duration_s + 120,
        )
        time.sleep(max(intervals) + 1)  # let the slowest collector see the end of the last rebalance
        if tail:  # and the tail read everything written until now (a loaded machine may slow it down)
            offsets_tail = collectors["tail"].tail
            admin = AdminClient({"bootstrap.servers": bootstrap})
            ends = fetch_offsets_topic_ends(admin, offsets_tail.partitions) if offsets_tail.partitions else None
            assert ends and offsets_tail.wait_until_read(ends, 30), "the offsets-topic tail did not catch up"
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    truth = read_truth(truth_path)
    rounds = truth_rebalance_times(truth, group)
    now = int(time.time() * 1000)
    recorded = {
        iv: [row.rebalance for row in read_rebalances(c.store.engine, "sim", group)] for iv, c in collectors.items()
    }
    return (
        {iv: compute_recall(rounds, during_run(rows, truth, now), SLACK_MS, now) for iv, rows in recorded.items()},
        recorded,
        truth,
    )


def during_run(rebalances: list[Rebalance], truth: list[dict], now: int) -> list[Rebalance]:
    """Rows that began after the scenario settled and ended before its shutdown, the span the truth covers.

    The group's own formation ends at the first sample after `settled` and so is left out by its start.
    The shutdown's rebalance ends after the first member began leaving at `stop`, and so is left out by
    its end (a 1 s sample can see it within the slack: seen once in four runs on a loaded machine). A
    leaving member revokes first and logs "leave" only once it has left, which the group may have seen
    before (seen: a sample 1 ms before the "leave" line showed the group empty), so its revocation counts.
    """
    settled, stop = phase_ts(truth, "settled") or 0, phase_ts(truth, "stop") or now
    leaving = ("leave", "crash", "revoked")
    first_leave = min((e["ts"] for e in truth if e["event"] in leaving and e["ts"] >= stop), default=None)
    end = stop + SLACK_MS if first_leave is None else min(stop + SLACK_MS, first_leave)
    return [r for r in rebalances if settled <= r.started_at and (r.ended_at or now) < end]


def run_collector(collector, interval_s: float, stop) -> None:
    """A Collector built by hand, run as `collect` runs it (monitor.wiring): its tail, if any, starts after
    the first cycle and is joined when `stop` ends the loop."""
    from monitor.collector import STOP_WAIT_S
    from monitor.stopping import run_parts
    from monitor.wiring import AfterFirstCycle

    parts = [] if collector.tail is None else [AfterFirstCycle(collector, collector.tail)]
    run_parts(parts, stop, lambda: collector.run(interval_s, stop), STOP_WAIT_S)

"""Real workload -> collector -> SQLite -> analyze -> result tables, checked against the sim's truth file."""

from __future__ import annotations

import itertools
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from scenario_watch import watch_scenario

from monitor.collector import Collector
from monitor.kafka import KafkaSampler
from monitor.sim import read_truth
from monitor.sim.truth import phase_ts, produced_rate
from monitor.store import Store, make_engine, read_rebalance_stats, read_rebalances, read_trends, upgrade
from monitor.store.offsets_tail import read_generations
from spark.main import analyze_once

pytestmark = pytest.mark.integration
PROJECT_DIR = Path(__file__).resolve().parents[2]


def stop_at_the_end(sim: subprocess.Popen, truth_path: Path, stop: threading.Event) -> None:
    """Stop sampling when the workload stops producing, so lagmon and the truth measure the same span."""
    while not stop.is_set() and sim.poll() is None:
        if truth_path.exists() and phase_ts(read_truth(truth_path), "stop") is not None:
            break
        time.sleep(0.1)
    stop.set()


def test_lagging_group_rates_match_the_truth_and_runs_are_incremental(kafka, spark, unique, tmp_path):
    group, topic = f"sim-lagging-{unique}-group", f"sim-lagging-{unique}-topic"
    url = f"sqlite:///{tmp_path / 'lagmon.db'}"
    upgrade(url)
    engine = make_engine(url)
    sampler = KafkaSampler({"bootstrap.servers": kafka.bootstrap}, "test", lambda g: unique in g, timeout_s=5)
    collector = Collector(sampler, Store(engine), "test")
    stop = threading.Event()
    collecting = threading.Thread(target=collector.run, args=(1.0, stop), daemon=True)
    truth_path = tmp_path / "truth.jsonl"
    analyze = lambda: analyze_once(spark, engine, url, str(tmp_path / "history"), report=lambda m: None)  # noqa

    collecting.start()
    sim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monitor",
            "sim",
            "lagging",
            "--bootstrap",
            kafka.bootstrap,
            "--suffix",
            unique,
            "--truth",
            str(truth_path),
            "--duration",
            "22",
        ],
        cwd=PROJECT_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        threading.Thread(target=stop_at_the_end, args=(sim, truth_path, stop), daemon=True).start()
        time.sleep(4)
        first = analyze()  # while the workload and the collector are running
        assert sim.wait(90) == 0, sim.stderr.read().decode()
    finally:
        if sim.poll() is None:
            sim.kill()
        stop.set()
        collecting.join(15)
    second = analyze()

    with sqlite3.connect(tmp_path / "lagmon.db") as db:
        new_rows = sum(
            db.execute(f"SELECT count(*) FROM {t} WHERE sample_id > ?", (first.watermark,)).fetchone()[0]
            for t in ("offset_samples", "partition_samples")
        )
        group_samples = db.execute(
            "SELECT count(DISTINCT o.sample_id) FROM offset_samples o JOIN group_partitions gp ON gp.id = o.gp_id "
            "JOIN consumer_groups cg ON cg.id = gp.group_ref WHERE cg.group_id = ?",
            (group,),
        ).fetchone()[0]
    assert 0 < first.watermark < second.watermark
    assert second.rows_read == new_rows  # the second run read only what arrived after the first
    hours = read_trends(engine, "test", group, "1h", "")
    assert sum(r.samples for r in hours) == group_samples  # every sample once: nothing lost, nothing twice

    truth = read_truth(truth_path)
    main = max(hours, key=lambda r: r.samples)
    assert main.produce_rate == pytest.approx(produced_rate(truth, topic), rel=0.10)
    # The consume rate is the committed offsets' progress between samples over their spacing, so it is checked
    # through the offsets lagmon stored, each of which must be one the group really committed. The truth's own
    # rate spans each partition's first commit to the close: a commit landing 50 ms after a sample moves such
    # an edge by a second's consumption per partition (12 % apart in a loaded run, against a 10 % tolerance).
    stored = stored_commits(tmp_path / "lagmon.db", group)
    committed = {(e["partition"], e["offset"]) for e in truth if e["event"] == "commit" and e["group"] == group}
    assert {(p, c) for offsets in stored.values() for p, c in offsets.items() if c is not None} <= committed
    assert main.consume_rate == pytest.approx(progress_rate(stored, main.bucket_start, 3600_000), rel=1e-9)
    assert main.lag_slope_per_min > 0 and main.catching_up is False and main.catch_up_eta_s is None
    assert main.lag_seconds_max > 0
    engine.dispose()


def stored_commits(db_path: Path, group: str) -> dict[int, dict[int, int | None]]:
    """taken_at -> {partition: committed offset or None} of `group`'s stored samples, oldest first."""
    with sqlite3.connect(db_path) as db:
        rows = db.execute(
            "SELECT s.taken_at, tp.partition, o.committed FROM offset_samples o JOIN samples s ON s.id = o.sample_id "
            "JOIN group_partitions gp ON gp.id = o.gp_id JOIN consumer_groups cg ON cg.id = gp.group_ref "
            "JOIN topic_partitions tp ON tp.id = gp.tp_id WHERE cg.group_id = ? ORDER BY s.taken_at",
            (group,),
        ).fetchall()
    out: dict[int, dict[int, int | None]] = {}
    for at, partition, offset in rows:
        out.setdefault(at, {})[partition] = offset
    return out


def progress_rate(stored: dict[int, dict[int, int | None]], start: int, width: int) -> float:
    """Records per second past the committed offsets, from consecutive samples ending in [start, start + width):
    a partition's progress counts where both samples have a commit, the spacing where any partition's does."""
    moved = spent = 0
    times = sorted(stored)
    for before, after in itertools.pairwise(times):
        if not start <= after < start + width:
            continue
        steps = [c - stored[before][p] for p, c in stored[after].items() if None not in (c, stored[before].get(p))]
        if steps:
            moved, spent = moved + sum(max(0, d) for d in steps), spent + after - before
    return moved / (spent / 1000)


def test_churn_rebalance_count_is_exact(kafka, spark, unique, tmp_path):
    """Every rebalance the collector stored (tail on: exact generations) is counted once, in hours and days."""
    _, _, truth = watch_scenario(kafka.bootstrap, "churn", tmp_path, unique, 20, tail=True)
    group = f"sim-churn-{unique}-group"
    url = f"sqlite:///{tmp_path / 'churn-tail.db'}"
    engine = make_engine(url)
    analyze_once(spark, engine, url, str(tmp_path / "history"), report=lambda m: None)

    stored = read_rebalances(engine, "sim", group)
    counted = {w: sum(r.rebalances for r in read_rebalance_stats(engine, "sim", group, w)) for w in ("1h", "1d")}
    assert len(stored) > 3 and counted == {"1h": len(stored), "1d": len(stored)}
    # each generation a consumer of the eager churn group was assigned in is one counted rebalance
    assigned = {e["generation"] for e in truth if e.get("group") == group and e["event"] == "assigned"}
    generations = {r["epoch"] for r in read_generations(engine, "sim", group) if r["kind"] == "generation"}
    assert assigned <= generations
    after = [r.rebalance.generation_after for r in stored if r.rebalance.generation_after is not None]
    # (the store may hold one more at each end: the group forming and shutting down, outside the truth's callbacks)
    assert len(after) == len(set(after)) and assigned - {min(assigned)} <= set(after), (sorted(assigned), after)
    engine.dispose()

"""Dashboard page server time on a store with 1,000 groups and a day of history.

Seeds a fresh SQLite file: 1,000 classic groups x 10 partitions (500 topics,
each read by 2 groups: 10,000 group-partitions), one sample per minute for 24 h
(1,440 samples, what retention keeps of a day older than 6 h; raw 10 s samples
would be 6x the rows), and 2,000 rebalances spread over the day. The dimension
and slowly-changing rows go through monitor.store.Store; the per-sample offset
rows are bulk-inserted with the same layout, because writing 14 M rows through
the collector path would take minutes. Each page is then run by
streamlit.testing.v1.AppTest (the frame plus the page script, all queries,
charts and dataframes built server-side) with Streamlit's caches cleared before
every run; the figure is the median of 5. The store also holds the
evaluator's status rows (all OK, then 1,000 changes over the day), so the
overview's status and max-lag-seconds columns are in the figures. Targets from the issue: overview
<= 1.5 s, group <= 1 s, rebalances over 24 h <= 2 s. Peer: kafka-ui issue #856
reports 58 s to load its consumer-groups page with 582 groups.

Run:
    .venv/bin/python bench/bench_dashboard.py [--groups 1000] [--step-s 60] [--runs 5] [--recent-lag-min 10]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monitor.models import (  # noqa: E402
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupType,
    Member,
    MemberRef,
    PartitionOffsets,
    Rebalance,
    Status,
    TopicPartition,
    Trigger,
)
from monitor.store import Store, make_engine, upgrade  # noqa: E402
from monitor.store.health import write_status_changes  # noqa: E402

CLUSTER = "bench"
DAY_MS = 86_400_000
PEER_S, PEER_GROUPS = 58.0, 582  # kafka-ui #856
TARGETS = {"overview": 1.5, "group": 1.0, "rebalances 24h": 2.0}


def seed(
    path: Path, n_groups: int, partitions: int, step_s: int, n_rebalances: int, now: int, recent_lag_min: int = 0
) -> dict:
    rng = random.Random(7)
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    store = Store(engine)
    n_topics = max(1, n_groups // 2)
    topics = [f"topic-{i:04d}" for i in range(n_topics)]
    groups = []
    for i in range(n_groups):
        tps = [TopicPartition(topics[i % n_topics], p) for p in range(partitions)]
        members = tuple(
            Member(
                f"consumer-{i}-{m}-{'x' * 24}", f"client-{i}-{m}", f"/10.0.{i % 250}.{m}", assignment=tuple(tps[m::3])
            )
            for m in range(3)
        )
        groups.append((f"group-{i:04d}", tps, members))
    samples = DAY_MS // (step_s * 1000)
    first = now - (samples - 1) * step_s * 1000

    def snapshot(at: int, k: int) -> ClusterSnapshot:
        gs = {
            gid: GroupSnapshot(
                gid,
                GroupState.STABLE,
                GroupType.CLASSIC,
                assignor="range",
                coordinator=1,
                members=members,
                committed=dict.fromkeys(tps, 1_000_000 + k * 100 - 50),
            )
            for gid, tps, members in groups
        }
        parts = {
            TopicPartition(t, p): PartitionOffsets(0, 1_000_000 + k * 100) for t in topics for p in range(partitions)
        }
        return ClusterSnapshot(CLUSTER, at, gs, parts, duration_ms=900)

    # The first sample through the Store: every dimension and SCD row as the collector writes them.
    store.write_snapshot(snapshot(first, 0))
    with engine.connect() as conn:
        gp = conn.exec_driver_sql("SELECT gp.id, gp.tp_id FROM group_partitions gp ORDER BY gp.id").all()
        tp_ids = [r[0] for r in conn.exec_driver_sql("SELECT id FROM topic_partitions ORDER BY id").all()]
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("BEGIN")
        lag = {gp_id: rng.randrange(0, 5_000) for gp_id, _ in gp}
        for k in range(1, samples):
            at = first + k * step_s * 1000
            cur.execute(
                "INSERT INTO samples (cluster, taken_at, duration_ms, groups, partitions, ok, errors, "
                "resolution_ms) VALUES (?, ?, 900, ?, ?, 1, NULL, 0)",
                (CLUSTER, at, n_groups, len(tp_ids)),
            )
            sid = cur.lastrowid
            end = 1_000_000 + k * 100
            cur.executemany(
                "INSERT INTO partition_samples (sample_id, tp_id, log_start, log_end, lso_gap) VALUES (?, ?, 0, ?, 0)",
                [(sid, t, end) for t in tp_ids],
            )
            for gp_id in lag:
                lag[gp_id] = max(0, lag[gp_id] + rng.randrange(-200, 220))
            cur.executemany(
                "INSERT INTO offset_samples (sample_id, gp_id, committed) VALUES (?, ?, ?)",
                [(sid, gp_id, end - lag[gp_id]) for gp_id, _ in gp],
            )
        if recent_lag_min:
            # Every partition 1 record to `recent_lag_min` minutes behind at the newest sample: none caught
            # up, none older than the hour, so the overview interpolates lag seconds for all 10,000.
            per_min = 100 * 60 // step_s
            cur.executemany(
                "UPDATE offset_samples SET committed = ? WHERE sample_id = ? AND gp_id = ?",
                [(end - rng.randrange(1, recent_lag_min * per_min), sid, gp_id) for gp_id, _ in gp],
            )
        cur.execute("UPDATE consumer_groups SET last_sample_id = (SELECT max(id) FROM samples)")
        raw.commit()
    finally:
        raw.close()
    rebalances = []
    for _ in range(n_rebalances):
        gid, _tps, members = groups[rng.randrange(n_groups)]
        start = first + rng.randrange(samples - 1) * step_s * 1000
        m = members[rng.randrange(3)]
        ref = MemberRef(m.member_id, m.client_id, m.host)
        joined = rng.random() < 0.5
        rebalances.append(
            Rebalance(
                gid,
                start,
                start + rng.randrange(1_000, 30_000),
                "eager",
                Trigger.MEMBER_JOINED if joined else Trigger.MEMBER_LEFT,
                3,
                3,
                joined=(ref,) if joined else (),
                left=() if joined else (ref,),
                partitions_moved=rng.randrange(1, partitions),
                generation_before=5,
                generation_after=6,
            )
        )
    # one rebalance per (group, start): the table's key
    store.write_rebalances(CLUSTER, list({(r.group_id, r.started_at): r for r in rebalances}.values()))
    # Health as the evaluator writes it (only changes): everything OK at the start, then 200 groups
    # each go WARN on one partition and back a few times over the day.
    write_status_changes(
        engine,
        CLUSTER,
        first,
        [(gid, tp, Status.OK) for gid, tps, _ in groups for tp in tps],
        [(gid, Status.OK, Status.OK, 0, 1.0) for gid, _, _ in groups],
    )
    for _ in range(1_000):
        gid, tps, _m = groups[rng.randrange(min(200, n_groups))]
        at, bad = first + rng.randrange(samples) * step_s * 1000, rng.random() < 0.5
        status = Status.WARN if bad else Status.OK
        write_status_changes(engine, CLUSTER, at, [(gid, tps[0], status)], [(gid, status, status, 0, 1.0)])
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT count(*) FROM offset_samples").scalar()
    engine.dispose()
    return {"samples": samples, "offset_rows": rows, "busiest": groups[0][0]}


def time_page(app: str, params: dict[str, str], runs: int) -> list[float]:
    import logging

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    for name in list(logging.root.manager.loggerDict):
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)  # AppTest outside a server warns on every run

    times = []
    for _ in range(runs):
        st.cache_data.clear()
        at = AppTest.from_file(app, default_timeout=120)
        for key, value in params.items():
            at.query_params[key] = value
        started = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - started)
        if at.exception:
            raise RuntimeError(f"{params}: {at.exception[0].value}\n" + "\n".join(at.exception[0].stack_trace))
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--step-s", type=int, default=60, help="seconds between samples (60: a day at 1 min)")
    parser.add_argument("--rebalances", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", type=Path, help="reuse/keep the database here (seeded when missing)")
    parser.add_argument(
        "--recent-lag-min",
        type=int,
        default=0,
        help="put every partition 0-N minutes behind at the newest sample (the overview's worst "
        "case for lag seconds); default: the random walk, mostly hours behind",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="lagmon-bench-") as tmp:
        path = args.db or Path(tmp) / "dash.db"
        now = int(time.time() * 1000)
        started = time.perf_counter()
        if path.exists():
            info = {"busiest": "group-0000"}
            print(f"reusing {path} ({path.stat().st_size / 1e6:.0f} MB); its day ends when it was seeded")
        else:
            info = seed(path, args.groups, args.partitions, args.step_s, args.rebalances, now, args.recent_lag_min)
            print(
                f"seeded {args.groups} groups x {args.partitions} partitions, {info['samples']} samples "
                f"every {args.step_s} s (24 h), {info['offset_rows']} offset rows, {args.rebalances} "
                f"rebalances in {time.perf_counter() - started:.0f} s; database {path.stat().st_size / 1e6:.0f} MB"
            )
        os.environ["LAGMON_DATABASE_URL"] = f"sqlite:///{path}"
        app = str(ROOT / "app.py")
        pages = {
            "overview": {"range": "1h"},
            "group": {"page": "group", "group": info["busiest"], "range": "1h"},
            "group 24h": {"page": "group", "group": info["busiest"], "range": "24h"},
            "rebalances 24h": {"page": "rebalances", "range": "24h"},
            "rebalances 24h, one group": {"page": "rebalances", "range": "24h", "group": info["busiest"]},
            "alerts": {"page": "alerts", "range": "1h"},
        }
        for name, params in pages.items():
            times = time_page(app, params, args.runs)
            median = statistics.median(times)
            target = TARGETS.get(name) or TARGETS.get(name.split(",")[0].replace("group 24h", "group"))
            line = f"{name:28s} median {median:6.2f} s (min {min(times):.2f}, max {max(times):.2f})"
            if target:
                line += f"  -> {median / target:.2f}x of the {target:g} s target"
            if name == "overview":
                peer_per_group = PEER_S / PEER_GROUPS
                ours_per_group = median / args.groups
                line += (
                    f"; kafka-ui #856: {PEER_S:g} s for {PEER_GROUPS} groups -> "
                    f"{PEER_S / median:.0f}x faster ({peer_per_group / ours_per_group:.0f}x per group)"
                )
            print(line, flush=True)


if __name__ == "__main__":
    main()

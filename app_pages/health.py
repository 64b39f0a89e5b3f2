"""Health of lagmon itself: the collector's last sample and cycle times, recent errors, database size,
the offsets-topic tail's position and the last Spark analysis run."""

import pandas as pd
import streamlit as st

from app_pages import shared
from app_pages.charts import build_cycle_time_chart
from monitor.clock import wall_ms
from monitor.output import compute_ranges
from monitor.store.analysis import read_last_analysis
from monitor.store.collectors import read_collectors
from monitor.store.engine import read_database_size, read_table_names
from monitor.store.offsets_tail import read_tail_status
from monitor.store.samples import read_clusters, read_samples, read_shards

GONE_AFTER_MS = 180_000  # a coordinated collector not seen for this long has stopped or died


def body() -> None:
    c = shared.choice()
    since, until = shared.window()
    cluster = next((x for x in shared.read(read_clusters) if x.cluster == c.cluster), None)
    cycles = [s for s in shared.read(read_samples, c.cluster, since) if s.taken_at < until]
    size = shared.read(read_database_size)

    summary_section(c, cluster, cycles, size)
    tables = shared.read(read_table_names)
    if "collectors" in tables:
        coordinated_collectors(c.cluster)
    collector_shards(c.cluster)
    if any(s.ok for s in cycles):
        cycle_time_section(cycles, c.tz)
    recent_errors_section([s for s in cycles if not s.ok])

    st.subheader("Offsets-topic tail")
    tail_position(c.cluster, tables)
    st.subheader("Last Spark analysis")
    last_analysis(tables)


def summary_section(c: shared.Choice, cluster, cycles, size: int | None) -> None:
    """How recent and how fast the collector's cycles are, with a warning when the newest sample is old."""
    age_s = None if cluster is None else (wall_ms() - cluster.last_sample_at) / 1000
    durations = [s.duration_ms for s in cycles if s.ok]
    sampling = [s.sampling_ms for s in cycles if s.ok and s.sampling_ms is not None]
    cols = st.columns(5)
    cols[0].metric("Last sample", f"{age_s:.0f} s ago" if age_s is not None else "—")
    cols[1].metric(
        "Cycle time (median)",
        f"{pd.Series(durations).median():.0f} ms" if durations else "—",
        help="The whole cycle: sampling Kafka, writing the store, health, alerts and the exporter",
    )
    if sampling:
        cols[1].caption(f"of which sampling Kafka: {pd.Series(sampling).median():.0f} ms")
    cols[2].metric("Cycles in range", len(cycles))
    cols[3].metric("Failed cycles", sum(1 for s in cycles if not s.ok))
    cols[4].metric("Database size", f"{size / 1e6:.1f} MB" if size is not None else "—")
    if cluster is not None:
        st.caption(
            f"Last sample at {shared.fmt_time_zone(cluster.last_sample_at)}; "
            f"{'ok' if cluster.last_ok else 'FAILED'}; {cluster.samples:,} samples stored since "
            f"{shared.fmt_time_zone(cluster.first_sample_at)}."
        )
    if age_s is not None and age_s > 3 * max(c.refresh_s or 5, 10):
        st.warning("The newest sample is old: is the collector running?")


def cycle_time_section(cycles, tz: str) -> None:
    """The successful cycles' whole and sampling times."""
    ok = [s for s in cycles if s.ok]
    st.subheader("Cycle time")
    cdf = pd.DataFrame(
        {
            "at": [s.taken_at for s in ok],
            "whole_ms": [s.duration_ms for s in ok],
            "sampling_ms": [s.sampling_ms for s in ok],
        }
    )
    st.altair_chart(build_cycle_time_chart(cdf, tz), width="stretch")


def recent_errors_section(failed) -> None:
    st.subheader("Recent errors")
    if not failed:
        st.success("No failed cycles in this range.")
        return
    edf = pd.DataFrame(
        [{"at": s.taken_at, "duration (ms)": s.duration_ms, "errors": "; ".join(s.errors)} for s in failed[-200:]]
    )
    shared.table(shared.time_columns(edf, "at"), key="hl_errors")


def coordinated_collectors(cluster: str) -> None:
    """Collectors sharing the cluster through Kafka (`collect --shard kafka`): what each holds, since when,
    and how far its tail is behind; one not seen for three minutes has stopped or died (its row stays a day)."""
    rows = shared.read(read_collectors, cluster)
    if not rows:
        return
    st.subheader("Coordinated collectors")
    now = wall_ms()
    df = pd.DataFrame(
        [
            {
                "collector": r.name,
                "__consumer_offsets partitions": compute_ranges(r.partitions) or "none",
                "groups": r.groups,
                "holding since": min(r.partitions.values()) if r.partitions else None,
                "tail lag (records)": "tail off" if r.tail_lag is None else r.tail_lag,
                "last seen": r.seen_at,
                "age (s)": round((now - r.seen_at) / 1000),
            }
            for r in rows
        ]
    )
    gone = [r.name for r in rows if GONE_AFTER_MS < now - r.seen_at < 3600_000]
    if gone:
        st.warning(
            f"Not seen for over {GONE_AFTER_MS // 60_000} minutes (stopped or died in the last hour; Kafka gave "
            f"their partitions to the others): {', '.join(gone)}."
        )
    shared.table(shared.time_columns(df, "holding since", "last seen"), key="hl_collectors")


def collector_shards(cluster: str) -> None:
    """With several collector shards (`collect --shard i/n`): each one's newest cycle, since any may lag or fail."""
    shards = shared.read(read_shards, cluster)
    if len(shards) < 2:
        return
    st.subheader("Collector shards")
    df = pd.DataFrame(
        [
            {
                "shard": s.shard,
                "last sample": s.last_sample_at,
                "ok": s.last_ok,
                "age (s)": round((wall_ms() - s.last_sample_at) / 1000),
                "samples": s.samples,
                "errors": "; ".join(s.last_errors),
            }
            for s in shards
        ]
    )
    shared.table(shared.time_columns(df, "last sample"), key="hl_shards")


def tail_position(cluster: str, tables: set[str]) -> None:
    """Where the __consumer_offsets tail has read to, per partition, and when each last moved."""
    rows = shared.read(read_tail_status, cluster) if "offsets_tail_positions" in tables else []
    if not rows:
        st.info(
            "Offsets-topic tail off or not readable: no position stored for this cluster "
            "(LAGMON_OFFSETS_TOPIC=auto turns it on when the collector may read __consumer_offsets)."
        )
        return
    newest = max(r.updated_at for r in rows)
    st.caption(
        f"{len(rows)} partitions of `__consumer_offsets`; last moved {(wall_ms() - newest) / 1000:.0f} s "
        f"ago ({shared.fmt_time_zone(newest)})."
    )
    skipped = [r for r in rows if r.skipped]
    if skipped:
        st.warning(skipped_message(skipped))
    sharded = len({r.shard for r in rows}) > 1
    df = pd.DataFrame(
        [
            {
                **({"shard": r.shard} if sharded else {}),
                "partition": r.partition,
                "next offset": r.next_offset,
                "updated at": r.updated_at,
                **({"skipped records": r.skipped, "newest skipped": r.last_skipped or ""} if skipped else {}),
            }
            for r in rows
        ]
    )
    shared.table(shared.time_columns(df, "updated at"), key="hl_tail")


def skipped_message(rows) -> str:
    """The records the tail read past: what it means for the history, and the newest one."""
    newest = max(rows, key=lambda r: r.updated_at)
    return (
        f"The tail skipped {sum(r.skipped for r in rows):,} record(s) of `__consumer_offsets` it could not decode "
        "or apply, and read on: the commits or group changes they held are missing from the history. Newest: "
        f"{shared.md(newest.last_skipped or '')}"
    )


def last_analysis(tables: set[str]) -> None:
    last = shared.read(read_last_analysis) if "analysis_runs" in tables else None
    if last is None:
        st.info("The Spark analysis has not run yet: `python -m monitor analyze` (`make demo` runs it every minute).")
        return
    cols = st.columns(4)
    cols[0].metric("Analysis finished", f"{(wall_ms() - last.finished_at) / 1000:.0f} s ago")
    cols[1].metric("Analysis status", last.status)
    cols[2].metric("Rows read / written", f"{last.rows_read:,} / {last.rows_written:,}")
    cols[3].metric("Analysis duration", f"{last.duration_ms / 1000:.1f} s")
    st.caption(f"Finished at {shared.fmt_time_zone(last.finished_at)} on Spark master {shared.md(last.master)}.")
    if last.status != "ok":
        st.error("The last analysis run failed:")
        st.text(shared.redact(last.error or "no reason recorded")[:1000])


st.title("Collector health")
shared.live(body)

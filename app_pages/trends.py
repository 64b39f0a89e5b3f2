"""Trends: what the Spark analysis computed (monitor.store.analysis), with the time of its last run.

Rates, catch-up ETA and lag-seconds percentiles per group and analysis window;
rebalance frequency per group; the least stable groups and the eager /
cooperative / consumer comparison. "Not run yet" means analysis_runs is empty
(the result tables exist in every migrated database).
"""

import pandas as pd
import streamlit as st

from app_pages import shared
from app_pages.charts import build_trend_chart
from monitor.clock import wall_ms
from monitor.store.analysis import (
    read_last_analysis,
    read_latest_trends,
    read_protocol_comparison,
    read_rebalance_stats,
    read_stability_ranking,
    read_trends,
)
from monitor.store.engine import read_table_names

LAG_WINDOWS = {"1m": 60_000, "5m": 300_000, "1h": 3_600_000, "1d": 86_400_000}
SKETCHED = ("1h", "1d")  # their percentiles merge run by run (docs/analysis.md)
REBALANCE_WINDOWS = {"1h": 3_600_000, "1d": 86_400_000}


def fmt_seconds(s: float | None) -> str:
    if s is None or pd.isna(s):
        return "—"
    if s < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def fmt_eta(seconds: float | None, catching_up: bool | None) -> str:
    if catching_up is None:
        return "—"
    if not catching_up:
        return "not catching up"
    return "caught up" if seconds == 0 else fmt_seconds(seconds)


def fmt_lag_seconds(value: float | None, bounded: bool) -> str:
    """Seconds with one decimal; '≥' when the analysis could only give a lower bound."""
    if value is None or pd.isna(value):
        return "—"
    return f"{'≥ ' if bounded else ''}{value:.1f}"


def fmt_top(items: list) -> str:
    return ", ".join(f"{i['name']} ({i['rebalances']})" for i in items[:3])


def last_run_header(last) -> None:
    age_s = (wall_ms() - last.finished_at) / 1000
    cols = st.columns(4)
    cols[0].metric("Last analysis", f"{fmt_seconds(age_s)} ago")
    cols[1].metric("Status", last.status)
    cols[2].metric("Duration", f"{last.duration_ms / 1000:.1f} s")
    cols[3].metric("Rows written", f"{last.rows_written:,}")
    st.caption(
        f"Last analysis finished at {shared.fmt_time_zone(last.finished_at)} on Spark master "
        f"{shared.md(last.master)}; it read {last.rows_read:,} new sample rows. "
        "`python -m monitor analyze` refreshes these results (`make demo` runs it every minute)."
    )
    if last.status != "ok":
        st.error("The last analysis run failed; the results below, if any, are from an earlier successful run.")
        st.text(shared.redact(last.error or "no reason recorded")[:1000])


def lag_trends(c, since: int, until: int) -> None:
    st.subheader("Lag trends per group")
    window = st.segmented_control("Analysis window", list(LAG_WINDOWS), default="1h", key="tr_window") or "1h"
    rows = shared.read(read_latest_trends, c.cluster, window)
    if not rows:
        st.info(f"No {window} lag trends for this cluster yet.")
        return
    tz = c.tz
    df = pd.DataFrame(
        [
            {
                "group": r.group_id,
                f"bucket start ({tz})": shared.fmt_time(r.bucket_start, tz),
                "samples": r.samples,
                "lag avg (offsets)": r.lag_avg,
                "lag p95 (offsets)": r.lag_p95,
                "lag max (offsets)": r.lag_max,
                "slope (offsets/min)": r.lag_slope_per_min,
                "produce (msg/s)": r.produce_rate,
                "consume (msg/s)": r.consume_rate,
                "catch-up ETA": fmt_eta(r.catch_up_eta_s, r.catching_up),
                "lag seconds p50 (s)": fmt_lag_seconds(r.lag_seconds_p50, r.lag_seconds_bounded),
                "lag seconds p95 (s)": fmt_lag_seconds(r.lag_seconds_p95, r.lag_seconds_bounded),
            }
            for r in rows
        ]
    )
    st.caption(
        f"Each group's newest {window} bucket. Slope > 0: falling behind. ETA = lag / (consume − produce) "  # noqa: RUF001
        "while consuming faster than producing. ≥ marks lag seconds that are only a lower bound (the record "
        "after the committed offset is older than the history the analysis saw)."
        + (
            f" The {window} percentiles are merged from 5-minute sketches: up to 1,000 samples a bucket, the "
            "bucket's value at that rank; beyond, one within 1 % of rank of it (`analyze --since` recomputes "
            "them exactly; the other columns are exact)."
            if window in SKETCHED
            else f" The {window} percentiles are exact."
        )
    )
    shared.table(df.round(2), key="tr_trends")

    group = st.selectbox("Group", [r.group_id for r in rows], key="tr_group")
    series = shared.read(read_trends, c.cluster, group, window, "", since - LAG_WINDOWS[window], until)
    if series:
        sdf = pd.DataFrame(
            [
                {
                    "bucket_start": r.bucket_start,
                    "lag_avg": r.lag_avg,
                    "lag_p95": r.lag_p95,
                    "lag_max": r.lag_max,
                    "produce_rate": r.produce_rate,
                    "consume_rate": r.consume_rate,
                }
                for r in series
            ]
        )
        st.altair_chart(build_trend_chart(sdf, tz), width="stretch")
    else:
        st.caption(f"No {window} buckets of this group in the chosen time range.")


def rebalance_frequency(c, since: int) -> None:
    st.subheader("Rebalance frequency per group")
    window = st.segmented_control("Bucket", list(REBALANCE_WINDOWS), default="1d", key="tr_rb_window") or "1d"
    stats = shared.read(read_rebalance_stats, c.cluster, None, window, since - REBALANCE_WINDOWS[window])
    if not stats:
        st.info(f"No rebalances in {window} buckets overlapping the chosen time range.")
        return
    tz = c.tz
    ms = lambda v: None if v is None else round(v / 1000, 1)  # noqa: E731
    df = pd.DataFrame(
        [
            {
                "group": r.group_id,
                f"bucket start ({tz})": shared.fmt_time(r.bucket_start, tz),
                "protocol": r.protocol,
                "rebalances": r.rebalances,
                "stop-the-world total (s)": ms(r.total_duration_ms),
                "mean (s)": ms(r.mean_duration_ms),
                "p95 (s)": ms(r.p95_duration_ms),
                "partitions moved": r.partitions_moved,
                "joined": r.members_joined,
                "left": r.members_left,
                "top clients": fmt_top(r.top_clients),
                "top hosts": fmt_top(r.top_hosts),
            }
            for r in sorted(stats, key=lambda r: (-r.bucket_start, -r.rebalances, r.group_id))
        ]
    )
    st.caption(
        "Stop-the-world time: how long each rebalance kept the group from consuming, in seconds. "
        "Top clients and hosts: who joined or left most often (rebalances in brackets)."
    )
    shared.table(df, key="tr_rebalances")


def stability(c) -> None:
    ranking = shared.read(read_stability_ranking, c.cluster)
    protocols = shared.read(read_protocol_comparison, c.cluster)
    st.subheader("Least stable groups")
    if not ranking:
        st.info("No group rebalanced in the day before the last analysis.")
    else:
        first = ranking[0]
        st.caption(
            f"Over {shared.fmt_time_zone(first.window_start)} … {shared.fmt_time_zone(first.window_end)}, "
            "most rebalances first."
        )
        df = pd.DataFrame(
            [
                {
                    "rank": r.rank,
                    "group": r.group_id,
                    "protocol": r.protocol,
                    "rebalances": r.rebalances,
                    "per hour": round(r.per_hour, 2),
                    "stop-the-world total (s)": round(r.total_duration_ms / 1000, 1),
                    "mean (s)": None if r.mean_duration_ms is None else round(r.mean_duration_ms / 1000, 1),
                    "partitions moved": r.partitions_moved,
                }
                for r in ranking
            ]
        )
        shared.table(df, key="tr_ranking")
    st.subheader("Eager vs cooperative vs consumer protocol")
    if not protocols:
        st.info("No rebalances to compare in the day before the last analysis.")
        return
    df = pd.DataFrame(
        [
            {
                "protocol": p.protocol,
                "groups": p.groups,
                "rebalances": p.rebalances,
                "per group": round(p.per_group, 2),
                "mean (s)": None if p.mean_duration_ms is None else round(p.mean_duration_ms / 1000, 1),
                "p95 (s)": None if p.p95_duration_ms is None else round(p.p95_duration_ms / 1000, 1),
                "partitions moved (mean)": None
                if p.mean_partitions_moved is None
                else round(p.mean_partitions_moved, 1),
            }
            for p in protocols
        ]
    )
    shared.table(df, key="tr_protocols")


def body() -> None:
    c = shared.choice()
    last = shared.read(read_last_analysis) if "analysis_runs" in shared.read(read_table_names) else None
    if last is None:
        st.info(
            "Spark analysis has not run yet — run `python -m monitor analyze` (`make demo` runs it every "
            "minute). Its results appear here: produce and consume rates, catch-up ETA, lag-seconds "
            "percentiles, rebalance frequency and the least stable groups."
        )
        return
    last_run_header(last)
    since, until = shared.window()
    lag_trends(c, since, until)
    rebalance_frequency(c, since)
    stability(c)


st.title("Trends")
shared.live(body)

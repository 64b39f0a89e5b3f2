"""Rebalances: post-incident analysis of the chosen window (timeline, who moved where, lag, report)."""

import pandas as pd
import streamlit as st

from app_pages import shared
from app_pages.charts import (
    build_assignment_heatmap_chart,
    build_rebalance_timeline_chart,
    build_total_lag_chart,
    to_wall_clock,
)
from app_pages.incident import build_incident_report
from monitor.store.groups import read_assignment_history, read_group_names
from monitor.store.lag import read_lag_series
from monitor.store.rebalances import read_rebalances

TIMELINE_GROUPS = 25  # rows in the timeline; more make a chart nobody can read

c = shared.choice()
names = shared.read(read_group_names, c.cluster)
shared.follow_group_link(names, "rb_group")

st.title("Rebalances")
group = st.selectbox("Group (all groups when empty)", names, key="rb_group", index=None, placeholder="all groups")
if group and st.query_params.get("group") != group:
    st.query_params["group"] = group
elif not group and "group" in st.query_params:
    del st.query_params["group"]


def _names(refs) -> str:
    return ", ".join(m.client_id or m.member_id for m in refs)


REBALANCE_COLUMNS = [
    "group",
    "started_at",
    "ended_at",
    "duration (s)",
    "trigger",
    "joined",
    "left",
    "moved",
    "generation",
    "protocol",
    "members",
    "who joined",
    "who left",
    "source",
]


def rebalances_frame(rebalances) -> pd.DataFrame:
    """One row per rebalance (times in epoch ms): the timeline draws it, the details table shows it."""
    return pd.DataFrame(
        [
            {
                "group": r.group_id,
                "started_at": r.started_at,
                "ended_at": r.ended_at,
                "duration (s)": None if r.duration_ms is None else r.duration_ms / 1000,
                "trigger": str(r.trigger),
                "joined": len(r.joined),
                "left": len(r.left),
                "moved": r.partitions_moved,
                "generation": "—" if r.generation_after is None else f"{r.generation_before} → {r.generation_after}",
                "protocol": r.protocol,
                "members": f"{r.members_before} → {r.members_after}",
                "who joined": _names(r.joined),
                "who left": _names(r.left),
                "source": r.source,
            }
            for r in rebalances
        ],
        columns=REBALANCE_COLUMNS,
    )


def spans_frame(spans) -> pd.DataFrame:
    """Who owned which partition from when to when (epoch ms; valid_to None = still owns it)."""
    return pd.DataFrame(
        [
            {
                "topic": s.topic,
                "partition": s.partition,
                "owner": s.client_id or s.member_id,
                "valid_from": s.valid_from,
                "valid_to": s.valid_to,
            }
            for s in spans
        ]
    )


def rebalance_text(r) -> str:
    """One rebalance as aligned `name: value` lines, times in the chosen zone."""
    return "\n".join(
        [
            f"group:       {r.group_id}",
            f"started:     {shared.fmt_time_zone(r.started_at)}",
            f"ended:       {shared.fmt_time_zone(r.ended_at) if r.ended_at else 'in progress'}",
            f"stopped for: {'—' if r.duration_ms is None else f'{r.duration_ms / 1000:.1f} s'}",
            f"trigger:     {r.trigger}",
            f"protocol:    {r.protocol}",
            f"members:     {r.members_before} -> {r.members_after}",
            f"generation:  {r.generation_before if r.generation_before is not None else '—'} -> "
            f"{r.generation_after if r.generation_after is not None else '—'}",
            f"moved:       {r.partitions_moved} partition(s)",
            f"source:      {r.source}",
        ]
    )


def who_frame(r) -> pd.DataFrame:
    """The members one rebalance let in and out, one row each."""
    return pd.DataFrame(
        [
            {
                "change": kind,
                "client id": m.client_id,
                "host": m.host,
                "member id": m.member_id,
                "instance id": m.instance_id,
            }
            for kind, refs in (("joined", r.joined), ("left", r.left))
            for m in refs
        ],
        columns=["change", "client id", "host", "member id", "instance id"],
    )


def summary_section(rebalances, since: int, until: int) -> None:
    done = [r.duration_ms for r in rebalances if r.duration_ms is not None]
    cols = st.columns(4)
    cols[0].metric("Rebalances", len(rebalances))
    cols[1].metric("Groups", len({r.group_id for r in rebalances}))
    cols[2].metric("Longest", f"{max(done) / 1000:.1f} s" if done else "—")
    cols[3].metric("Partitions moved", sum(r.partitions_moved for r in rebalances))
    st.caption(
        f"Window {shared.fmt_time_zone(since)} → {shared.fmt_time_zone(until)}. Rebalances seen by "
        "polling have durations bounded by the sample interval."
    )


def timeline_section(table: pd.DataFrame, domain: list) -> None:
    """The busiest TIMELINE_GROUPS groups only: more rows make a chart nobody can read."""
    st.subheader("Timeline")
    busiest = table["group"].value_counts()
    if len(busiest) > TIMELINE_GROUPS:
        st.caption(
            f"The {TIMELINE_GROUPS} groups with the most rebalances of {len(busiest)}; "
            "pick a group above for one alone."
        )
    drawn = table[table["group"].isin(busiest.index[:TIMELINE_GROUPS])]
    st.altair_chart(build_rebalance_timeline_chart(drawn, c.tz, domain), width="stretch")


def ownership_section(group: str, since: int, until: int, domain: list) -> None:
    spans = shared.read(read_assignment_history, c.cluster, group, since, until)
    if spans:
        st.subheader("Who owned which partition")
        st.altair_chart(build_assignment_heatmap_chart(spans_frame(spans), c.tz, domain), width="stretch")


def lag_frame(points) -> pd.DataFrame:
    """The group's lag samples (at, lag); the chart sums them per sample time."""
    return pd.DataFrame([{"at": p.at, "lag": p.lag} for p in points], columns=["at", "lag"])


def total_lag_points(lag: pd.DataFrame) -> list[tuple[int, int]]:
    """(at, total lag) per sample time: the incident report's worst lag and recovery come from these."""
    return [(int(at), int(v)) for at, v in lag.dropna().groupby("at")["lag"].sum().items()]


def total_lag_section(lag: pd.DataFrame, domain: list) -> None:
    if len(lag):
        st.subheader("Total lag")
        st.altair_chart(build_total_lag_chart(lag, c.tz, domain), width="stretch")


def details_section(rebalances, table: pd.DataFrame) -> None:
    st.subheader("Details")
    if not rebalances:
        st.info("No rebalances in this window.")
        return
    shared.table(shared.time_columns(table.copy(), "started_at", "ended_at"), key="rb_table")
    labels = [f"{shared.fmt_time(r.started_at)} · {r.group_id}" for r in rebalances]
    pick = st.selectbox(
        "Rebalance",
        range(len(rebalances)),
        format_func=labels.__getitem__,
        index=len(rebalances) - 1,
        key="rb_pick",
    )
    r = rebalances[pick]
    st.text(rebalance_text(r))
    who = who_frame(r)
    if len(who):
        st.dataframe(who, hide_index=True, key="rb_who")


def report_section(group: str | None, rebalances, lag_series: list | None, since: int, until: int) -> None:
    """The Markdown download; `lag_series` None: several groups, whose lag the report leaves out."""
    title = f"{group or 'all groups'} on {c.cluster}"
    report = build_incident_report(title, since, until, rebalances, lag_series, shared.fmt_time_zone)
    st.download_button(
        "Download incident report (Markdown)",
        report.encode(),
        file_name="incident-report.md",
        mime="text/markdown",
        key="rb_report",
        on_click="ignore",
    )


def body() -> None:
    since, until = shared.window()
    rebalances = [r.rebalance for r in shared.read(read_rebalances, c.cluster, group, since, until)]
    summary_section(rebalances, since, until)
    domain = list(to_wall_clock([since, until], c.tz))
    table = rebalances_frame(rebalances)
    if rebalances:
        timeline_section(table, domain)
    if group:
        ownership_section(group, since, until, domain)
        lag = lag_frame(shared.read(read_lag_series, c.cluster, group, since, until))
        total_lag_section(lag, domain)
        lag_series = total_lag_points(lag)
    else:
        st.caption("Pick a group to see its partitions moving between members and its lag on the same time axis.")
        lag_series = None
    details_section(rebalances, table)
    report_section(group, rebalances, lag_series, since, until)


shared.live(body)

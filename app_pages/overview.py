"""Overview: every group now, with cluster totals; pick a row (or a name) to open the group."""
import pandas as pd
import streamlit as st

from app_pages import _shared

HOUR_MS = 3_600_000


def overview_frame(groups, rebalances_last_hour: dict[str, int], sparks: dict[str, list]) -> pd.DataFrame:
    rows = []
    for g in groups:
        state = g.state.value if hasattr(g.state, "value") else str(g.state)
        rows.append({
            "group": g.group_id,
            "state": state + (" (inferred)" if g.state_inferred else ""),
            "type": g.type.value if hasattr(g.type, "value") else str(g.type),
            "members": g.members,
            "total lag": g.total_lag,
            "max lag": g.max_lag,
            "lag trend": [lag for _, lag in sparks.get(g.group_id, [])],
            "rebalances (1h)": rebalances_last_hour.get(g.group_id, 0),
            "coordinator": g.coordinator,
            "partitions": g.partitions,
            "lag seconds": "—",
            "status": "—",
        })
    return pd.DataFrame(rows, columns=["group", "state", "type", "members", "total lag", "max lag", "lag trend",
                                       "rebalances (1h)", "coordinator", "partitions", "lag seconds", "status"])


def body() -> None:
    c = _shared.choice()
    since, until = _shared.window()
    groups = _shared.read("read_groups", c.cluster)
    counts = _shared.read("read_rebalance_counts", c.cluster, until - HOUR_MS)
    sparks = _shared.read("read_total_lag_series", c.cluster, since, until, points=20)
    df = overview_frame(groups, counts, sparks)

    total_lag = int(df["total lag"].fillna(0).sum()) if len(df) else 0
    cols = st.columns(5)
    cols[0].metric("Groups", len(df))
    cols[1].metric("Stable", int(df["state"].eq("Stable").sum()) if len(df) else 0)
    cols[2].metric("Rebalancing", sum(1 for g in groups if getattr(g.state, "rebalancing", False)))
    cols[3].metric("Total lag (offsets)", f"{total_lag:,}")
    cols[4].metric("Rebalances in the last hour", sum(counts.values()))
    last = max((g.last_sample_at for g in groups if g.last_sample_at), default=None)
    st.caption(f"Cluster {_shared.md(c.cluster)} · newest sample {_shared.fmt_time_zone(last)} · "
               "lag seconds and health status arrive with the evaluator (shown as — until then); "
               "states marked (inferred) are KIP-848 Assigning/Reconciling, which librdkafka reports as Unknown.")

    f1, f2, f3 = st.columns([3, 2, 1])
    search = f1.text_input("Search groups", key="ov_search", placeholder="part of a group name")
    states = sorted(df["state"].unique()) if len(df) else []
    picked = f2.multiselect("State", states, key="ov_states")
    lagging = f3.toggle("Lagging only", key="ov_lagging")
    shown = df
    if search:
        shown = shown[shown["group"].str.contains(search, case=False, regex=False)]
    if picked:
        shown = shown[shown["state"].isin(picked)]
    if lagging:
        shown = shown[shown["total lag"].fillna(0) > 0]

    if shown.empty:
        st.info("No group matches." if len(df) else "No groups stored for this cluster yet.")
        return
    event = _shared.table(
        shown, f"groups-{c.cluster}", key="ov_table", on_select="rerun", selection_mode="single-row",
        column_config={
            "group": st.column_config.TextColumn("group", help="select a row to open the group"),
            "lag trend": st.column_config.LineChartColumn("lag trend", help="total lag over the chosen range"),
            "total lag": st.column_config.NumberColumn(format="%d"),
            "max lag": st.column_config.NumberColumn(format="%d"),
            "lag seconds": st.column_config.TextColumn(help="not computed yet (needs the evaluator)"),
            "status": st.column_config.TextColumn(help="not computed yet (needs the evaluator)"),
        },
    )
    rows = event.selection.rows if event is not None and hasattr(event, "selection") else []
    if rows:
        st.switch_page("app_pages/group.py", query_params=_shared.page_params(group=shown.iloc[rows[0]]["group"]))

    g1, g2 = st.columns([3, 1])
    target = g1.selectbox("Open a group", list(shown["group"]), key="ov_open", index=None,
                          placeholder="type to search")
    if target:
        g2.page_link("app_pages/group.py", label="Open group page", icon=":material/arrow_forward:",
                     query_params=_shared.page_params(group=target))


st.title("Consumer groups")
_shared.live(body)

"""Overview: every group now, with cluster totals; pick a row (or a name) to open the group."""

import pandas as pd
import streamlit as st

from app_pages import shared
from monitor.models import GroupState, GroupType, Status
from monitor.store.groups import read_groups
from monitor.store.health import read_group_health_now
from monitor.store.lag import read_total_lag_series
from monitor.store.lag_seconds import read_max_lag_seconds
from monitor.store.rebalances import read_rebalance_counts

HOUR_MS = 3_600_000

TYPES = [t.value for t in GroupType if t is not GroupType.UNKNOWN]
_TAIL = (
    "lagmon reads them from the group coordinator's records in `__consumer_offsets`, so the collector needs the "
    "offsets-topic tail (`LAGMON_OFFSETS_TOPIC=auto` or `on`, with Read on `__consumer_offsets`)"
)
# Why a type the filter asks for has no group: what makes a group of that type, and what lagmon needs to see it.
NO_GROUPS_OF_TYPE = {
    "classic": "no classic groups: no group here uses the classic rebalance protocol (`group.protocol=classic`).",
    "consumer": "no consumer groups: no group here uses KIP-848's consumer protocol (`group.protocol=consumer`).",
    "share": "no share groups: share groups (KIP-932, Kafka 4) are made by share consumers (`KafkaShareConsumer`); "
    + _TAIL
    + ", and Read on `__share_group_state` for their lag.",
    "streams": "no streams groups: streams groups (KIP-1071, Kafka 4) are made by Kafka Streams apps with "
    "`group.protocol=streams`; " + _TAIL + ".",
}


def no_match_message(df: pd.DataFrame, picked_types: list[str]) -> str:
    """The empty table explained: which picked types have no group at all, else that the filters exclude all."""
    if not len(df):
        return "No groups stored for this cluster yet."
    missing = [t for t in picked_types if t not in set(df["type"])]
    if missing and len(missing) == len(picked_types):
        return "\n\n".join(NO_GROUPS_OF_TYPE.get(t, f"no {t} groups.") for t in missing)
    return "No group matches."


COLUMNS = [
    "group",
    "state",
    "status",
    "worst partition",
    "type",
    "members",
    "total lag",
    "max lag",
    "max lag seconds",
    "± (s)",
    "lower bound",
    "lag trend",
    "rebalances (1h)",
    "coordinator",
    "partitions",
    "no answer since",
]


def unanswered_message(groups) -> str:
    """What a partial answer from Kafka means for the rows it left as they were."""
    names = ", ".join(shared.md(g.group_id) for g in groups[:5]) + (
        f" and {len(groups) - 5} more" if len(groups) > 5 else ""
    )
    return (
        f"Kafka did not answer for {len(groups)} group(s) in the newest cycle ({names}): their rows show the "
        "last answer, from the time in *no answer since*, not the present. The Health page's recent errors "
        "say which calls failed (a broker restarting, a coordinator moving)."
    )


def overview_frame(
    groups, rebalances_last_hour: dict[str, int], sparks: dict[str, list], health: dict, lag_seconds: dict
) -> pd.DataFrame:
    rows = []
    for g in groups:
        h = health.get(g.group_id)
        lag_s = lag_seconds.get(g.group_id)
        state = str(g.state)  # a StrEnum, or the raw text of a state this version does not know
        rows.append(
            {
                "group": g.group_id,
                "state": state + (" (inferred)" if g.state_inferred else ""),
                "status": shared.fmt_status(h and h.status),
                "worst partition": shared.fmt_status(h and h.worst),
                "type": str(g.type),
                "members": g.members,
                "total lag": g.total_lag,
                "max lag": g.max_lag,
                "max lag seconds": lag_s.seconds if lag_s else None,  # a number, so the column sorts as one
                "± (s)": lag_s.error if lag_s and not lag_s.at_least else None,
                "lower bound": bool(lag_s and lag_s.at_least),
                "lag trend": [lag for _, lag in sparks.get(g.group_id, [])],
                "rebalances (1h)": rebalances_last_hour.get(g.group_id, 0),
                "coordinator": g.coordinator,
                "partitions": g.partitions,
                "no answer since": g.last_answered_at,
            }
        )
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["no answer since"] = df["no answer since"].astype("Int64")  # None: <NA>, an empty cell
    df["max lag seconds"] = df["max lag seconds"].astype("float64")  # None: NaN, an empty cell
    return df


def matching_rows(
    df: pd.DataFrame, search: str, states: list, types: list, statuses: list, lagging: bool
) -> pd.DataFrame:
    """The rows every filter the user set lets through (an empty filter lets everything through)."""
    shown = df
    if search:
        shown = shown[shown["group"].str.contains(search, case=False, regex=False)]
    if states:
        shown = shown[shown["state"].isin(states)]
    if types:
        shown = shown[shown["type"].isin(types)]
    if statuses:
        shown = shown[shown["status"].isin(statuses)]
    if lagging:
        shown = shown[shown["total lag"].fillna(0) > 0]
    return shown


def totals_section(cluster: str, df: pd.DataFrame, groups, counts: dict, health_on: bool) -> None:
    total_lag = int(df["total lag"].fillna(0).sum()) if len(df) else 0
    cols = st.columns(5)
    cols[0].metric("Groups", len(df))
    cols[1].metric("Stable", int(df["state"].eq("Stable").sum()) if len(df) else 0)
    cols[2].metric("Rebalancing", sum(1 for g in groups if isinstance(g.state, GroupState) and g.state.rebalancing))
    cols[3].metric("Total lag (offsets)", f"{total_lag:,}")
    cols[4].metric("Rebalances in the last hour", sum(counts.values()))
    last = max((g.last_sample_at for g in groups if g.last_sample_at), default=None)
    st.caption(
        f"Cluster {shared.md(cluster)} · newest sample {shared.fmt_time_zone(last)} · "
        "status is the evaluator's newest judgement (— where it has none"
        + ("" if health_on else ": this database has no status tables yet")
        + "); "
        "max lag seconds is the worst partition's, interpolated over the last hour's log ends at "
        '2-minute steps (the group page uses every sample), within "± (s)" of the truth; "lower bound" is ticked '
        "when the worst partition is further behind than that hour, so the seconds are a lower bound; states marked "
        "(inferred) are KIP-848 Assigning/Reconciling, which librdkafka reports as Unknown; a share group's lag is "
        "Kafka's share lag (records after its start offset not yet acknowledged or archived)."
    )


def filters_section(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The filter row; returns the rows it lets through and the picked types (an empty table says why by them)."""
    f1, f2, f3, f4, f5 = st.columns([3, 2, 2, 2, 1.4])
    search = f1.text_input("Search groups", key="ov_search", placeholder="part of a group name")
    states = sorted(df["state"].unique()) if len(df) else []
    picked = f2.multiselect("State", states, key="ov_states")
    types = TYPES + sorted(set(df["type"]) - set(TYPES))
    picked_types = f3.multiselect(
        "Type", types, key="ov_types", help="classic, consumer (KIP-848), share (KIP-932) or streams (KIP-1071)"
    )
    statuses = [s.name for s in Status if s.name in set(df["status"])] + (["—"] if "—" in set(df["status"]) else [])
    picked_status = f4.multiselect("Status", statuses, key="ov_status")
    lagging = f5.toggle("Lagging only", key="ov_lagging")
    return matching_rows(df, search, picked, picked_types, picked_status, lagging), picked_types


def groups_table_section(shown: pd.DataFrame, tz: str) -> None:
    """The groups table; selecting a row opens that group's page."""
    shown = shared.time_columns(shown.copy(), "no answer since")
    event = shared.table(
        shown,
        key="ov_table",
        on_select="rerun",
        selection_mode="single-row",
        column_config={
            "group": st.column_config.TextColumn("group", help="select a row to open the group"),
            "lag trend": st.column_config.LineChartColumn("lag trend", help="total lag over the chosen range"),
            "total lag": st.column_config.NumberColumn(format="%d"),
            "max lag": st.column_config.NumberColumn(format="%d"),
            "max lag seconds": st.column_config.NumberColumn(
                format="%.1f", help="seconds the worst partition trails the log end (empty: not known yet)"
            ),
            "± (s)": st.column_config.NumberColumn(
                format="%.1f",
                help="the most the true max lag seconds can differ: the record was appended between two of the"
                " samples this page reads (it thins an hour of history to 30, so a group's own page is closer)",
            ),
            "lower bound": st.column_config.CheckboxColumn(
                help="ticked: further behind than the hour of history, so max lag seconds is a lower bound"
            ),
            "status": st.column_config.TextColumn(help="group status (Burrow's rules): OK, WARN or ERR"),
            "worst partition": st.column_config.TextColumn(help="the worst partition status, e.g. STOP or STALL"),
            f"no answer since ({tz})": st.column_config.TextColumn(
                help="Kafka did not answer for this group in the newest cycle: the row is its last answer, from then"
            ),
        },
    )
    rows = event.selection.rows if event is not None and hasattr(event, "selection") else []
    if rows:
        st.switch_page("app_pages/group.py", query_params=shared.page_params(group=shown.iloc[rows[0]]["group"]))


def open_group_section(shown: pd.DataFrame) -> None:
    g1, g2 = st.columns([3, 1])
    target = g1.selectbox("Open a group", list(shown["group"]), key="ov_open", index=None, placeholder="type to search")
    if target:
        g2.page_link(
            "app_pages/group.py",
            label="Open group page",
            icon=":material/arrow_forward:",
            query_params=shared.page_params(group=target),
        )


def body() -> None:
    c = shared.choice()
    since, until = shared.window()
    groups = shared.read(read_groups, c.cluster)
    counts = shared.read(read_rebalance_counts, c.cluster, until - HOUR_MS)
    sparks = shared.read(read_total_lag_series, c.cluster, since, until, points=20)
    health_on = shared.has_health()
    health = shared.read(read_group_health_now, c.cluster) if health_on else {}
    lag_s = shared.read(read_max_lag_seconds, c.cluster)
    df = overview_frame(groups, counts, sparks, health, lag_s)

    totals_section(c.cluster, df, groups, counts, health_on)
    shown, picked_types = filters_section(df)
    if shown.empty:
        st.info(no_match_message(df, picked_types))
        return
    unanswered = [g for g in groups if g.last_answered_at is not None]
    if unanswered:
        st.warning(unanswered_message(unanswered))
    groups_table_section(shown, c.tz)
    open_group_section(shown)


st.title("Groups")
shared.live(body)

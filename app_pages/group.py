"""Group: a `kafka-consumer-groups --describe --state` header, partitions, members, lag over time.

A share group shows its share-partitions' in-flight records instead of committed
offsets (app_pages/group_share.py); a streams group its topology and tasks per
member instead of the members' partitions (app_pages/group_streams.py).
"""

import pandas as pd
import streamlit as st

from app_pages import group_share, group_streams, shared
from app_pages.charts import build_lag_chart, build_status_history_chart, to_wall_clock
from monitor.models import GroupState, GroupType
from monitor.names import visible
from monitor.store.events import read_events
from monitor.store.groups import read_group_header, read_group_names, read_members, read_unanswered
from monitor.store.health import read_group_health_now, read_partition_health_now, read_status_history
from monitor.store.lag import read_group_lag, read_lag_series
from monitor.store.lag_seconds import read_lag_seconds


def status_spans(rows) -> pd.DataFrame:
    """Status change rows -> (series, status, valid_from, valid_to): each row holds until its series' next."""
    spans, last = [], {}
    for r in rows:  # oldest first
        series = "group" if r.topic is None else f"{r.topic}-{r.partition}"
        if series in last:
            spans[last[series]]["valid_to"] = r.at
        last[series] = len(spans)
        spans.append({"series": series, "status": r.status.name, "valid_from": r.at, "valid_to": None})
    return pd.DataFrame(spans, columns=["series", "status", "valid_from", "valid_to"])


def epochs_text(header) -> str:
    """The epochs kafka-share-groups / kafka-streams-groups --describe --state print, for the groups that have them."""
    parts = []
    if header.epoch is not None:
        parts.append(f"GROUP-EPOCH {header.epoch}")
    if header.assignment_epoch is not None:
        parts.append(f"TARGET-ASSIGNMENT-EPOCH {header.assignment_epoch}")
    if header.topology is not None:
        parts.append(f"TOPOLOGY-EPOCH {header.topology.epoch}")
    return "".join(f"   {p}" for p in parts)


def partitions_frame(partitions, lag_s: dict, status: dict) -> pd.DataFrame:
    """Per partition its committed offset, log end, lag, lag seconds, status and owner."""
    columns = ["topic", "partition", "committed", "log end", "lag", "lag seconds", "status"]
    columns += ["client id", "host", "owner member"]
    rows = [
        {
            "topic": p.topic,
            "partition": p.partition,
            "committed": p.committed,
            "log end": p.log_end,
            "lag": p.lag,
            "lag seconds": shared.fmt_lag_seconds(lag_s.get((p.topic, p.partition))),
            "status": shared.fmt_status(status.get((p.topic, p.partition))),
            "client id": p.client_id,
            "host": p.host,
            "owner member": p.member_id,
        }
        for p in partitions
    ]
    return pd.DataFrame(rows, columns=columns)


def members_frame(members) -> pd.DataFrame:
    """Per member its identity and partitions; rack and subscribed topics when some member has them
    (KIP-848 and share groups read from the coordinator's log)."""
    columns = ["client id", "host", "member id", "instance id", "since", "partitions", "assignment"]
    if any(m.rack for m in members):
        columns.insert(2, "rack")
    if any(m.subscribed for m in members):
        columns.append("subscribed topics")
    rows = [
        {
            "client id": m.client_id,
            "host": m.host,
            "rack": m.rack,
            "member id": m.member_id,
            "instance id": m.instance_id,
            "since": m.since,
            "partitions": len(m.assignment),
            "assignment": ", ".join(f"{t}-{p}" for t, p in m.assignment),
            "subscribed topics": ", ".join(m.subscribed),
        }
        for m in members
    ]
    return pd.DataFrame(rows, columns=columns)


def worst_lag_seconds(lag_s: dict):
    """The furthest-behind partition's lag seconds (a lower bound beats an equal exact value); None if none is known."""
    known = [v for v in lag_s.values() if v is not None]
    return max(known, key=lambda v: (v.seconds, v.at_least)) if known else None


def partitions_section(partitions, lag_s: dict, status: dict, health_on: bool) -> None:
    st.subheader("Partitions")
    st.caption(
        "lag seconds: how long ago the record after the committed offset was appended, interpolated over "
        "the last hour's log ends (±: the most it can be off; ≥: older than that hour, a lower bound); status: "
        "the evaluator's newest judgement of the partition (— where it has none"
        + ("" if health_on else ": no status tables yet")
        + ")."
    )
    shared.table(
        partitions_frame(partitions, lag_s, status),
        key="gp_partitions",
        column_config={"lag seconds": st.column_config.TextColumn(help=shared.LAG_SECONDS_HELP)},
    )


def members_section(members, share: bool) -> None:
    st.subheader("Members")
    if share:
        st.caption(
            "A share group's members share partitions: the coordinator may assign one partition to several of "
            "them, and each acquires records from it. lagmon stores one holder per partition (the first member "
            "listed), so a partition held by several members shows under one of them."
        )
    shared.table(shared.time_columns(members_frame(members), "since"), key="gp_members")


st.title("Group")
c = shared.choice()
names = shared.read(read_group_names, c.cluster)
requested = shared.follow_group_link(names, "gp_group")
group = st.selectbox("Group", names, key="gp_group", index=None, placeholder="pick a group")
if requested and requested not in names:
    st.warning("That group is not in the store for this cluster:")
    st.code(requested, language=None)
if not group:
    st.info("Pick a group above, or open one from the Overview.")
    st.stop()
if st.query_params.get("group") != group:
    st.query_params["group"] = group


def metrics_section(header, partitions, health, lag_s: dict) -> None:
    lags = [p.lag for p in partitions if p.lag is not None]
    total = sum(lags)
    cols = st.columns([1.6, 1, 1, 1, 1, 1.2, 1, 1.2])  # state and type names need the room
    cols[0].metric("State", str(header.state) + (" *" if header.state_inferred else ""))
    cols[1].metric("Status", shared.fmt_status(health and health.status))
    cols[2].metric("Members", header.members)
    cols[3].metric("Total lag", f"{total:,}" if lags else "—")
    cols[4].metric("Max lag", f"{max(lags):,}" if lags else "—")
    cols[5].metric("Max lag seconds", shared.fmt_lag_seconds(worst_lag_seconds(lag_s)), help=shared.LAG_SECONDS_HELP)
    cols[6].metric("Coordinator (id)", "—" if header.coordinator is None else header.coordinator)
    cols[7].metric("Type", str(header.type))


def describe_section(header) -> None:
    """The --describe header line, then why the state shown may not be the present one (each when it applies)."""
    st.text(
        f"GROUP {group}   ASSIGNMENT-STRATEGY {header.assignor or '-'}   PROTOCOL-TYPE {header.protocol_type}"
        f"   STATE SINCE {shared.fmt_time_zone(header.since)}" + epochs_text(header)
    )
    if header.full_id is not None:
        with st.expander(f"The group's full id ({len(header.full_id):,} characters)"):
            st.caption(
                "Its id has a NUL or is too long to key on, so lagmon knows it by the name above: its start and "
                "a digest of the whole id. The whole id, with control and invisible characters as \\u escapes:"
            )
            st.text(visible(header.full_id))
    if header.state == GroupState.NOT_READY:
        st.warning(group_streams.NOT_READY)
    if header.state_inferred:
        st.caption("* KIP-848 state inferred: librdkafka reports Assigning/Reconciling as Unknown.")
    if not header.current:
        st.warning("This group is gone (deleted or expired); showing its last known state.")
    answered_at = shared.read(read_unanswered, c.cluster).get(group)
    if answered_at is not None:
        st.warning(
            "Kafka did not answer for this group in the newest cycle (a broker restarting, a coordinator "
            f"moving): what follows is its last answer, from {shared.fmt_time_zone(answered_at)}. The Health "
            "page's recent errors say which calls failed."
        )
    if header.note:
        st.text(f"Note: {header.note}")


def lag_over_time_section(since: int, until: int, domain: list) -> bool:
    """Returns False when the range has no samples: the sections after it are then left out."""
    st.subheader("Lag over time")
    points = shared.read(read_lag_series, c.cluster, group, since, until)
    if not points:
        st.info("No samples of this group in the chosen range.")
        return False
    ldf = pd.DataFrame([{"at": p.at, "topic": p.topic, "partition": p.partition, "lag": p.lag} for p in points])
    by = st.radio("Lines per", ["topic", "partition"], horizontal=True, key="gp_by")
    st.altair_chart(build_lag_chart(ldf, by, c.tz, domain), width="stretch")
    st.caption(f"{ldf['at'].nunique()} samples shown (at most 300, evenly spread over the range).")
    return True


def status_history_section(health_on: bool, since: int, until: int, domain: list) -> None:
    st.subheader("Status history")
    history = shared.read(read_status_history, c.cluster, group) if health_on else []
    spans = status_spans(history)
    spans = spans[(spans["valid_to"].isna() | (spans["valid_to"] > since)) & (spans["valid_from"] < until)]
    if spans.empty:
        st.info(
            "No status stored for this group in the chosen range (the collector's evaluator writes one "
            "whenever a status changes)."
        )
    else:
        st.altair_chart(build_status_history_chart(spans, c.tz, domain), width="stretch")


def events_section(since: int, until: int) -> None:
    st.subheader("Recent events")
    events = [e for e in shared.read(read_events, c.cluster, group, since) if e.at < until]
    edf = pd.DataFrame(
        [{"at": e.at, "event": str(e.kind), "detail": str(e.detail)} for e in events[-200:]],
        columns=["at", "event", "detail"],
    )
    shared.table(shared.time_columns(edf, "at"), key="gp_events")


def body() -> None:
    since, until = shared.window()
    header = shared.read(read_group_header, c.cluster, group)
    partitions = shared.read(read_group_lag, c.cluster, group) if header else []
    if header is None:
        st.info("No state has been stored for this group yet.")
        return
    health_on = shared.has_health()
    health = shared.read(read_group_health_now, c.cluster).get(group) if health_on else None
    part_status = shared.read(read_partition_health_now, c.cluster, group) if health_on else {}
    lag_s = shared.read(read_lag_seconds, c.cluster, group)
    metrics_section(header, partitions, health, lag_s)
    describe_section(header)

    members = shared.read(read_members, c.cluster, group)
    if header.type == GroupType.SHARE:
        group_share.section(c.cluster, group, partitions, members, lag_s, part_status)
    else:
        partitions_section(partitions, lag_s, part_status, health_on)
    if header.type == GroupType.STREAMS:
        group_streams.section(header, members)
    else:
        members_section(members, share=header.type == GroupType.SHARE)

    domain = list(to_wall_clock([since, until], c.tz))
    if lag_over_time_section(since, until, domain):
        status_history_section(health_on, since, until, domain)
        events_section(since, until)


st.page_link(
    "app_pages/rebalances.py",
    label="Rebalances of this group",
    icon=":material/shuffle:",
    query_params=shared.page_params(group=group),
)
shared.live(body)

"""The Group page's part for a share group (KIP-932): each share-partition's in-flight records.

A share group commits no offsets: the coordinator keeps a start offset per
share-partition and the state of the records after it. The store holds the
share-partition's position (start offset + records already done) as the group's
"committed" offset, so lag here, on the Overview and in the charts is Kafka's share
lag (KIP-1226). The frame is pure; `section` draws it.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages import shared
from app_pages.charts import build_share_inflight_chart
from monitor.store.share import read_share_partitions

COLUMNS = [
    "topic",
    "partition",
    "start offset",
    "log end",
    "lag (records)",
    "acknowledged (records)",
    "archived (records)",
    "redelivering (records)",
    "max deliveries",
    "lag seconds",
    "status",
    "assigned to",
]

CAPTION = (
    "Share lag (Kafka's, KIP-1226): records between the share-partition's start offset and the log end not yet "
    "acknowledged or archived; every record before the start offset is done. Members share partitions and "
    "acknowledge record by record, so there is no committed offset: acknowledged and archived (rejected, or "
    "delivered max-delivery-count times) records after the start offset are done, redelivering ones were delivered "
    "and are available again (released, or their lock timed out), and max deliveries is the most times any record "
    "in flight has been delivered. Counts are of records; start offset and log end are offsets."
)


def share_frame(partitions, share: dict, lag_s: dict, status: dict, holders: dict) -> pd.DataFrame:
    """One row per share-partition: `partitions` from read_group_lag, `share` from read_share_partitions
    (a partition without state yet has empty counts), `holders` (topic, partition) -> client ids."""
    rows = []
    for p in partitions:
        key = (p.topic, p.partition)
        sp = share.get(key)
        rows.append(
            {
                "topic": p.topic,
                "partition": p.partition,
                "start offset": None if sp is None else sp.start_offset,
                "log end": p.log_end,
                "lag (records)": p.lag,
                "acknowledged (records)": None if sp is None else sp.acknowledged,
                "archived (records)": None if sp is None else sp.archived,
                "redelivering (records)": None if sp is None else sp.redelivering,
                "max deliveries": None if sp is None else sp.max_delivery_count,
                "lag seconds": shared.fmt_lag_seconds(lag_s.get(key)),
                "status": shared.fmt_status(status.get(key)),
                "assigned to": ", ".join(holders.get(key, ())),
            }
        )
    df = pd.DataFrame(rows, columns=COLUMNS)
    counts = COLUMNS[2:9]
    df[counts] = df[counts].astype("Int64")  # whole numbers; empty where nothing is known
    return df


def chart_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The share frame in the columns build_share_inflight_chart reads (partitions with state only)."""
    known = df[df["start offset"].notna()]
    return pd.DataFrame(
        {
            "topic": known["topic"],
            "partition": known["partition"],
            "acknowledged": known["acknowledged (records)"].astype("int64"),
            "archived": known["archived (records)"].astype("int64"),
            "redelivering": known["redelivering (records)"].astype("int64"),
            "lag": known["lag (records)"].astype("float64"),
        }
    )


def section(cluster: str, group: str, partitions, members, lag_s: dict, status: dict) -> None:
    """Share-partitions: the table, what share lag means, and the in-flight chart."""
    st.subheader("Share-partitions")
    st.caption(CAPTION)
    share = shared.read(read_share_partitions, cluster, group)
    holders: dict[tuple[str, int], list[str]] = {}
    for m in members:
        for tp in m.assignment:
            holders.setdefault(tuple(tp), []).append(m.client_id or m.member_id)
    df = share_frame(partitions, share, lag_s, status, holders)
    shared.table(
        df,
        key="gp_share",
        column_config={
            "start offset": st.column_config.NumberColumn(
                format="%d", help="share-partition start offset: every record before it is acknowledged or archived"
            ),
            "lag (records)": st.column_config.NumberColumn(
                format="%d", help="records after the start offset not yet acknowledged or archived (KIP-1226)"
            ),
            "max deliveries": st.column_config.NumberColumn(
                format="%d", help="the most deliveries any record in flight has had"
            ),
        },
    )
    if df.empty:
        st.info("No share-partition state yet: the group has not been delivered any records.")
        return
    if not share:
        st.info(
            "No in-flight state stored for this group yet: the collector reads it from `__share_group_state` "
            "(the share-state tail needs Read on that topic)."
        )
        return
    st.altair_chart(build_share_inflight_chart(chart_frame(df)), width="stretch")

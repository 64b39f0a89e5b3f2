"""Topics: every partition's log start and end, produce rate, and every group reading the topic."""

import pandas as pd
import streamlit as st

from app_pages import shared
from monitor.store.topics import read_topic_consumers, read_topic_partitions


def partitions_frame(parts) -> pd.DataFrame:
    """Per partition its log start and end, records between them and produce rate."""
    return pd.DataFrame(
        [
            {
                "topic": p.topic,
                "partition": p.partition,
                "log start": p.log_start,
                "log end": p.log_end,
                "records": p.log_end - p.log_start,
                "produce rate (/s)": p.rate_per_s,
            }
            for p in parts
        ]
    )


def readers_frame(consumers) -> pd.DataFrame:
    """Per topic and group reading it: how many of its partitions the group reads and its lag on them."""
    return pd.DataFrame(
        [{"topic": x.topic, "group": x.group_id, "partitions": x.partitions, "lag": x.total_lag} for x in consumers],
        columns=["topic", "group", "partitions", "lag"],
    )


def topics_frame(pdf: pd.DataFrame, readers: pd.DataFrame) -> pd.DataFrame:
    """Per topic its partitions, records, produce rate (empty when no partition has one) and groups reading it."""
    by_topic = pdf.groupby("topic", as_index=False).agg(
        partitions=("partition", "count"),
        records=("records", "sum"),
        rate=("produce rate (/s)", lambda s: s.sum(min_count=1)),
    )
    by_topic["groups"] = by_topic["topic"].map(readers.groupby("topic")["group"].count()).fillna(0).astype(int)
    return by_topic.rename(columns={"rate": "produce rate (/s)"})


def topics_section(by_topic: pd.DataFrame) -> list[str]:
    """The topics table under its search box; returns the topics it shows, for the topic picker."""
    search = st.text_input("Search topics", key="tp_search", placeholder="part of a topic name")
    if search:
        by_topic = by_topic[by_topic["topic"].str.contains(search, case=False, regex=False)]
    st.caption("Produce rate = log-end growth over the chosen range.")
    shared.table(
        by_topic,
        key="tp_topics",
        column_config={"produce rate (/s)": st.column_config.NumberColumn(format="%.1f")},
    )
    return list(by_topic["topic"])


def topic_section(topics: list[str], pdf: pd.DataFrame, readers: pd.DataFrame) -> None:
    """One picked topic: its partitions beside the groups reading it."""
    topic = st.selectbox("Topic", topics, key="tp_topic")
    left, right = st.columns(2)
    with left:
        st.subheader("Partitions")
        shared.table(
            pdf[pdf["topic"] == topic].drop(columns=["topic"]),
            key="tp_parts",
            column_config={"produce rate (/s)": st.column_config.NumberColumn(format="%.1f")},
        )
    with right:
        st.subheader("Groups reading it")
        mine = readers[readers["topic"] == topic].drop(columns=["topic"])
        if mine.empty:
            st.info("No group has committed offsets on this topic.")
        else:
            shared.table(mine, key="tp_groups")


def body() -> None:
    c = shared.choice()
    since, _until = shared.window()
    parts = shared.read(read_topic_partitions, c.cluster, since)
    consumers = shared.read(read_topic_consumers, c.cluster)
    if not parts:
        st.info("No partition offsets stored for this cluster yet.")
        return
    pdf = partitions_frame(parts)
    readers = readers_frame(consumers)
    topics = topics_section(topics_frame(pdf, readers))
    if topics:
        topic_section(topics, pdf, readers)


st.title("Topics")
shared.live(body)

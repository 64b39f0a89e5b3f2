"""The dashboard for each group type: the Overview's type filter, a share group's in-flight records,
a streams group's topology and tasks, and the rest of a group's pages for both.

The database is written through the real Store and snapshot diff from tests/support/factories.py's builders:
a classic group, a share group, a streams group and a streams group that is NotReady.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from dashboard_seed import open_app
from factories import (
    COUNTS_REPARTITION,
    WORDS,
    make_group,
    make_share_group,
    make_snapshot,
    make_streams_group,
)

from monitor.events import compute_changes, compute_tracker
from monitor.models import GroupState, PartitionOffsets, TopicPartition
from monitor.store import Store, make_engine, upgrade

STEP_MS = 10_000
JOBS = [TopicPartition("jobs", p) for p in range(2)]


def metrics_state(at) -> str:
    return {m.label: m.value for m in at.metric}["State"]


def snapshot(at: int, i: int):
    """Sample i: the share group's jobs-0 moves on by 10 records a sample; a streams member joins at sample 3."""
    share = make_share_group()
    streams = make_streams_group()
    if i < 3:  # one instance only: it runs every task
        streams = make_streams_group(members=streams.members[:1])
    not_ready = make_streams_group("wordcount-new", state=GroupState.NOT_READY, members=(), committed={})
    classic = make_group("orders", committed={TopicPartition("orders", 0): 95})
    partitions = {TopicPartition("orders", 0): PartitionOffsets(0, 100)}
    partitions |= {tp: PartitionOffsets(0, 100 + 10 * i) for tp in JOBS}
    partitions |= {tp: PartitionOffsets(0, 100) for tp in (*WORDS, *COUNTS_REPARTITION)}
    return make_snapshot(at, cluster="prod", groups=[classic, share, streams, not_ready], partitions=partitions)


@pytest.fixture(scope="module")
def types_db(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('types') / 'types.db'}"
    engine = make_engine(url)
    upgrade(engine)
    store = Store(engine)
    now = int(datetime.now(UTC).timestamp() * 1000)
    prev, tracker = None, compute_tracker(None)
    for i in range(6):
        snap = snapshot(now - (5 - i) * STEP_MS, i)
        events, tracker, started, completed = compute_changes(prev, snap, tracker)
        store.write_snapshot(snap)
        store.write_events("prod", events)
        store.write_rebalances("prod", [*started, *completed])
        prev = snap
    engine.dispose()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LAGMON_DATABASE_URL", url)
        yield prev


def test_overview_type_filter_narrows_the_table_to_streams_groups(types_db):
    at = open_app()
    assert at.multiselect(key="ov_types").options == ["classic", "consumer", "share", "streams"]
    df = at.dataframe[0].value.set_index("group")
    assert df["type"].to_dict() == {
        "jobs-share": "share",
        "orders": "classic",
        "wordcount": "streams",
        "wordcount-new": "streams",
    }
    assert df.loc["jobs-share", "total lag"] == (150 - 65) + (150 - 90)  # Kafka's share lag: log end - position
    at.multiselect(key="ov_types").set_value(["streams"]).run()
    assert sorted(at.dataframe[0].value["group"]) == ["wordcount", "wordcount-new"]
    assert at.dataframe[0].value.set_index("group").loc["wordcount-new", "state"] == "NotReady"


def test_overview_says_why_a_type_has_no_groups(types_db):
    at = open_app()
    at.multiselect(key="ov_types").set_value(["consumer"]).run()
    assert at.dataframe == []
    (info,) = at.info
    assert info.value.startswith("no consumer groups: ") and "group.protocol=consumer" in info.value


def test_overview_explains_missing_share_groups(app_db_url):
    engine = make_engine(app_db_url)
    Store(engine).write_snapshot(make_snapshot(int(datetime.now(UTC).timestamp() * 1000), cluster="prod"))
    engine.dispose()
    at = open_app()
    at.multiselect(key="ov_types").set_value(["share"]).run()
    (info,) = at.info
    assert info.value.startswith("no share groups: share groups (KIP-932, Kafka 4)")
    assert "LAGMON_OFFSETS_TOPIC" in info.value and "__share_group_state" in info.value


def test_share_group_page_shows_start_offsets_and_in_flight_counts(types_db):
    at = open_app(page="group", group="jobs-share")
    assert any(t.value.startswith("GROUP jobs-share ") and "GROUP-EPOCH 4" in t.value for t in at.text)
    assert [h.value for h in at.subheader][:2] == ["Share-partitions", "Members"]
    share = at.dataframe[0].value.set_index("partition")
    assert share.loc[0].to_dict() == {
        "topic": "jobs",
        "start offset": 40,
        "log end": 150,
        "lag (records)": 150 - 40 - 25,
        "acknowledged (records)": 20,
        "archived (records)": 5,
        "redelivering (records)": 6,
        "max deliveries": 3,
        "lag seconds": share.loc[0, "lag seconds"],  # interpolated: covered by the lag tests
        "status": "—",
        "assigned to": "share-0",
    }
    assert (share.loc[1, "start offset"], share.loc[1, "lag (records)"]) == (90, 60)
    assert any("Share lag (Kafka's, KIP-1226)" in c.value for c in at.caption)
    members = at.dataframe[1].value.set_index("client id")
    assert members.loc["share-1", "subscribed topics"] == "jobs" and members.loc["share-1", "rack"] == "r1"
    charts = at.get("vega_lite_chart")
    assert len(charts) == 2  # in-flight records per share-partition, then lag over time
    assert "records after the start offset" in charts[0].proto.spec


def test_streams_group_page_shows_topology_and_tasks_per_member(types_db):
    at = open_app(page="group", group="wordcount")
    assert any("GROUP-EPOCH 7   TARGET-ASSIGNMENT-EPOCH 7   TOPOLOGY-EPOCH 1" in t.value for t in at.text)
    assert [h.value for h in at.subheader][:4] == ["Partitions", "Topology", "Tasks per member", "Task owners"]
    parts = at.dataframe[0].value
    assert set(parts["client id"]) == {"wordcount-0", "wordcount-1"}  # the owner of the active task
    topology = at.dataframe[1].value.set_index("sub-topology")
    assert topology.loc["0", "source topics"] == "words"
    assert topology.loc["1", "repartition source topics"] == "wordcount-counts-repartition"
    assert topology.loc["1", "changelogs"] == "wordcount-counts-changelog"
    tasks = at.dataframe[2].value.set_index("client id")
    assert tasks.loc["wordcount-0", ["process id", "active tasks", "standby tasks", "warm-up tasks"]].tolist() == [
        "process-0",
        "0_0, 1_0",
        "1_1",
        "",
    ]
    assert tasks.loc["wordcount-1", "active tasks"] == "0_1, 1_1"
    owners = at.dataframe[3].value.set_index("task")
    assert owners.loc["1_0", "active"] == "wordcount-0 (process-0)"
    assert owners.loc["1_0", "standby"] == "wordcount-1 (process-1)"
    assert not any("NotReady" in w.value for w in at.warning)


def test_a_not_ready_streams_group_is_explained(types_db):
    at = open_app(page="group", group="wordcount-new")
    assert metrics_state(at) == "NotReady"
    (warning,) = [w.value for w in at.warning if "NotReady" in w.value]
    assert "internal repartition or changelog topics" in warning
    assert any(i.value.startswith("No members now") for i in at.info)


@pytest.mark.parametrize("group", ["jobs-share", "wordcount"])
def test_lag_history_rebalances_and_events_work_for_share_and_streams_groups(types_db, group):
    at = open_app(page="group", group=group, range="15m")
    assert any(c.value.startswith("6 samples shown") for c in at.caption)
    events = at.dataframe[-1].value
    assert "group_appeared" in set(events["event"])
    at = open_app(page="rebalances", group=group, range="15m")
    assert [e.value for e in at.exception] == []


def test_streams_member_join_is_a_rebalance_with_its_tasks_moved(types_db):
    at = open_app(page="rebalances", group="wordcount", range="15m")
    assert {m.label: m.value for m in at.metric}["Rebalances"] == "1"


def test_a_streams_members_pending_tasks_are_what_its_target_assignment_adds_and_removes():
    from app_pages.group_streams import members_frame
    from monitor.models import StreamsMember, StreamsTasks, Task
    from monitor.store.groups import MemberRow

    now = StreamsTasks(active=(Task("0", 0), Task("0", 1)))
    target = StreamsTasks(active=(Task("0", 0),), warmup=(Task("1", 1),))
    settled = StreamsMember("p-1", 3, now, target_tasks=now)
    moving = StreamsMember("p-2", 3, now, target_tasks=target)
    rows = [MemberRow(f"m-{i}", None, f"c-{i}", "h", 0, (), streams=s) for i, s in enumerate((settled, moving))]
    df = members_frame(rows)
    assert df["pending (target assignment)"].tolist() == ["", "active -0_1; warmup +1_1"]
    assert df["topology epoch"].tolist() == [3, 3]


def test_a_share_partition_without_stored_state_has_empty_counts_and_no_bar():
    """Assigned, but the share-state tail has not said anything about it (no Read on __share_group_state)."""
    from app_pages.group_share import chart_frame, share_frame
    from monitor.models import SharePartition
    from monitor.store.lag import PartitionLag

    parts = [
        PartitionLag("jobs", 0, 65, 150, 85, "sm-0", "share-0", "h"),
        PartitionLag("jobs", 1, None, 150, None, "sm-1", "share-1", "h"),
    ]
    share = {("jobs", 0): SharePartition(40, 25, acknowledged=20, archived=5, redelivering=6, max_delivery_count=3)}
    df = share_frame(parts, share, {}, {}, {("jobs", 0): ["share-0", "share-2"]})
    assert df["assigned to"].tolist() == ["share-0, share-2", ""]
    assert df.loc[1, ["start offset", "lag (records)", "acknowledged (records)"]].isna().all()
    assert chart_frame(df).to_dict("records") == [
        {"topic": "jobs", "partition": 0, "acknowledged": 20, "archived": 5, "redelivering": 6, "lag": 85.0}
    ]

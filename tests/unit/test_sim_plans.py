"""The share and streams scenarios as data: how members acknowledge, what the Streams app is
given, what the plans contain, and the truth readers that tests check Kafka's tools against."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from monitor.sim.scenarios import (
    SHARE_LOCK_MS,
    Options,
    plan_mixed,
    plan_share,
    plan_streams,
)
from monitor.sim.specs import (
    StreamsSpec,
    parse_streams_state,
    parse_streams_tasks,
    share_ack,
    share_consumer_config,
    streams_assigned,
    streams_command,
    streams_properties,
)
from monitor.sim.truth import committed_rate, members_at, produced_rate, produced_total, share_ack_totals

OPTIONS = Options(bootstrap="127.0.0.1:9092", suffix="x", kafka_libs=Path("/libs"))


def test_share_ack_accepts_most_releases_some_once_and_rejects_a_few():
    kinds = Counter(share_ack(offset, 1, 10, 25) for offset in range(1000))
    assert kinds == {"accept": 860, "release": 100, "reject": 40}
    assert share_ack(5, 1, 10, 25) == "release"
    assert share_ack(5, 2, 10, 25) == "accept"  # a released record is taken when it comes back
    assert share_ack(24, 3, 10, 25) == "reject"
    assert {share_ack(o, 1, 0, 0) for o in range(100)} == {"accept"}


def test_share_members_acknowledge_explicitly():
    spec = plan_share(OPTIONS).members[0]
    conf = share_consumer_config(spec)
    assert conf["share.acknowledgement.mode"] == "explicit"
    assert (conf["group.id"], conf["client.id"]) == ("sim-share-x-group", "sim-share-x-m0")


def test_streams_instances_get_their_own_state_dir_and_a_capped_heap():
    spec = StreamsSpec("b:1", "app", "app-m0", "in", "out", Path("/libs"), process_delay_ms=40)
    props = streams_properties(spec, Path("/tmp/m0/state"))
    assert props["application.id"] == "app" and props["group.protocol"] == "streams"
    assert props["state.dir"] == "/tmp/m0/state" and props["process.delay.ms"] == "40"
    assert (props["input.topic"], props["output.topic"]) == ("in", "out")
    cmd = streams_command(spec, Path("/tmp/m0/app.properties"), "/usr/bin/java")
    assert cmd[0] == "/usr/bin/java" and "-Xmx256m" in cmd and "-Djava.io.tmpdir=/tmp/m0" in cmd
    assert cmd[-3:] == ["/libs/*:/libs/apps", "LagmonStreams", "/tmp/m0/app.properties"]


def test_the_apps_state_lines_are_parsed_and_nothing_else():
    assert parse_streams_state("state REBALANCING -> RUNNING") == ("REBALANCING", "RUNNING")
    assert parse_streams_state("[2026-01-01] INFO state store restored") is None
    assert parse_streams_state("") is None


def test_a_streams_group_is_assigned_once_its_instances_hold_all_its_tasks_each_some():
    def instance(group, held, tasks=8):
        return SimpleNamespace(spec=SimpleNamespace(group=group, tasks=tasks), active_tasks=held)

    assert streams_assigned([instance("g", 3), instance("g", 3), instance("g", 2)])
    assert not streams_assigned([instance("g", 4), instance("g", 3), instance("g", 0)])  # one waits for its first
    assert not streams_assigned([instance("g", 3), instance("g", 2), instance("g", 2)])  # one task in flight
    assert streams_assigned([instance("g", 8), instance("h", 1, tasks=0)])  # a group whose count is not known
    assert streams_assigned([])


def test_the_apps_task_count_lines_are_parsed_and_nothing_else():
    assert parse_streams_tasks("tasks 4") == 4
    assert parse_streams_tasks("tasks 0") == 0
    assert parse_streams_tasks("state REBALANCING -> RUNNING") is None
    assert parse_streams_tasks("tasks restored") is None


def test_the_share_plan_sets_the_group_up_before_anyone_joins_and_stalls_one_member():
    plan = plan_share(OPTIONS)
    assert plan.group_configs == {
        "sim-share-x-group": {
            "share.auto.offset.reset": "earliest",
            "share.record.lock.duration.ms": str(SHARE_LOCK_MS),
        }
    }
    m0, m1, m2 = plan.members
    assert m0.stall_after_s is not None and m0.stall_s * 1000 > SHARE_LOCK_MS  # the locks run out meanwhile
    assert m1.stall_after_s is None and m1.leave_after_s is None
    assert m2.leave_after_s > m0.stall_after_s + m0.stall_s  # the leave does not overlap the stall
    assert plan.topics == {"sim-share-x-topic": 3} and not plan.instances


def test_the_streams_plan_starts_three_instances_then_stops_kills_and_adds_one():
    plan = plan_streams(OPTIONS)
    assert [i.client_id for i in plan.instances] == [f"sim-streams-x-m{i}" for i in range(3)]
    assert {i.group for i in plan.instances} == {"sim-streams-x-group"}
    assert plan.topics == {"sim-streams-x-topic": 4, "sim-streams-x-output": 4}  # the sink must exist
    assert list(plan.rates) == ["sim-streams-x-topic"]
    assert [a.name for a in sorted(plan.actions, key=lambda a: a.after_s)] == [
        "stop sim-streams-x-m1",
        "SIGKILL sim-streams-x-m2",
        "start sim-streams-x-m3",
    ]
    assert not plan_streams(OPTIONS, instances=2, churn=False).actions


def test_mixed_adds_a_light_share_group_and_streams_group():
    plan = plan_mixed(OPTIONS)
    share = [m for m in plan.members if m.group == "sim-share-x-group"]
    assert len(share) == 2 and len(plan.instances) == 2
    assert "sim-share-x-group" in plan.group_configs
    assert not [a for a in plan.actions if "streams" in a.name]  # the demo's instances stay up
    groups = {m.group for m in plan.members} | {i.group for i in plan.instances}
    assert len(groups) == 7


def test_truth_readers_for_share_and_streams_groups():
    truth = [
        {"ts": 1, "event": "join", "group": "g", "client_id": "a"},
        {"ts": 2, "event": "join", "group": "g", "client_id": "b"},
        {"ts": 3, "event": "acks", "group": "g", "client_id": "a", "accept": 5, "release": 1, "reject": 0},
        {"ts": 4, "event": "crash", "group": "g", "client_id": "b"},
        {"ts": 5, "event": "acks", "group": "g", "client_id": "a", "accept": 2, "reject": 1, "redelivered": 1},
        {"ts": 6, "event": "produced", "topic": "t", "counts": {"0": 3, "1": 4}},
        {"ts": 7, "event": "produced", "topic": "t", "counts": {"0": 2}},
        {"ts": 8, "event": "leave", "group": "g", "client_id": "a"},
    ]
    assert members_at(truth, "g", 2) == {"a", "b"}
    assert members_at(truth, "g", 4) == {"a"}
    assert members_at(truth, "g", 8) == set()
    assert share_ack_totals(truth, "g") == {"accept": 7, "release": 1, "reject": 1, "refused": 0, "redelivered": 1}
    assert produced_total(truth, "t") == 9


def test_produced_rate_follows_create_times_not_when_deliveries_were_reported():
    # 200 records/s for 3 s; the first second's deliveries were late, so its line is nearly
    # empty and the next carries the backlog: the lines' own times would read 290/s
    truth = [
        {"ts": 1_000, "event": "produced", "topic": "t", "counts": {"0": 20}, "created_ms": [0, 95]},
        {"ts": 2_000, "event": "produced", "topic": "t", "counts": {"0": 380}, "created_ms": [100, 1_995]},
        {"ts": 3_000, "event": "produced", "topic": "t", "counts": {"0": 200}, "created_ms": [2_000, 2_995]},
    ]
    assert produced_rate(truth, "t") == 599 / 2.995
    assert produced_rate(truth, "other") == 0.0


def test_committed_rate_is_the_consumers_pace_while_it_runs_not_a_stall_of_the_machine():
    def commits(times_and_offsets):  # one commit of two partitions at each time
        return [
            {"ts": ts, "event": "commit", "group": "g", "topic": "t", "partition": p, "offset": offset}
            for ts, offset in times_and_offsets
            for p in (0, 1)
        ]

    # 50 records/s over two partitions, then a 2.3 s stall that commits 10 records in all, then 50/s again
    paced = commits([(0, 100), (1_000, 125), (2_000, 150), (4_300, 155), (5_300, 180), (6_300, 205)])
    assert committed_rate(paced, "g") == 50.0
    assert committed_rate(commits([(0, 0), (1_000, 100), (2_000, 200)]), "g") == 200.0  # too fast shows
    assert committed_rate(paced, "other") == 0.0

"""A restarted collector carries what its first answer leaves out, from the store's last answer.

A worker is restarted when librdkafka crashes on a broker stopping (docs/production.md, "When things
break"), so its first answer often comes while a coordinator still loads the group: the group is
neither gone nor back, and its alert neither resolves nor fires again. Real SQLite and PostgreSQL, scripted answers.
"""

from __future__ import annotations

from factories import make_group, make_snapshot

from monitor.alerts.engine import AlertEngine
from monitor.alerts.rules import parse_rules
from monitor.collector import GONE_AFTER_MS, Collector
from monitor.health import HealthEngine, HealthStage
from monitor.models import EventKind, GroupState, Member, PartitionOffsets, TopicPartition
from monitor.store import Store, read_events, read_groups, read_unanswered
from monitor.store.alerts import read_alert, read_outbox
from monitor.store.rebalances import read_rebalances

RULES = parse_rules(
    """
channels: {hook: "json://127.0.0.1:9/hook"}
rules:
  - {name: behind, kind: lag_offsets, above: 10}
""",
    "rules.yaml",
)
BEHIND = TopicPartition("b-topic", 0)


class Answers:
    """Kafka's answers at 1 s: group a keeps up; group b is 50 behind, and left out when `b_there` is False."""

    def __init__(self):
        self.now, self.b_there = 1_000_000, True

    def fetch_snapshot(self, now_ms):
        groups = [make_group("a", committed={TopicPartition("a-topic", 0): 100})]
        if self.b_there:
            groups.append(make_group("b", committed={BEHIND: 50}))
        partitions = {tp: PartitionOffsets(0, 100) for g in groups for tp in g.committed}
        return make_snapshot(self.now, cluster="c", groups=groups, partitions=partitions)


def collector(engine, answers: Answers, carry_from_store: bool = True) -> Collector:
    """What `collect` wires (the health stage, then the alert engine): a new one is a restarted worker."""
    stage = HealthStage(engine, HealthEngine("c", RULES.evaluator))
    alerts = AlertEngine(engine, "c", RULES, now_ms=lambda: answers.now)
    return Collector(
        answers,
        Store(engine),
        "c",
        now_ms=lambda: answers.now,
        health=stage,
        observers=[alerts],
        carry_from_store=carry_from_store,
    )


def run(c: Collector, answers: Answers, cycles: int) -> None:
    for _ in range(cycles):
        assert c.poll_once().ok
        answers.now += 1000


def messages(engine) -> list[tuple[str, str]]:
    return [(row.kind, read_alert(engine, row.alert_id).group_id) for row in read_outbox(engine)]


def group_events(engine) -> list[tuple[str, str]]:
    return [(e.kind, e.group_id) for e in read_events(engine, "c") if e.kind.startswith("group_")]


def test_a_group_the_first_answer_after_a_restart_leaves_out_is_carried_not_gone(db_engine):
    answers = Answers()
    run(collector(db_engine, answers), answers, 3)
    assert messages(db_engine) == [("firing", "b")]
    answers.b_there = False
    restarted = collector(db_engine, answers)
    run(restarted, answers, 1)
    assert read_unanswered(db_engine, "c") == {"b": answers.now - 2000}
    b = next(g for g in read_groups(db_engine, "c") if g.group_id == "b")
    assert b.total_lag == 50  # its last answer, still current
    answers.b_there = True
    run(restarted, answers, 3)
    assert messages(db_engine) == [("firing", "b")]  # neither resolved nor fired again
    assert group_events(db_engine) == [(EventKind.GROUP_APPEARED, "a"), (EventKind.GROUP_APPEARED, "b")]
    assert read_unanswered(db_engine, "c") == {}


def test_a_group_still_left_out_is_gone_after_the_usual_time(db_engine):
    answers = Answers()
    run(collector(db_engine, answers), answers, 3)
    answers.b_there = False
    restarted = collector(db_engine, answers)
    run(restarted, answers, GONE_AFTER_MS // 1000)
    assert "b" in {g.group_id for g in read_groups(db_engine, "c")}
    run(restarted, answers, 2)
    assert "b" not in {g.group_id for g in read_groups(db_engine, "c")}
    assert group_events(db_engine)[-1] == (EventKind.GROUP_DISAPPEARED, "b")
    assert messages(db_engine) == [("firing", "b"), ("resolved", "b")]


def test_a_one_shot_run_takes_its_one_answer_as_it_is(db_engine):
    """`collect --once` gets no second answer: a group it leaves out is gone, as before."""
    answers = Answers()
    run(collector(db_engine, answers), answers, 3)
    answers.b_there = False
    run(collector(db_engine, answers, carry_from_store=False), answers, 1)
    assert "b" not in {g.group_id for g in read_groups(db_engine, "c")}


REBALANCED = TopicPartition("r-topic", 0)


class Rebalancing:
    """Group r: Stable with one member; then rebalancing (a second member joining); then Stable with both."""

    def __init__(self):
        self.now, self.state = 1_000_000, GroupState.STABLE
        self.members = [Member("m-1", "c-1", "/10.0.0.1", assignment=(REBALANCED,))]

    def fetch_snapshot(self, now_ms):
        g = make_group("r", state=self.state, committed={REBALANCED: 10}, members=self.members)
        return make_snapshot(self.now, cluster="c", groups=[g], partitions={REBALANCED: PartitionOffsets(0, 10)})


def test_a_rebalance_open_when_the_collector_restarts_is_completed_in_its_own_row(db_engine):
    """The successor (a restarted worker, or a coordinated collector taking the group over) completes the
    rebalance its predecessor stored as begun, rather than leaving that row unsettled and adding another."""
    answers = Rebalancing()
    before = collector(db_engine, answers)
    run(before, answers, 2)
    began = answers.now - 1000  # the last Stable answer: where the rebalance is placed
    answers.state = GroupState.PREPARING_REBALANCE
    run(before, answers, 1)
    assert [(r.rebalance.started_at, r.rebalance.ended_at) for r in read_rebalances(db_engine, "c", "r")] == [
        (began, None)
    ]
    after = collector(db_engine, answers)  # the worker restarts mid-rebalance
    run(after, answers, 1)
    answers.state = GroupState.STABLE
    answers.members = [*answers.members, Member("m-2", "c-2", "/10.0.0.2", assignment=())]
    run(after, answers, 2)
    rows = [(r.rebalance.started_at, r.rebalance.ended_at is not None) for r in read_rebalances(db_engine, "c", "r")]
    assert rows == [(began, True)]

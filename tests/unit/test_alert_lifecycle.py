"""Rule conditions and the pending -> firing -> resolved state machine, with silences, acks and repeats."""

from __future__ import annotations

from dataclasses import replace

import pytest
from factories import SHARE_ON_T, make_share_group, make_snapshot

from monitor.alerts.lifecycle import (
    FIRING,
    PENDING,
    RESOLVED,
    GroupEvents,
    Silence,
    compute_alert_changes,
    compute_alert_due,
    compute_detail,
    compute_max_lag_seconds,
    evaluate_rules,
)
from monitor.alerts.message import compose_message, compute_dashboard_link
from monitor.alerts.rules import parse_rules
from monitor.health import HealthEngine
from monitor.health.report import GroupHealth, HealthReport, PartitionHealth
from monitor.health.rules import compute_group_status
from monitor.lag import LagClock, TimeLag
from monitor.models import Alert, GroupState, SharePartition, Status, TopicPartition

S = 1000
RULES = parse_rules(
    """
channels: {ops: "json://localhost:9/x", chat: "json://localhost:9/y"}
rules:
  - {name: lag, kind: lag_offsets, above: 100, for: 10s, repeat: 1m, channels: [ops]}
  - {name: lag-topic, kind: lag_offsets, above: 100, per_topic: true, topics: {deny: "^b$"}}
  - {name: slow, kind: lag_seconds, above: 60}
  - {name: stuck, kind: status, in: [STOP, STALL]}
  - {name: storm, kind: rebalances, more_than: 2, within: 1m}
  - {name: empty, kind: empty_with_lag}
  - {name: few, kind: members_below, below: 2}
  - {name: moved, kind: coordinator_moved, within: 5m}
  - {name: down, kind: collector_unhealthy, for: 30s}
""",
    "test.yaml",
)


NOW = 100 * S


def part(topic, partition, lag, lag_s=None, status=Status.OK, at_least=False, now=NOW):
    """A partition's health as the engine reports it, `lag_s` seconds behind at `now`."""
    clock = None if lag_s is None else LagClock(now - lag_s * S, at_least)
    return PartitionHealth(
        TopicPartition(topic, partition), 0, lag, lag, clock, status, "why" if status != Status.OK else "", 1.0
    )


def facts(now=NOW, ok=True, **groups):
    """(report, events) of one cycle; report None when the sample failed."""
    report = HealthReport("c1", now, {gid: g for gid, (g, _) in groups.items()}) if ok else None
    return report, {gid: e for gid, (_, e) in groups.items()}


def group(gid="g", state=GroupState.STABLE, members=2, parts=(), rebalances=(), moves=()):
    status, worst = compute_group_status(p.status for p in parts)  # as the health engine rolls them up
    health = GroupHealth(gid, state, members, status, worst, 0, 0, None, 1.0, tuple(parts))
    return health, GroupEvents(tuple(rebalances), tuple(moves))


def holding(rules, cycle_facts, last_ok_at=None):
    report, events = cycle_facts
    return evaluate_rules(rules, report, events, last_ok_at)


def fired(conditions):
    return sorted((c.rule, c.group_id, c.topic) for c in conditions)


def test_each_rule_kind_holds_only_when_its_condition_does():
    g = group(
        parts=[part("a", 0, 80, 30.0), part("a", 1, 40, 70.0, Status.STOP), part("b", 0, 500, 5.0)],
        members=1,
        rebalances=[50 * S, 60 * S, 90 * S, 10 * S],
        moves=[(98 * S, "1 -> 2")],
    )
    assert fired(holding(RULES, facts(g=g))) == [
        ("few", "g", ""),
        ("lag", "g", ""),
        ("lag-topic", "g", "a"),
        ("moved", "g", ""),
        ("slow", "g", ""),
        ("storm", "g", ""),
        ("stuck", "g", ""),
    ]
    quiet = group(parts=[part("a", 0, 10, 1.0, now=400 * S)], rebalances=[10 * S], moves=[(10 * S, "1 -> 2")])
    assert fired(holding(RULES, facts(now=400 * S, g=quiet))) == []  # old moves and rebalances
    empty = group(state=GroupState.EMPTY, members=2, parts=[part("a", 0, 3)])
    assert fired(holding(RULES, facts(g=empty))) == [("empty", "g", "")]


def test_failed_sample_judges_only_collector_health():
    assert fired(holding(RULES, facts(ok=False, g=group(members=0)))) == [("down", "", "")]


def cycle(open_alerts, conditions, now, silences=(), ok=True):
    changed, notes = compute_alert_changes(open_alerts, conditions, RULES, silences, "c1", now, sample_ok=ok)
    by_key = {a.key: a for a in open_alerts}
    by_key.update({a.key: replace(a, id=a.id or i + 1) for i, a in enumerate(changed)})
    still_open = [a for a in by_key.values() if a.state != RESOLVED]
    return still_open, changed, [(n.kind, n.key[0], n.channels) for n in notes]


LAG = holding(RULES, facts(g=group(parts=[part("b", 0, 500)])))
LAG = [c for c in LAG if c.rule == "lag"]


def test_pending_then_firing_after_for_then_one_resolve():
    alerts, changed, notes = cycle([], LAG, 0)
    assert ([a.state for a in alerts], notes) == ([PENDING], [])
    alerts, _, notes = cycle(alerts, LAG, 5 * S)
    assert ([a.state for a in alerts], notes) == ([PENDING], [])
    alerts, _, notes = cycle(alerts, LAG, 10 * S)
    assert ([a.state for a in alerts], notes) == ([FIRING], [("firing", "lag", ("ops",))])
    alerts, _, notes = cycle(alerts, LAG, 20 * S)
    assert notes == []  # still firing: no duplicate before the repeat interval
    alerts, changed, notes = cycle(alerts, [], 30 * S)
    assert (alerts, [a.state for a in changed], notes) == ([], [RESOLVED], [("resolved", "lag", ("ops",))])


def test_condition_gone_while_pending_resolves_silently():
    alerts, _, _ = cycle([], LAG, 0)
    alerts, changed, notes = cycle(alerts, [], 5 * S)
    assert ([a.state for a in changed], changed[0].fired_at, notes) == ([RESOLVED], None, [])


def test_repeat_interval_and_acknowledgement():
    alerts, _, _ = cycle([], LAG, 0)
    alerts, _, notes = cycle(alerts, LAG, 10 * S)
    alerts, _, notes = cycle(alerts, LAG, 70 * S)
    assert notes == [("repeat", "lag", ("ops",))]
    acked = [replace(a, acked_at=75 * S) for a in alerts]
    _, _, notes = cycle(acked, LAG, 200 * S)
    assert notes == []  # acknowledged: no more repeats ...
    _, _, notes = cycle(acked, [], 210 * S)
    assert notes == [("resolved", "lag", ("ops",))]  # ... but the resolution is still told


def test_silenced_alert_fires_quietly_and_speaks_when_the_silence_ends():
    silence = Silence({"rule": "lag", "group": "g.*"}, until=50 * S)
    alerts, _, _ = cycle([], LAG, 0, [silence])
    alerts, _, notes = cycle(alerts, LAG, 10 * S, [silence])
    assert ([a.state for a in alerts], notes) == ([FIRING], [])
    alerts, _, notes = cycle(alerts, LAG, 60 * S, [silence])
    assert notes == [("firing", "lag", ("ops",))]


def test_an_alert_not_due_stays_as_it_is_while_its_condition_holds():
    """The engine sends only due alerts through the lifecycle: the others must come out unchanged."""
    silence = Silence({"rule": "lag", "group": "g.*"}, until=30 * S)
    alerts, _, _ = cycle([], LAG, 0, [silence])
    told, due_cycles = [], 0
    for now in range(S, 200 * S, S):
        if now == 120 * S:
            alerts = [replace(a, acked_at=now) for a in alerts]
        (alert,) = alerts
        due = compute_alert_due(alert, RULES) <= now
        alerts, changed, notes = cycle(alerts, LAG, now, [silence])
        due_cycles += due
        if not due:
            assert (changed, notes) == ([], []), now
        told += [(now // S, kind) for kind, _, _ in notes]
    # fires at 10 s under the silence, so it is due every cycle until told at 30 s; repeats at 90 s; acked at 120 s
    assert told == [(30, "firing"), (90, "repeat")]
    assert due_cycles == 21 + 1  # each second from 10 s to 30 s (fired, not told yet), and 90 s


def test_resolving_an_alert_nobody_was_told_about_sends_nothing():
    silence = Silence({"rule": "lag"}, until=1000 * S)
    alerts, _, _ = cycle([], LAG, 0, [silence])
    alerts, _, _ = cycle(alerts, LAG, 10 * S, [silence])
    _, changed, notes = cycle(alerts, [], 20 * S)
    assert ([a.state for a in changed], notes) == ([RESOLVED], [])


def test_failed_sample_keeps_lag_alerts_as_they_are():
    alerts, _, _ = cycle([], LAG, 0)
    alerts, _, _ = cycle(alerts, LAG, 10 * S)
    alerts, changed, notes = cycle(alerts, [], 20 * S, ok=False)
    assert ([a.state for a in alerts], changed, notes) == ([FIRING], [], [])


def test_rule_without_channels_goes_to_every_channel():
    slow = [c for c in holding(RULES, facts(g=group(parts=[part("a", 0, 5, 90.0)]))) if c.rule == "slow"]
    _, _, notes = cycle([], slow, 0)
    assert notes == [("firing", "slow", ("ops", "chat"))]


def test_message_reads_well_and_links_to_the_group_page():
    alerts, _, _ = cycle([], LAG, 0)
    alerts, _, _ = cycle(alerts, LAG, 10 * S)
    alert = replace(alerts[0], detail={**alerts[0].detail, "lag_s": 42.5, "lag_s_at_least": True})
    title, body = compose_message(alert, "firing", 70 * S, "https://dash.example/")
    assert title == "🔴 FIRING [warning] lag: g @ c1"
    assert body.splitlines() == [
        "lag 500 offsets (above 100)",
        "Lag: 500 offsets, ≥ 42.5s behind · status OK · 2 members",
        "Since 1970-01-01 00:00:10 UTC (60s ago)",
        "Worst partitions:",
        "• b/0: lag 500 OK",
        "https://dash.example/?page=group&group=g&cluster=c1&range=15m",
    ]


def test_message_says_how_close_an_interpolated_lag_in_seconds_is():
    """The record was appended between samples at 50 s and 60 s, interpolated at 58 s: 42 s behind, ± 8 s."""
    clock = LagClock(58 * S, False, False, 50 * S, 60 * S)
    behind = PartitionHealth(TopicPartition("b", 0), 0, 500, 500, clock, Status.OK, "", 1.0)
    detail = compute_detail([behind], group(parts=[behind])[0], NOW)
    assert (detail["lag_s"], detail["lag_s_at_least"], detail["lag_s_error"]) == (42.0, False, 8.0)
    alerts, _, _ = cycle([], LAG, 0)
    _, body = compose_message(replace(alerts[0], detail={**alerts[0].detail, **detail}), "firing", NOW)
    assert "Lag: 500 offsets, 42s ±8 behind · status OK · 2 members" in body.splitlines()


def test_dashboard_range_covers_the_whole_alert():
    assert compute_dashboard_link("http://d/?x=1", "c", "g", 0, 3 * 3600 * S).endswith("&range=6h")
    assert compute_dashboard_link(None, "c", "g", 0, 0) is None


def test_a_malformed_silence_mutes_nothing():
    assert not Silence({"group": "("}, until=10**15).matches(cycle([], LAG, 0)[0][0], 0)


@pytest.mark.parametrize(
    "parts, expected",
    [
        ([], None),
        ([part("a", 0, 5)], None),  # no clock: lag seconds unknown
        ([part("a", 0, 0, 0.0), part("a", 1, 5, 2.5)], TimeLag(2.5)),
        # the bound wins a tie
        ([part("a", 0, 5, 30.0), part("a", 1, 5, 30.0, at_least=True)], TimeLag(30.0, at_least=True)),
        (
            [part("a", 0, 5, -1.0, at_least=True), part("a", 1, 5, 0.5)],
            TimeLag(0.5),
        ),  # a bound not above 0 says nothing
        ([part("a", 0, 5, -1.0)], TimeLag(0.0)),  # a record from the future (clock skew) is not behind
    ],
)
def test_max_lag_seconds_is_the_partition_furthest_behind(parts, expected):
    assert compute_max_lag_seconds(parts, NOW) == expected
    # the definition it shortcuts: the largest of the partitions' own answers
    answers = [t for t in (p.clock.at(NOW) for p in parts if p.clock is not None) if t is not None]
    assert expected == (max(answers, key=lambda t: (t.seconds, t.at_least)) if answers else None)


def test_an_alert_names_the_worst_partitions_by_status_then_lag_then_seconds():
    g = group(
        parts=[
            part("a", 0, 10, 5.0),
            part("a", 1, 10, 50.0),
            part("a", 2, 3, 99.0, Status.STOP),
            part("b", 0, 90),
            part("b", 1, 10, 50.0, at_least=True),
        ]
    )
    (condition,) = [c for c in holding(RULES, facts(g=g)) if c.rule == "stuck"]
    assert condition.detail["worst"] == [
        ["a", 2, 3, 99.0, False, "STOP"],
        ["b", 0, 90, None, False, "OK"],
        ["a", 1, 10, 50.0, False, "OK"],
    ]


def test_an_open_alert_takes_new_numbers_once_a_minute_and_fresh_ones_to_fire_and_repeat():
    def lag_is(lag, now):
        conditions = holding(RULES, facts(now=now, g=group(parts=[part("b", 0, lag)])))
        return [c for c in conditions if c.rule == "lag"]

    def step(alerts, lag, now, previous):
        changed, notes = compute_alert_changes(alerts, lag_is(lag, now), RULES, [], "c1", now, previous_at=previous)
        by_key = {a.key: a for a in alerts} | {a.key: replace(a, id=a.id or 1) for a in changed}
        return list(by_key.values()), changed, notes

    alerts, changed, _ = step([], 500, 0, None)
    assert changed[0].summary.startswith("lag 500 offsets")
    alerts, changed, _ = step(alerts, 600, 5 * S, 0)
    assert changed == [] and alerts[0].summary.startswith("lag 500 offsets")  # pending, same minute: kept
    alerts, changed, notes = step(alerts, 700, 10 * S, 5 * S)  # it fires: with the numbers of now
    assert [a.state for a in changed] == [FIRING] and changed[0].summary.startswith("lag 700 offsets") and notes
    alerts, changed, _ = step(alerts, 800, 59 * S, 10 * S)
    assert changed == []
    alerts, changed, _ = step(alerts, 900, 61 * S, 59 * S)  # its second minute began
    assert changed[0].summary.startswith("lag 900 offsets")
    alerts, changed, notes = step(alerts, 950, 70 * S, 61 * S)  # the repeat is due: fresh numbers again
    assert notes and changed[0].summary.startswith("lag 950 offsets")


SHARE_RULES = parse_rules(
    "rules:\n  - {name: share-stuck, kind: share_redelivery, delivery_limit: 5, within: 10m, for: 1m}\n", "share.yaml"
)


def share_episodes(cycles: list[tuple[int, int, int]]) -> list[tuple[int, str, str]]:
    """(at s, archived on t:0, most deliveries on t:1) per 30 s cycle of share group `jobs`, through the health
    engine, the rule and the lifecycle: the (at s, notification, summary) that come out."""
    engine, alerts, out = HealthEngine("c1"), [], []
    for at_s, archived, most in cycles:
        share = {
            TopicPartition("t", 0): SharePartition(80, 0, archived=archived),
            TopicPartition("t", 1): SharePartition(40, 0, redelivering=2, max_delivery_count=most),
        }
        report = engine.observe(make_snapshot(at_s * S, groups=[make_share_group("jobs", share=share)]))
        conditions = evaluate_rules(SHARE_RULES, report)
        changed, notes = compute_alert_changes(alerts, conditions, SHARE_RULES, [], "c1", at_s * S)
        by_key = {a.key: a for a in alerts} | {a.key: replace(a, id=a.id or 1) for a in changed}
        alerts = [a for a in by_key.values() if a.state != RESOLVED]
        out += [(at_s, n.kind, by_key[n.key].summary) for n in notes]
    return out


def test_records_given_up_on_alert_once_and_resolve_when_no_more_are_within_the_window():
    # archived 0 -> 3 at 30 s (a rise), then flat; deliveries stay below the limit
    cycles = [(t, 0 if t < 30 else 3, 2) for t in range(0, 720, 30)]
    assert share_episodes(cycles) == [
        (90, "firing", "records given up on (archived) in the last 10m on t/0"),  # held 1m since the rise at 30 s
        (660, "resolved", "records given up on (archived) in the last 10m on t/0"),  # 10m after the rise
    ]


def test_records_at_the_delivery_limit_alert_once_and_resolve_when_they_are_settled():
    cycles = [(t, 0, 5 if 60 <= t < 300 else 3) for t in range(0, 420, 30)]
    assert share_episodes(cycles) == [
        (120, "firing", "records delivered 5 times (the limit) on t/1"),
        (300, "resolved", "records delivered 5 times (the limit) on t/1"),
    ]


def test_a_share_alert_names_the_share_partitions_in_its_message():
    report = HealthEngine("c1").observe(make_snapshot(groups=[make_share_group("jobs", share=SHARE_ON_T)]))
    rules = parse_rules("rules:\n  - {name: s, kind: share_redelivery, delivery_limit: 2}\n", "r.yaml")
    (condition,) = evaluate_rules(rules, report)
    alert = Alert("s", "c1", "jobs", "", FIRING, "warning", 0, 0, summary=condition.summary, detail=condition.detail)
    _, body = compose_message(alert, "firing", 60 * S)
    assert body.splitlines()[0] == "records delivered 2 times (the limit) on t/0"
    assert "• t/0: up to 2 deliveries, 3 redelivering, 0 archived" in body.splitlines()
    assert evaluate_rules(SHARE_RULES, report) == []  # 2 deliveries, nothing archived: no alert at limit 5


def test_a_worker_restart_keeps_the_collector_unhealthy_for_a_while():
    from monitor.alerts.lifecycle import RESTART_HOLD_MS, WorkerRestart, evaluate_cluster_rules

    rules = parse_rules("rules:\n  - {name: collector-unhealthy, kind: collector_unhealthy, for: 2m}\n", "r.yaml")
    at = 1_700_000_000_000
    restart = WorkerRestart(at, 2, "died of SIGSEGV (a crash in native code)")
    (held,) = evaluate_cluster_rules(rules, True, at, restart, at + 180_000)
    assert held.summary == (
        "the collector's worker died of SIGSEGV (a crash in native code) and was started again (restart 2)"
    )
    assert evaluate_cluster_rules(rules, True, at, restart, at + RESTART_HOLD_MS) == []
    assert evaluate_cluster_rules(rules, True, at) == []  # no restart, sampling fine: healthy

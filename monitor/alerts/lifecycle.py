"""Which rules hold now, and how alerts move through pending -> firing -> resolved (pure).

`evaluate_rules` turns one cycle's health report into conditions (rule + group [+ topic]
that are true now). `compute_alert_changes` is the Alertmanager-like state
machine: a condition opens a pending alert, which fires once it has held for the
rule's `for`; a firing alert is re-notified every `repeat` unless acknowledged;
when the condition goes away a firing alert resolves and that is notified too.
Silenced alerts change state but send nothing. Alerts are keyed by rule +
cluster + group + topic, so the same trouble is one alert, not one per cycle.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple

from monitor.alerts.rules import Rule, RuleKind, RuleSet
from monitor.health.report import GroupHealth, HealthReport, PartitionHealth, ShareHealth
from monitor.lag import TimeLag
from monitor.models import FIRING, PENDING, RESOLVED, Alert, GroupState, Notification, Silence, Status

WORST_SHOWN = 3
REFRESH_MS = 60_000  # how often an open alert whose state stays takes its condition's numbers


@dataclass(frozen=True)
class GroupEvents:
    """What the store says happened to a group recently (the rebalances and coordinator_moved rules)."""

    rebalance_starts: tuple[int, ...] = ()  # recent rebalance start times (ms)
    coordinator_moves: tuple[tuple[int, str], ...] = ()  # recent (at ms, "1 -> 2")


NO_EVENTS = GroupEvents()


@dataclass(frozen=True)
class Condition:
    """A rule that holds for a group (and topic) now.

    Its detail (the numbers and worst partitions an alert shows) is worked out
    only when an alert takes it, about once a minute, not every cycle it holds.
    """

    rule: str
    group_id: str
    topic: str
    summary: str
    explain: Callable[[], dict] = field(compare=False, repr=False)

    @property
    def detail(self) -> dict:
        return self.explain()


# -- conditions -------------------------------------------------------------------------------


def _fmt_int(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def _seconds(p: PartitionHealth, now: int) -> float:
    """p.clock.at(now).seconds, 0 where that is unknown, without making the TimeLag (every partition, every rule)."""
    clock = p.clock
    return 0.0 if clock is None or clock.since is None else max(0.0, (now - clock.since) / 1000)


def _worst(parts: Iterable[PartitionHealth], now: int) -> list[list]:
    def rank(p):
        return (-(p.status if p.status != Status.OK else 0), -(p.lag or 0), -_seconds(p, now), p.tp)

    out = []
    for p in heapq.nsmallest(WORST_SHOWN, parts, key=rank):
        lag_s = None if p.clock is None else p.clock.at(now)
        out.append(
            [
                p.tp.topic,
                p.tp.partition,
                p.lag,
                None if lag_s is None else round(lag_s.seconds, 1),
                bool(lag_s and lag_s.at_least),
                p.status.name,
            ]
        )
    return out


def compute_max_lag_seconds(parts: Iterable[PartitionHealth], now: int) -> TimeLag | None:
    """The partition furthest behind in seconds (a lower bound wins a tie)."""
    worst, key = None, None
    for p in parts:
        clock = p.clock
        if clock is None or (clock.at_least and clock.since >= now):  # no answer yet (LagClock.at)
            continue
        k = (_seconds(p, now), clock.at_least)
        if worst is None or k > key:
            worst, key = clock, k
    return None if worst is None else worst.at(now)


def compute_detail(parts: Sequence[PartitionHealth], g: GroupHealth, now: int) -> dict:
    """What an alert on `parts` of `g` tells: lag, lag in seconds (with its error, or as a bound), worst partitions."""
    worst_s = compute_max_lag_seconds(parts, now)
    return {
        "lag": sum(p.lag or 0 for p in parts),
        "lag_s": None if worst_s is None else round(worst_s.seconds, 1),
        "lag_s_at_least": bool(worst_s and worst_s.at_least),
        "lag_s_error": None if worst_s is None or worst_s.at_least else round(worst_s.error, 1),
        "status": max((p.status for p in parts), default=Status.OK).name,
        "state": str(g.state),
        "members": g.members,
        "worst": _worst(parts, now),
    }


class WorkerRestart(NamedTuple):
    """The collector's worker died and was started again (monitor/supervisor.py): when, how often, why."""

    at: int
    restarts: int
    last_exit: str


RESTART_HOLD_MS = 600_000  # a restart keeps the collector unhealthy this long: long enough for a `for` to fire


def evaluate_cluster_rules(
    rules: RuleSet,
    sample_ok: bool,
    last_ok_at: int | None,
    restart: WorkerRestart | None = None,
    now: int | None = None,
) -> list[Condition]:
    """The collector-health conditions (the only ones judged after a failed sample): it cannot sample,
    or its worker died less than RESTART_HOLD_MS ago (a crash is a defect someone must hear of)."""
    if not sample_ok:
        summary, detail = "the collector cannot sample the cluster", {"last_ok_at": last_ok_at}
    elif restart is not None and now is not None and now - restart.at < RESTART_HOLD_MS:
        summary = f"the collector's worker {restart.last_exit} and was started again (restart {restart.restarts})"
        detail = {"last_ok_at": last_ok_at, "restarts": restart.restarts}
    else:
        return []
    return [
        Condition(r.name, "", "", summary, lambda: detail)
        for r in rules.rules
        if r.kind == RuleKind.COLLECTOR_UNHEALTHY
    ]


def evaluate_group_rules(rules: RuleSet, g: GroupHealth, events: GroupEvents, now: int) -> list[Condition]:
    """Every (rule, topic) that holds for one group at `now`, from its health and recent events."""
    out: list[Condition] = []
    for rule in rules.rules:
        if rule.kind != RuleKind.COLLECTOR_UNHEALTHY and rule.groups.wants(g.group_id):
            out.extend(_group_conditions(rule, g, events, now))
    return out


def evaluate_rules(
    rules: RuleSet,
    report: HealthReport | None,
    events: dict[str, GroupEvents] | None = None,
    last_ok_at: int | None = None,
) -> list[Condition]:
    """Every (rule, group, topic) whose condition holds in this cycle; `report` None: the sample failed."""
    out = evaluate_cluster_rules(rules, report is not None, last_ok_at)
    if report is not None:
        for g in report.groups.values():
            out.extend(evaluate_group_rules(rules, g, (events or {}).get(g.group_id, NO_EVENTS), report.at))
    return out


@dataclass(frozen=True)
class _Seen:
    """What one rule sees of one group this cycle: its partitions of the rule's topics, its events."""

    rule: Rule
    g: GroupHealth
    parts: list[PartitionHealth]
    events: GroupEvents
    now: int

    def holds(
        self, summary: str, topic: str = "", scope: list[PartitionHealth] | None = None, detail=None
    ) -> Condition:
        """The rule's condition for this group (and topic), its numbers taken from `scope` when asked for."""
        scope = self.parts if scope is None else scope
        return Condition(
            self.rule.name, self.g.group_id, topic, summary, detail or partial(compute_detail, scope, self.g, self.now)
        )

    def scopes(self) -> list[tuple[str, list[PartitionHealth]]]:
        """(topic, its partitions) per topic for a per_topic rule, else ("", every partition)."""
        if not self.rule.per_topic:
            return [("", self.parts)]
        by_topic: dict[str, list[PartitionHealth]] = {}
        for p in self.parts:  # one pass: a filter per topic cost a group of 1,000 topics 0.46 CPU-s per rule
            by_topic.setdefault(p.tp.topic, []).append(p)
        return sorted(by_topic.items())


def _lag_offsets(s: _Seen) -> list[Condition]:
    above = s.rule.above
    lags = [(topic, scope, sum(p.lag or 0 for p in scope)) for topic, scope in s.scopes()]
    return [
        s.holds(f"lag {_fmt_int(lag)} offsets (above {_fmt_int(int(above))})", topic, scope)
        for topic, scope, lag in lags
        if lag > above
    ]


def _lag_seconds(s: _Seen) -> list[Condition]:
    worst = [(topic, scope, compute_max_lag_seconds(scope, s.now)) for topic, scope in s.scopes()]
    return [
        s.holds(f"lag {worst_s} behind (above {s.rule.above:g}s)", topic, scope)
        for topic, scope, worst_s in worst
        if worst_s is not None and worst_s.seconds > s.rule.above
    ]


def _status(s: _Seen) -> list[Condition]:
    # a group whose worst partition is OK has only OK partitions (most groups, most cycles)
    statuses = {Status.OK} if s.rule.topics.unfiltered and s.g.worst is Status.OK else {p.status for p in s.parts}
    group_status = (
        Status.ERR
        if statuses & {Status.ERR, Status.STOP, Status.STALL, Status.REWIND}
        else (Status.WARN if Status.WARN in statuses else Status.OK)
    )
    hit = sorted((statuses | {group_status}) & s.rule.statuses, reverse=True)
    if not hit:
        return []
    reasons = [p.reason for p in s.parts if p.status == hit[0] and p.reason]
    return [s.holds(f"status {hit[0].name}" + (f": {reasons[0]}" if reasons else ""))]


def _rebalances(s: _Seen) -> list[Condition]:
    rule = s.rule
    recent = [t for t in s.events.rebalance_starts if s.now - t <= rule.within_s * 1000]
    if len(recent) <= rule.more_than:
        return []
    return [s.holds(f"{len(recent)} rebalances in the last {_fmt_span(rule.within_s)} (more than {rule.more_than})")]


def _empty_with_lag(s: _Seen) -> list[Condition]:
    lag = sum(p.lag or 0 for p in s.parts) if s.g.state in (GroupState.EMPTY, GroupState.DEAD) else 0
    return [s.holds(f"group is {s.g.state} with {_fmt_int(lag)} offsets of lag")] if lag > 0 else []


def _members_below(s: _Seen) -> list[Condition]:
    below = s.rule.below
    return [s.holds(f"{s.g.members} members (fewer than {below})")] if s.g.members < below else []


def _share_redelivery(s: _Seen) -> list[Condition]:
    """Records Kafka is about to give up on, or gave up on lately."""
    rule, now = s.rule, s.now
    shares = s.g.share if rule.topics.unfiltered else [sh for sh in s.g.share if rule.topics.wants(sh.tp.topic)]
    at_limit = [sh for sh in shares if sh.max_delivery_count >= rule.delivery_limit]
    archiving = [
        sh for sh in shares if sh.archived_rose_at is not None and now - sh.archived_rose_at <= rule.within_s * 1000
    ]
    if not (at_limit or archiving):
        return []
    said = []
    if at_limit:
        said.append(f"records delivered {rule.delivery_limit} times (the limit) on {_where(at_limit)}")
    if archiving:
        said.append(f"records given up on (archived) in the last {_fmt_span(rule.within_s)} on {_where(archiving)}")
    shown = [*dict.fromkeys([*at_limit, *archiving])]
    return [s.holds("; ".join(said), detail=partial(_share_detail, shown, s.parts, s.g, now))]


def _coordinator_moved(s: _Seen) -> list[Condition]:
    recent = [(t, what) for t, what in s.events.coordinator_moves if s.now - t <= s.rule.within_s * 1000]
    return [s.holds(f"coordinator moved ({recent[-1][1]})")] if recent else []


# One evaluator per group rule kind (collector_unhealthy is the cluster's: evaluate_cluster_rules).
EVALUATORS: dict[RuleKind, Callable[[_Seen], list[Condition]]] = {
    RuleKind.LAG_OFFSETS: _lag_offsets,
    RuleKind.LAG_SECONDS: _lag_seconds,
    RuleKind.STATUS: _status,
    RuleKind.REBALANCES: _rebalances,
    RuleKind.EMPTY_WITH_LAG: _empty_with_lag,
    RuleKind.MEMBERS_BELOW: _members_below,
    RuleKind.SHARE_REDELIVERY: _share_redelivery,
    RuleKind.COORDINATOR_MOVED: _coordinator_moved,
}


def _group_conditions(rule: Rule, g: GroupHealth, events: GroupEvents, now: int) -> list[Condition]:
    parts = g.partitions if rule.topics.unfiltered else [p for p in g.partitions if rule.topics.wants(p.tp.topic)]
    return EVALUATORS[rule.kind](_Seen(rule, g, parts, events, now))


def _where(shares: Sequence[ShareHealth]) -> str:
    """'t/0, t/1' for the first few share-partitions, then how many more."""
    names = [f"{sh.tp.topic}/{sh.tp.partition}" for sh in shares[:WORST_SHOWN]]
    more = len(shares) - len(names)
    return ", ".join(names) + (f" and {more} more" if more else "")


def _share_detail(shares: Sequence[ShareHealth], parts: Sequence[PartitionHealth], g: GroupHealth, now: int) -> dict:
    """The usual numbers, and the share-partitions that hold the condition (the message lists them)."""
    return {
        **compute_detail(parts, g, now),
        "share": [
            [
                sh.tp.topic,
                sh.tp.partition,
                sh.max_delivery_count,
                sh.redelivering,
                sh.archived,
                sh.archived_rise,
                sh.archived_rose_at,
            ]
            for sh in shares[:WORST_SHOWN]
        ],
    }


def _fmt_span(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


# -- lifecycle --------------------------------------------------------------------------------


def compute_alert_changes(
    open_alerts: Iterable[Alert],
    conditions: Iterable[Condition],
    rules: RuleSet,
    silences: Iterable[Silence],
    cluster: str,
    now: int,
    *,
    sample_ok: bool = True,
    previous_at: int | None = None,
) -> tuple[list[Alert], list[Notification]]:
    """(alerts that are new or changed, notifications to send) for one cycle.

    After a failed sample only the collector-health rules are judged: the other
    conditions are unknown, not false, so their alerts neither resolve nor fire.
    An open alert whose state stays takes its condition's numbers (summary,
    detail) once per minute of its life (`previous_at`: the cycle before; None
    refreshes all), not every cycle; firing and every notification take them fresh.
    """
    silences = list(silences)
    current = {a.key: a for a in open_alerts}
    changed: list[Alert] = []
    notes: list[Notification] = []

    def silenced(alert: Alert) -> bool:
        return any(s.matches(alert, now) for s in silences)

    def channels(rule: Rule) -> tuple[str, ...]:
        return rule.channels or tuple(rules.channels)

    seen = set()
    for c in conditions:
        rule = rules.rule(c.rule)
        if rule is None:
            continue
        key = (c.rule, cluster, c.group_id, c.topic)
        seen.add(key)
        alert = before = current.get(key) or Alert(
            c.rule, cluster, c.group_id, c.topic, PENDING, rule.severity, now, labels=dict(rule.labels)
        )
        fires = alert.state == PENDING and now - alert.started_at >= rule.for_s * 1000
        refresh = (
            alert.id is None
            or fires
            or (alert.state == FIRING and compute_alert_due(alert, rules) <= now)
            or _new_minute(alert, now, previous_at)
        )
        if alert.severity != rule.severity or refresh:
            detail = c.detail
            if (alert.summary, alert.detail, alert.severity) != (c.summary, detail, rule.severity):
                alert = replace(alert, summary=c.summary, detail=detail, severity=rule.severity)
        if fires:
            alert = replace(alert, state=FIRING, fired_at=now)
        if alert.state == FIRING:
            if alert.last_notified_at is None:
                kind = FIRING
            elif alert.acked_at is None and now - alert.last_notified_at >= rule.repeat_s * 1000:
                kind = "repeat"
            else:
                kind = None
            if kind and not silenced(alert):
                alert = replace(alert, last_notified_at=now)
                notes.append(Notification(key, kind, channels(rule)))
        if alert is not before or alert.id is None:
            changed.append(alert)

    for key, alert in current.items():
        if key in seen:
            continue
        rule = rules.rule(alert.rule)
        if not sample_ok and (rule is None or rule.kind != RuleKind.COLLECTOR_UNHEALTHY):
            continue
        resolved = replace(alert, state=RESOLVED, resolved_at=now)
        changed.append(resolved)
        if alert.state == FIRING and alert.last_notified_at is not None and rule is not None and not silenced(alert):
            notes.append(Notification(key, RESOLVED, channels(rule)))
    return changed, notes


def _new_minute(alert: Alert, now: int, previous_at: int | None) -> bool:
    """A new minute of the alert's life began since the previous cycle (always, without one)."""
    if previous_at is None:
        return True
    return (now - alert.started_at) // REFRESH_MS != (previous_at - alert.started_at) // REFRESH_MS


def compute_alert_due(alert: Alert, rules: RuleSet) -> float:
    """When `compute_alert_changes` next changes `alert` while its condition holds unchanged (ms; inf: never).

    A pending alert fires after its rule's `for`; a firing one never notified (silenced) is
    due every cycle; an unacknowledged firing one repeats every `repeat`. An alert whose
    rule is gone is due now (it resolves).
    """
    rule = rules.rule(alert.rule)
    if rule is None:
        return float("-inf")
    if alert.state == PENDING:
        return alert.started_at + rule.for_s * 1000
    if alert.last_notified_at is None:
        return float("-inf")
    return float("inf") if alert.acked_at is not None else alert.last_notified_at + rule.repeat_s * 1000

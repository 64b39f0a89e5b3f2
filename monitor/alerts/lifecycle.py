"""Which rules hold now, and how alerts move through pending -> firing -> resolved (pure).

`evaluate_rules` turns one cycle's facts into conditions (rule + group [+ topic]
that are true now). `compute_alert_changes` is the Alertmanager-like state
machine: a condition opens a pending alert, which fires once it has held for the
rule's `for`; a firing alert is re-notified every `repeat` unless acknowledged;
when the condition goes away a firing alert resolves and that is notified too.
Silenced alerts change state but send nothing. Alerts are keyed by rule +
cluster + group + topic, so the same trouble is one alert, not one per cycle.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from monitor.alerts.rules import Rule, RuleSet
from monitor.lag import TimeLag
from monitor.models import GroupState, Status, TopicPartition

PENDING, FIRING, RESOLVED = "pending", "firing", "resolved"
WORST_SHOWN = 3


@dataclass(frozen=True)
class PartitionFacts:
    tp: TopicPartition
    lag: int | None
    lag_s: TimeLag | None
    status: Status = Status.OK
    reason: str = ""


@dataclass(frozen=True)
class GroupFacts:
    group_id: str
    state: GroupState
    members: int
    partitions: tuple[PartitionFacts, ...] = ()
    rebalance_starts: tuple[int, ...] = ()  # recent rebalance start times (ms)
    coordinator_moves: tuple[tuple[int, str], ...] = ()  # recent (at ms, "1 -> 2")


@dataclass(frozen=True)
class ClusterFacts:
    cluster: str
    now: int
    sample_ok: bool
    last_ok_at: int | None
    groups: dict[str, GroupFacts] = field(default_factory=dict)


@dataclass(frozen=True)
class Condition:
    rule: str
    group_id: str
    topic: str
    summary: str
    detail: dict


@dataclass(frozen=True)
class Alert:
    rule: str
    cluster: str
    group_id: str
    topic: str
    state: str
    severity: str
    started_at: int
    fired_at: int | None = None
    resolved_at: int | None = None
    last_notified_at: int | None = None
    summary: str = ""
    detail: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    acked_at: int | None = None
    acked_by: str | None = None
    id: int | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.rule, self.cluster, self.group_id, self.topic)


@dataclass(frozen=True)
class Silence:
    """Mute alerts whose fields all match: keys rule, cluster, group, topic, severity or label.NAME (regexes)."""

    matchers: dict[str, str]
    until: int
    id: int | None = None
    comment: str = ""
    created_by: str = ""

    def matches(self, alert: Alert, now: int) -> bool:
        if now >= self.until:
            return False
        fields = {"rule": alert.rule, "cluster": alert.cluster, "group": alert.group_id, "topic": alert.topic,
                  "severity": alert.severity, **{f"label.{k}": v for k, v in alert.labels.items()}}
        try:
            return all(re.fullmatch(pattern, fields.get(name, "") or "") for name, pattern in self.matchers.items())
        except re.error:  # a malformed silence mutes nothing rather than breaking the cycle
            return False


@dataclass(frozen=True)
class Notification:
    key: tuple[str, str, str, str]
    kind: str  # firing | repeat | resolved
    channels: tuple[str, ...]


# -- conditions -------------------------------------------------------------------------------


def _fmt_int(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def _worst(parts: Iterable[PartitionFacts]) -> list[list]:
    ranked = sorted(parts, key=lambda p: (-(p.status if p.status != Status.OK else 0), -(p.lag or 0),
                                          -(p.lag_s.seconds if p.lag_s else 0), p.tp))
    return [[p.tp.topic, p.tp.partition, p.lag, None if p.lag_s is None else round(p.lag_s.seconds, 1),
             bool(p.lag_s and p.lag_s.at_least), p.status.name] for p in ranked[:WORST_SHOWN]]


def _max_lag_s(parts: Iterable[PartitionFacts]) -> TimeLag | None:
    known = [p.lag_s for p in parts if p.lag_s is not None]
    return max(known, key=lambda t: (t.seconds, t.at_least)) if known else None


def _detail(parts: list[PartitionFacts], g: GroupFacts) -> dict:
    worst_s = _max_lag_s(parts)
    return {"lag": sum(p.lag or 0 for p in parts), "lag_s": None if worst_s is None else round(worst_s.seconds, 1),
            "lag_s_at_least": bool(worst_s and worst_s.at_least),
            "status": max((p.status for p in parts), default=Status.OK).name, "state": _state(g.state),
            "members": g.members, "worst": _worst(parts)}


def _state(state) -> str:
    return getattr(state, "value", str(state))


def evaluate_rules(rules: RuleSet, facts: ClusterFacts) -> list[Condition]:
    """Every (rule, group, topic) whose condition holds in this cycle."""
    out: list[Condition] = []
    for rule in rules.rules:
        if rule.kind == "collector_unhealthy":
            if not facts.sample_ok:
                since = facts.last_ok_at
                out.append(Condition(rule.name, "", "", "the collector cannot sample the cluster",
                                     {"last_ok_at": since}))
            continue
        if not facts.sample_ok:
            continue  # nothing new is known: keep every other alert as it is (see compute_alert_changes)
        for g in facts.groups.values():
            if rule.groups.wants(g.group_id):
                out.extend(_group_conditions(rule, g, facts.now))
    return out


def _group_conditions(rule: Rule, g: GroupFacts, now: int) -> list[Condition]:
    parts = [p for p in g.partitions if rule.topics.wants(p.tp.topic)]
    if rule.kind in ("lag_offsets", "lag_seconds"):
        scopes = ([(t, [p for p in parts if p.tp.topic == t]) for t in sorted({p.tp.topic for p in parts})]
                  if rule.per_topic else [("", parts)])
        found = []
        for topic, scope in scopes:
            detail = _detail(scope, g)
            if rule.kind == "lag_offsets" and detail["lag"] > rule.above:
                found.append(Condition(rule.name, g.group_id, topic,
                                       f"lag {_fmt_int(detail['lag'])} offsets (above {_fmt_int(int(rule.above))})",
                                       detail))
            worst_s = _max_lag_s(scope)
            if rule.kind == "lag_seconds" and worst_s is not None and worst_s.seconds > rule.above:
                found.append(Condition(rule.name, g.group_id, topic,
                                       f"lag {worst_s} behind (above {rule.above:g}s)", detail))
        return found
    detail = _detail(parts, g)
    if rule.kind == "status":
        statuses = {p.status for p in parts}
        group_status = Status.ERR if statuses & {Status.ERR, Status.STOP, Status.STALL, Status.REWIND} else (
            Status.WARN if Status.WARN in statuses else Status.OK)
        hit = sorted((statuses | {group_status}) & rule.statuses, reverse=True)
        if hit:
            reasons = [p.reason for p in parts if p.status == hit[0] and p.reason]
            return [Condition(rule.name, g.group_id, "", f"status {hit[0].name}"
                              + (f": {reasons[0]}" if reasons else ""), detail)]
    elif rule.kind == "rebalances":
        recent = [t for t in g.rebalance_starts if now - t <= rule.within_s * 1000]
        if len(recent) > rule.more_than:
            return [Condition(rule.name, g.group_id, "", f"{len(recent)} rebalances in the last "
                              f"{_fmt_span(rule.within_s)} (more than {rule.more_than})", detail)]
    elif rule.kind == "empty_with_lag":
        if _state(g.state) in ("Empty", "Dead") and detail["lag"] > 0:
            return [Condition(rule.name, g.group_id, "", f"group is {_state(g.state)} with "
                              f"{_fmt_int(detail['lag'])} offsets of lag", detail)]
    elif rule.kind == "members_below":
        if g.members < rule.below:
            return [Condition(rule.name, g.group_id, "", f"{g.members} members (fewer than {rule.below})", detail)]
    elif rule.kind == "coordinator_moved":
        recent = [(t, what) for t, what in g.coordinator_moves if now - t <= rule.within_s * 1000]
        if recent:
            return [Condition(rule.name, g.group_id, "", f"coordinator moved ({recent[-1][1]})", detail)]
    return []


def _fmt_span(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


# -- lifecycle --------------------------------------------------------------------------------


def compute_alert_changes(open_alerts: Iterable[Alert], conditions: Iterable[Condition], rules: RuleSet,
                          silences: Iterable[Silence], cluster: str, now: int, *, sample_ok: bool = True,
                          ) -> tuple[list[Alert], list[Notification]]:
    """(alerts that are new or changed, notifications to send) for one cycle.

    After a failed sample only the collector-health rules are judged: the other
    conditions are unknown, not false, so their alerts neither resolve nor fire.
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
        alert = current.get(key) or Alert(c.rule, cluster, c.group_id, c.topic, PENDING, rule.severity, now,
                                          labels=dict(rule.labels))
        before = alert
        alert = replace(alert, summary=c.summary, detail=c.detail, severity=rule.severity)
        if alert.state == PENDING and now - alert.started_at >= rule.for_s * 1000:
            alert = replace(alert, state=FIRING, fired_at=now)
        if alert.state == FIRING and not silenced(alert):
            if alert.last_notified_at is None:
                kind = FIRING
            elif alert.acked_at is None and now - alert.last_notified_at >= rule.repeat_s * 1000:
                kind = "repeat"
            else:
                kind = None
            if kind:
                alert = replace(alert, last_notified_at=now)
                notes.append(Notification(key, kind, channels(rule)))
        if alert != before or alert.id is None:
            changed.append(alert)

    for key, alert in current.items():
        if key in seen:
            continue
        rule = rules.rule(alert.rule)
        if not sample_ok and (rule is None or rule.kind != "collector_unhealthy"):
            continue
        resolved = replace(alert, state=RESOLVED, resolved_at=now)
        changed.append(resolved)
        if alert.state == FIRING and alert.last_notified_at is not None and rule is not None and not silenced(alert):
            notes.append(Notification(key, RESOLVED, channels(rule)))
    return changed, notes

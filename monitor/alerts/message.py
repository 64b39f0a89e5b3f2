"""The chat message for an alert (pure): short lines that read well on a phone."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from monitor.alerts.lifecycle import RESOLVED, Alert
from monitor.names import visible

RANGES = (("15m", 900), ("1h", 3600), ("6h", 6 * 3600), ("24h", 86400), ("7d", 7 * 86400))
ICONS = {"firing": "🔴", "repeat": "🔴", "resolved": "✅", "test": "🧪"}


def _fmt_ts(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fmt_ago(ms: int) -> str:
    s = max(0, ms // 1000)
    if s < 90:
        return f"{s}s"
    if s < 5400:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def compute_dashboard_link(base: str | None, cluster: str, group: str, started_at: int, now: int) -> str | None:
    """The group's dashboard page with a time range that covers the whole alert."""
    if not base or not group:
        return None
    span_s = (now - started_at) / 1000 + 600
    range_ = next((name for name, size in RANGES if size >= span_s), RANGES[-1][0])
    query = urlencode({"page": "group", "group": group, "cluster": cluster, "range": range_})
    return f"{base}{'&' if '?' in base else '?'}{query}"


def describe_where(alert: Alert) -> str:
    """'group @ cluster / topic', or 'cluster c' for a cluster-wide alert; a right-to-left override or a
    control character in the group id shows as its \\u escape instead of acting on the line."""
    where = f"{visible(alert.group_id)} @ {alert.cluster}" if alert.group_id else f"cluster {alert.cluster}"
    return f"{where} / {alert.topic}" if alert.topic else where


def compose_message(alert: Alert, kind: str, now: int, dashboard_url: str | None = None) -> tuple[str, str]:
    """(title, body) for a firing, repeat or resolved notification."""
    where = describe_where(alert)
    word = {"firing": "FIRING", "repeat": "STILL FIRING", "resolved": "RESOLVED"}.get(kind, kind.upper())
    title = f"{ICONS.get(kind, '')} {word} [{alert.severity}] {alert.rule}: {where}".strip()
    d = alert.detail or {}
    lines = [alert.summary] if kind != RESOLVED else [f"resolved; it was: {alert.summary}"]
    if d.get("lag") is not None or d.get("lag_s") is not None:
        lag = f"{d['lag']:,}".replace(",", " ") + " offsets" if d.get("lag") is not None else "? offsets"
        secs = "" if d.get("lag_s") is None else f", {'≥ ' if d.get('lag_s_at_least') else ''}{d['lag_s']:g}s"
        secs += f" ±{d['lag_s_error']:g}" if secs and d.get("lag_s_error") else ""
        secs += " behind" if secs else ""
        lines.append(f"Lag: {lag}{secs} · status {d.get('status', '?')} · {d.get('members', '?')} members")
    since = alert.fired_at or alert.started_at
    if kind == RESOLVED and alert.resolved_at:
        lines.append(f"Since {_fmt_ts(since)}, lasted {_fmt_ago(alert.resolved_at - since)}")
    else:
        lines.append(f"Since {_fmt_ts(since)} ({_fmt_ago(now - since)} ago)")
    worst = d.get("worst") or []
    if worst and kind != RESOLVED:
        lines.append("Worst partitions:")
        for topic, partition, lag, lag_s, at_least, status in worst:
            secs = "" if lag_s is None else f", {'≥' if at_least else ''}{lag_s:g}s"
            lines.append(f"• {topic}/{partition}: lag {lag if lag is not None else '?'}{secs} {status}")
    share = d.get("share") or []
    if share and kind != RESOLVED:
        lines.append("Share-partitions:")
        for topic, partition, most, redelivering, archived, rise, rose_at in share:
            rose = f" (+{rise} at {_fmt_ts(rose_at)})" if rose_at is not None else ""
            counts = f"up to {most} deliveries, {redelivering} redelivering, {archived} archived"
            lines.append(f"• {topic}/{partition}: {counts}{rose}")
    if alert.labels:
        lines.append("Labels: " + ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items())))
    link = compute_dashboard_link(dashboard_url, alert.cluster, alert.group_id, alert.started_at, now)
    if link:
        lines.append(link)
    return title, "\n".join(lines)

"""The post-incident summary of a time window, as Markdown (pure: data in, text out).

Downtime is the sum of the rebalances' stop-the-world durations, with one still
in progress counted up to the end of the window and overlapping rebalances of
one group counted once. "Recovered" is the first point after the worst lag at
which the total lag is back at or below where it was when the window began.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monitor.models import Rebalance


@dataclass(frozen=True)
class IncidentSummary:
    rebalances: int
    groups: int
    downtime_ms: int
    partitions_moved: int
    worst_lag: int | None
    worst_lag_at: int | None
    recovered_at: int | None  # None: not back to the starting level by the end of the window


def compute_incident_summary(
    rebalances: Sequence[Rebalance], lag: Sequence[tuple[int, int]], until: int
) -> IncidentSummary:
    """`lag` is (at, total lag) oldest first; `until` closes rebalances still in progress."""
    downtime = 0
    by_group: dict[str, list[tuple[int, int]]] = {}
    for r in rebalances:
        by_group.setdefault(r.group_id, []).append((r.started_at, r.ended_at if r.ended_at is not None else until))
    for spans in by_group.values():
        end_so_far = None
        for start, end in sorted(spans):
            if end_so_far is not None and start < end_so_far:
                start = end_so_far
            if end > start:
                downtime += end - start
            end_so_far = end if end_so_far is None else max(end_so_far, end)
    worst = worst_at = recovered = None
    if lag:
        worst_at, worst = max(lag, key=lambda p: (p[1], -p[0]))
        baseline = lag[0][1]
        if worst > baseline:
            recovered = next((at for at, value in lag if at > worst_at and value <= baseline), None)
        else:
            recovered = worst_at
    return IncidentSummary(
        len(rebalances),
        len(by_group),
        downtime,
        sum(r.partitions_moved for r in rebalances),
        worst,
        worst_at,
        recovered,
    )


def build_incident_report(
    title: str,
    since: int,
    until: int,
    rebalances: Sequence[Rebalance],
    lag: Sequence[tuple[int, int]] | None,
    fmt_time: Callable[[int | None], str],
) -> str:
    """Markdown: the summary, then one table row per rebalance. `fmt_time` names the zone.

    `lag` None: lag was not looked at for this selection (e.g. every group at once).
    """
    s = compute_incident_summary(rebalances, lag or [], until)
    lines = [
        f"# Incident report: {_md(title)}",
        "",
        f"Window: {fmt_time(since)} to {fmt_time(until)}",
        "",
        *_summary_lines(s, lag is None, fmt_time),
        "",
        "| started | duration | group | trigger | joined | left | moved | generation | protocol |",
        "|---|---|---|---|---|---|---|---|---|",
        *(_rebalance_row(r, fmt_time) for r in rebalances),
    ]
    if not rebalances:
        lines.append("| no rebalances in this window | | | | | | | | |")
    return "\n".join(lines) + "\n"


def _summary_lines(s: IncidentSummary, lag_left_out: bool, fmt_time: Callable[[int | None], str]) -> list[str]:
    """The summary's bullets: the rebalances' toll, then the lag's (why there is none when there is none)."""
    lines = [
        f"- Rebalances: {s.rebalances} in {s.groups} group(s)",
        f"- Total stop-the-world time: {s.downtime_ms / 1000:.1f} s",
        f"- Partitions moved: {s.partitions_moved}",
    ]
    if lag_left_out:
        lines.append("- Lag: not included (the report covers several groups; pick one for its lag)")
    elif s.worst_lag is None:
        lines.append("- Lag: no samples in the window")
    else:
        lines.append(f"- Worst total lag: {s.worst_lag} at {fmt_time(s.worst_lag_at)}")
        lines.append(
            "- Recovered (back to the starting level): "
            + (fmt_time(s.recovered_at) if s.recovered_at is not None else "not within the window")
        )
    return lines


def _rebalance_row(r: Rebalance, fmt_time: Callable[[int | None], str]) -> str:
    duration = "in progress" if r.ended_at is None else f"{(r.ended_at - r.started_at) / 1000:.1f} s"
    generation = f"{r.generation_before} → {r.generation_after}" if r.generation_after is not None else "—"
    return (
        "| "
        + " | ".join(
            [
                fmt_time(r.started_at),
                duration,
                _md(r.group_id),
                str(r.trigger),
                _md(", ".join(m.client_id or m.member_id for m in r.joined)) or "—",
                _md(", ".join(m.client_id or m.member_id for m in r.left)) or "—",
                str(r.partitions_moved),
                generation,
                r.protocol,
            ]
        )
        + " |"
    )


def _md(text: str) -> str:
    """Names are data: escape what Markdown would interpret (tables, emphasis, links, HTML)."""
    out = []
    for ch in text:
        out.append("\\" + ch if ch in "\\`*_{}[]()#+-.!|<>" else ch)
    return "".join(out)

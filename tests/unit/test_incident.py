"""app_pages.incident: the window summary and its Markdown."""

from __future__ import annotations

import pytest

from app_pages.incident import build_incident_report, compute_incident_summary
from monitor.models import MemberRef, Rebalance, Trigger

S = 1000


def rb(group, start, end, moved=0, **kw) -> Rebalance:
    return Rebalance(group, start * S, None if end is None else end * S, "eager", partitions_moved=moved, **kw)


@pytest.mark.parametrize(
    "rebalances, until, downtime",
    [
        ([], 100, 0),
        ([rb("g", 10, 20)], 100, 10 * S),  # one rebalance: its duration
        ([rb("g", 10, 20), rb("h", 15, 25)], 100, 20 * S),  # different groups add up
        ([rb("g", 10, 20), rb("g", 15, 25)], 100, 15 * S),  # one group overlapping: counted once
        ([rb("g", 90, None)], 100, 10 * S),  # in progress: until the window's end
    ],
)
def test_downtime(rebalances, until, downtime):
    assert compute_incident_summary(rebalances, [], until * S).downtime_ms == downtime


@pytest.mark.parametrize(
    "lag, worst, worst_at, recovered_at",
    [
        ([], None, None, None),
        ([(1, 10), (2, 500), (3, 200), (4, 10), (5, 0)], 500, 2, 4),  # back to the starting 10 at t=4
        ([(1, 10), (2, 500), (3, 200)], 500, 2, None),  # not recovered within the window
        ([(1, 50), (2, 40), (3, 30)], 50, 1, 1),  # never worse than at the start
        ([(1, 0), (2, 9), (3, 9), (4, 0)], 9, 2, 4),  # the first time the worst was reached
    ],
)
def test_worst_lag_and_recovery(lag, worst, worst_at, recovered_at):
    s = compute_incident_summary([], lag, 10)
    assert (s.worst_lag, s.worst_lag_at, s.recovered_at) == (worst, worst_at, recovered_at)


def test_report_summarises_and_lists_each_rebalance_with_names_escaped():
    joined = (MemberRef("m-3", "orders-3", "/10.0.0.3"),)
    rebalances = [
        rb(
            "orders|app",
            10,
            30,
            moved=2,
            trigger=Trigger.MEMBER_JOINED,
            joined=joined,
            generation_before=4,
            generation_after=5,
        )
    ]
    text = build_incident_report(
        "orders on prod", 0, 100 * S, rebalances, [(0, 10), (20 * S, 90), (50 * S, 10)], lambda ms: f"T+{ms // S}s"
    )
    assert text.splitlines()[:10] == [
        "# Incident report: orders on prod",
        "",
        "Window: T+0s to T+100s",
        "",
        "- Rebalances: 1 in 1 group(s)",
        "- Total stop-the-world time: 20.0 s",
        "- Partitions moved: 2",
        "- Worst total lag: 90 at T+20s",
        "- Recovered (back to the starting level): T+50s",
        "",
    ]
    assert text.splitlines()[-1] == (
        "| T+10s | 20.0 s | orders\\|app | member_joined | orders\\-3 | — | 2 | 4 → 5 | eager |"
    )


def test_report_of_a_quiet_window():
    text = build_incident_report("g", 0, 10, [], [], str)
    assert "- Rebalances: 0 in 0 group(s)" in text
    assert "- Lag: no samples in the window" in text
    assert text.rstrip().endswith("| no rebalances in this window | | | | | | | | |")
    several = build_incident_report("all groups", 0, 10, [], None, str)
    assert "- Lag: not included (the report covers several groups; pick one for its lag)" in several

"""Burrow's partition status rules, one reason per case, plus the false alarms users reported."""
from __future__ import annotations

import pytest

from monitor.evaluator import (
    CommitPoint,
    EvaluatorConfig,
    PartitionWindow,
    compute_sampled_commits,
    evaluate_group,
    evaluate_partition,
)
from monitor.models import Status, TopicPartition

TP = TopicPartition("orders", 0)
S = 1000  # ms


def window(points, lag, log_ends=(), tp=TP):
    """points: (offset, at_s, lag) triples."""
    return PartitionWindow(tp, tuple(CommitPoint(o, at * S, l) for o, at, l in points), tuple(log_ends), lag)


def commits(offsets, lags, start_s=0, step_s=1):
    return [(o, start_s + i * step_s, l) for i, (o, l) in enumerate(zip(offsets, lags))]


CONFIG = EvaluatorConfig(window=5, allowed_lag=0, min_complete=0.5)

# (reason, window, now_s, expected status)
CASES = [
    ("no commits at all: nothing to judge",
     window([], 10), 10, Status.OK),
    ("lag is zero now: OK whatever the window did",
     window(commits([10, 10, 10, 10, 10], [5, 5, 5, 5, 5]), 0), 5, Status.OK),
    ("window too incomplete (1 of 5 commits < min_complete)",
     window(commits([10], [5]), 50), 100, Status.OK),
    ("consumer moves and lag shrinks: OK",
     window(commits([10, 20, 30, 40, 50], [50, 45, 40, 35, 30]), 30), 5, Status.OK),
    ("no commit for longer than the window spans, log end moved on: STOP",
     window(commits([10, 20, 30, 40, 50], [5, 5, 5, 5, 5]), 80, log_ends=[60, 90, 130]), 20, Status.STOP),
    ("offset went backwards and stayed there: REWIND",
     window(commits([100, 110, 120, 50, 50], [5, 5, 5, 75, 80]), 80), 5, Status.REWIND),
    ("same offset committed again and again with lag: STALL",
     window(commits([40, 40, 40, 40, 40], [5, 8, 12, 15, 20]), 20), 5, Status.STALL),
    ("moving but lag never decreases: WARN",
     window(commits([10, 20, 30, 40, 50], [5, 8, 8, 12, 20]), 20), 5, Status.WARN),
    ("lag the same at every commit: keeping pace, so OK",
     window(commits([10, 20, 30, 40, 50], [7, 7, 7, 7, 7]), 7), 5, Status.OK),
    ("lag decreased once inside the window: OK",
     window(commits([10, 20, 30, 40, 50], [5, 8, 6, 12, 20]), 20), 5, Status.OK),
    ("lag was zero at one commit: not always behind, so OK",
     window(commits([10, 20, 30, 40, 50], [5, 0, 8, 12, 20]), 20), 5, Status.OK),
    ("every lag within the allowed lag: never behind, so OK",
     window(commits([10, 20, 30, 40, 50], [1, 2, 2, 3, 3]), 4), 5, Status.OK),
    ("only the last N commits count: an old rewind fell out of the window",
     window(commits([90, 10, 20, 30, 40, 50], [1, 80, 70, 60, 50, 40]), 40), 6, Status.OK),
    ("commits without a known lag are not counted (they cannot show a trend)",
     window(commits([10, 20, 30, 40, 50], [None, None, None, None, 5]), 5), 5, Status.OK),
]


@pytest.mark.parametrize("reason,win,now_s,expected", CASES, ids=[c[0] for c in CASES])
def test_partition_rule(reason, win, now_s, expected):
    config = CONFIG if "allowed lag" not in reason else EvaluatorConfig(window=5, allowed_lag=5)
    assert evaluate_partition(win, now_s * S, config).status is expected


# --- regressions for false alarms reported against Burrow --------------------------------------

def test_burrow_123_single_commit_window_is_not_stop():
    # One commit long ago: now - last > last - first (= 0) is always true, yet nothing shows a stop.
    config = EvaluatorConfig(window=10, min_complete=0.0)
    result = evaluate_partition(window([(100, 0, 7)], 7), 3600 * S, config)
    assert (result.status, result.reason) == (Status.OK, "only 1 of 10 commits in the window")


def test_burrow_145_low_traffic_idle_consumer_is_not_stop():
    # A topic gets a record a minute; the consumer commits only when it reads one. The last commit
    # reached the log end, then one new record arrived (lag 1 now) and no commit for a while.
    win = window(commits([1, 2, 3, 4, 5], [0, 0, 0, 0, 0], step_s=60), 1, log_ends=[5, 5, 6])
    assert evaluate_partition(win, 4 * 60 * S + 300 * S, CONFIG).status is Status.OK


def test_burrow_223_lag_briefly_nonzero_between_commits_is_not_warn():
    # Each commit sees a record or two that arrived meanwhile, sometimes none: lag touches 0.
    win = window(commits([3, 5, 6, 9, 10], [1, 2, 0, 1, 2]), 2)
    assert evaluate_partition(win, 5 * S, CONFIG).status is Status.OK


def test_burrow_338_small_constant_lag_within_allowed_lag_is_ok():
    # A low-traffic partition whose consumer always trails by a record or two (batching).
    win = window(commits([10, 12, 14, 16, 18], [1, 1, 2, 2, 2]), 2)
    assert evaluate_partition(win, 5 * S, EvaluatorConfig(window=5, allowed_lag=2)).status is Status.OK
    # ... while the same shape without the allowance is a growing lag (the rule still works).
    assert evaluate_partition(win, 5 * S, EvaluatorConfig(window=5)).status is Status.WARN


def test_burrow_150_broker_restart_unknown_log_ends_do_not_alarm():
    # During the restart the log end could not be fetched (lag unknown), and the restarted leader
    # briefly reported a log end below the committed offset (lag clamped to 0).
    win = window([(10, 0, 2), (20, 1, None), (30, 2, None), (40, 3, 0), (50, 4, 3)], None)
    assert evaluate_partition(win, 30 * S, CONFIG).status is Status.OK
    win = window([(10, 0, 2), (20, 1, 3), (30, 2, None), (40, 3, 4), (50, 4, 0)], 0)
    assert evaluate_partition(win, 30 * S, CONFIG).status is Status.OK


def test_burrow_714_healthy_consumer_that_rewinds_is_not_rewind():
    # Reset to an earlier offset for reprocessing, then consuming normally: lag shrinks after the reset.
    win = window(commits([500, 510, 100, 200, 300], [10, 10, 420, 330, 240]), 240)
    assert evaluate_partition(win, 5 * S, CONFIG).status is Status.OK
    # ... and one that falls behind after its reset is judged on the progress since: WARN, not REWIND.
    win = window(commits([500, 510, 100, 110, 120], [10, 10, 420, 430, 440]), 450)
    assert evaluate_partition(win, 5 * S, CONFIG).status is Status.WARN


# --- group roll-up -----------------------------------------------------------------------------

def test_group_rollup_counts_stop_as_err_and_sums_lag():
    ok = window(commits([10, 20, 30, 40, 50], [5, 4, 3, 2, 1]), 3, tp=TopicPartition("orders", 0))
    stopped = window(commits([10, 20, 30, 40, 50], [5, 5, 5, 5, 5]), 70, log_ends=[90],
                     tp=TopicPartition("orders", 1))
    fresh = window([], 4, tp=TopicPartition("orders", 2))
    group = evaluate_group("g", [ok, stopped, fresh], 20 * S, CONFIG)
    assert (group.status, group.worst, group.total_lag, group.max_lag, group.max_lag_tp) == (
        Status.ERR, Status.STOP, 77, 70, TopicPartition("orders", 1))
    assert group.complete == pytest.approx(2 / 3)


def test_group_rollup_warn_stays_warn_and_empty_group_is_ok():
    warn = window(commits([10, 20, 30, 40, 50], [5, 8, 8, 12, 20]), 20)
    assert evaluate_group("g", [warn], 5 * S, CONFIG).status is Status.WARN
    empty = evaluate_group("g", [], 5 * S, CONFIG)
    assert (empty.status, empty.total_lag, empty.max_lag_tp, empty.complete) == (Status.OK, 0, None, 0.0)


# --- sampled committed offsets as the commit source --------------------------------------------

def test_sampled_commits_keep_one_point_per_offset_change():
    samples = [(0, 10, 12), (500, 10, 14), (1000, 15, 16), (1500, None, 17), (2000, 15, 18), (2500, 20, None),
               (3000, 20, 21)]
    assert compute_sampled_commits(samples) == (
        CommitPoint(10, 0, 2), CommitPoint(15, 1000, 1), CommitPoint(20, 2500, 1))


def test_sampled_stuck_consumer_becomes_stop():
    # Offset changes every second, then sticks at 50 while the log end runs on.
    samples = [(i * S, min(10 * i, 50), 10 * i + 5) for i in range(12)]
    points = compute_sampled_commits(samples)
    win = PartitionWindow(TP, points, (110, 115), 65)
    assert evaluate_partition(win, 11 * S, CONFIG).status is Status.STOP

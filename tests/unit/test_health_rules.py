"""The health rules: Burrow's window rules and the stuck rule, one reason per case, plus the false
alarms users reported (Burrow's issues) and the twins of a stuck consumer that must stay OK."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from monitor.health.rules import (
    HealthSettings,
    PartitionWindow,
    Runs,
    compute_group_status,
    compute_runs,
    compute_sampled_commits,
    compute_stuck_bound,
    judge_partition,
    make_window,
    window_points,
)
from monitor.models import Status, TopicPartition

TP = TopicPartition("orders", 0)
S = 1000  # ms


def window(points, lag, log_ends=(), tp=TP, lag_since_s=None):
    """points: (offset, at_s, lag) triples; log_ends: recent log-end samples."""
    return PartitionWindow(
        tp,
        make_window((o, at * S, lag) for o, at, lag in points),
        lag,
        None if lag_since_s is None else lag_since_s * S,
        min(log_ends) if log_ends else None,
    )


def commits(offsets, lags, start_s=0, step_s=1):
    return [(o, start_s + i * step_s, lag) for i, (o, lag) in enumerate(zip(offsets, lags, strict=True))]


CONFIG = HealthSettings(window=5, allowed_lag=0, min_complete=0.5)

# (reason, window, now_s, expected status)
CASES = [
    ("no commits at all: nothing to judge", window([], 10), 10, Status.OK),
    (
        "lag is zero now: OK whatever the window did",
        window(commits([10, 10, 10, 10, 10], [5, 5, 5, 5, 5]), 0),
        5,
        Status.OK,
    ),
    ("window too incomplete (1 of 5 commits < min_complete)", window(commits([10], [5]), 50), 100, Status.OK),
    (
        "consumer moves and lag shrinks: OK",
        window(commits([10, 20, 30, 40, 50], [50, 45, 40, 35, 30]), 30),
        5,
        Status.OK,
    ),
    (
        "no commit for longer than the window spans, log end moved on: STOP",
        window(commits([10, 20, 30, 40, 50], [5, 5, 5, 5, 5]), 80, log_ends=[60, 90, 130]),
        20,
        Status.STOP,
    ),
    (
        "offset went backwards and stayed there: REWIND",
        window(commits([100, 110, 120, 50, 50], [5, 5, 5, 75, 80]), 80),
        5,
        Status.REWIND,
    ),
    (
        "same offset committed again and again with lag: STALL",
        window(commits([40, 40, 40, 40, 40], [5, 8, 12, 15, 20]), 20),
        5,
        Status.STALL,
    ),
    (
        "moving but lag never decreases: WARN",
        window(commits([10, 20, 30, 40, 50], [5, 8, 8, 12, 20]), 20),
        5,
        Status.WARN,
    ),
    (
        "lag the same at every commit: keeping pace, so OK",
        window(commits([10, 20, 30, 40, 50], [7, 7, 7, 7, 7]), 7),
        5,
        Status.OK,
    ),
    (
        "lag decreased once inside the window: OK",
        window(commits([10, 20, 30, 40, 50], [5, 8, 6, 12, 20]), 20),
        5,
        Status.OK,
    ),
    (
        "lag was zero at one commit: not always behind, so OK",
        window(commits([10, 20, 30, 40, 50], [5, 0, 8, 12, 20]), 20),
        5,
        Status.OK,
    ),
    (
        "every lag within the allowed lag: never behind, so OK",
        window(commits([10, 20, 30, 40, 50], [1, 2, 2, 3, 3]), 4),
        5,
        Status.OK,
    ),
    (
        "only the last N commits count: an old rewind fell out of the window",
        window(commits([90, 10, 20, 30, 40, 50], [1, 80, 70, 60, 50, 40]), 40),
        6,
        Status.OK,
    ),
    (
        "commits without a known lag are not counted (they cannot show a trend)",
        window(commits([10, 20, 30, 40, 50], [None, None, None, None, 5]), 5),
        5,
        Status.OK,
    ),
]


@pytest.mark.parametrize("reason,win,now_s,expected", CASES, ids=[c[0] for c in CASES])
def test_partition_rule(reason, win, now_s, expected):
    config = CONFIG if "allowed lag" not in reason else HealthSettings(window=5, allowed_lag=5)
    assert judge_partition(win, now_s * S, config).status is expected


# --- regressions for false alarms reported against Burrow --------------------------------------


def test_burrow_123_single_commit_window_is_not_stop():
    # One commit long ago: now - last > last - first (= 0) is always true, yet nothing shows a stop.
    config = HealthSettings(window=10, min_complete=0.0)
    result = judge_partition(window([(100, 0, 7)], 7), 3600 * S, config)
    assert (result.status, result.reason) == (Status.OK, "only 1 of 10 commits in the window")


def test_burrow_145_low_traffic_idle_consumer_is_not_stop():
    # A topic gets a record a minute; the consumer commits only when it reads one. The last commit
    # reached the log end, then one new record arrived (lag 1 now) and no commit for a while.
    win = window(commits([1, 2, 3, 4, 5], [0, 0, 0, 0, 0], step_s=60), 1, log_ends=[5, 5, 6])
    assert judge_partition(win, 4 * 60 * S + 300 * S, CONFIG).status is Status.OK


def test_burrow_223_lag_briefly_nonzero_between_commits_is_not_warn():
    # Each commit sees a record or two that arrived meanwhile, sometimes none: lag touches 0.
    win = window(commits([3, 5, 6, 9, 10], [1, 2, 0, 1, 2]), 2)
    assert judge_partition(win, 5 * S, CONFIG).status is Status.OK


def test_burrow_338_small_constant_lag_within_allowed_lag_is_ok():
    # A low-traffic partition whose consumer always trails by a record or two (batching).
    win = window(commits([10, 12, 14, 16, 18], [1, 1, 2, 2, 2]), 2)
    assert judge_partition(win, 5 * S, HealthSettings(window=5, allowed_lag=2)).status is Status.OK
    # ... while the same shape without the allowance is a growing lag (the rule still works).
    assert judge_partition(win, 5 * S, HealthSettings(window=5)).status is Status.WARN


def test_burrow_150_broker_restart_unknown_log_ends_do_not_alarm():
    # During the restart the log end could not be fetched (lag unknown), and the restarted leader
    # briefly reported a log end below the committed offset (lag clamped to 0).
    win = window([(10, 0, 2), (20, 1, None), (30, 2, None), (40, 3, 0), (50, 4, 3)], None)
    assert judge_partition(win, 30 * S, CONFIG).status is Status.OK
    win = window([(10, 0, 2), (20, 1, 3), (30, 2, None), (40, 3, 4), (50, 4, 0)], 0)
    assert judge_partition(win, 30 * S, CONFIG).status is Status.OK


def test_burrow_714_healthy_consumer_that_rewinds_is_not_rewind():
    # Reset to an earlier offset for reprocessing, then consuming normally: lag shrinks after the reset.
    win = window(commits([500, 510, 100, 200, 300], [10, 10, 420, 330, 240]), 240)
    assert judge_partition(win, 5 * S, CONFIG).status is Status.OK
    # ... and one that falls behind after its reset is judged on the progress since: WARN, not REWIND.
    win = window(commits([500, 510, 100, 110, 120], [10, 10, 420, 430, 440]), 450)
    assert judge_partition(win, 5 * S, CONFIG).status is Status.WARN


# --- group roll-up -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statuses,expected",
    [
        ((), (Status.OK, Status.OK)),
        ((Status.OK, Status.WARN), (Status.WARN, Status.WARN)),
        ((Status.OK, Status.STOP, Status.WARN), (Status.ERR, Status.STOP)),
        ((Status.STALL, Status.REWIND), (Status.ERR, Status.REWIND)),
    ],
)
def test_group_status_is_the_worst_partition_with_stop_stall_rewind_as_err(statuses, expected):
    assert compute_group_status(statuses) == expected


# --- sampled committed offsets as the commit source --------------------------------------------


def test_sampled_commits_keep_one_point_per_offset_change():
    samples = [
        (0, 10, 12),
        (500, 10, 14),
        (1000, 15, 16),
        (1500, None, 17),
        (2000, 15, 18),
        (2500, 20, None),
        (3000, 20, 21),
    ]
    assert compute_sampled_commits(samples) == ((10, 0, 2), (15, 1000, 1), (20, 2500, 1))


def test_sampled_stuck_consumer_becomes_stop():
    # Offset changes every second, then sticks at 50 while the log end runs on.
    samples = [(i * S, min(10 * i, 50), 10 * i + 5) for i in range(12)]
    points = compute_sampled_commits(samples)
    win = PartitionWindow(TP, make_window(points), 65, None, 110)
    assert judge_partition(win, 11 * S, CONFIG).status is Status.STOP


# --- rule 2: a consumer stuck right after it started, and its no-false-alarm twins ---------------
# Two commits one second apart, then the offset sticks at 20 while records keep arriving (lag grows);
# the oldest waiting record (offset 20) was appended at t = 2 s. Default settings: bound 120 s.

STUCK = {"points": [(10, 0, 0), (20, 1, 0)], "lag": 500, "lag_since_s": 2}

STUCK_CASES = [
    ("stuck at start, past the bound: STOP however few commits", window(**STUCK), 130, Status.STOP),
    ("stuck at start, not yet past the bound: OK", window(**STUCK), 110, Status.OK),
    (
        "a consumer that never committed twice is judged on stuck_after alone",
        window([(20, 1, 0)], 500, lag_since_s=2),
        130,
        Status.STOP,
    ),
    (
        "idle topic: lag unchanged since the last commit (log end did not move): OK",
        window([(10, 0, 5), (20, 1, 5)], 5, lag_since_s=0),
        3600,
        Status.OK,
    ),
    (
        "caught-up group: OK however long since its last commit",
        window([(10, 0, 0), (20, 1, 0)], 0, lag_since_s=None),
        3600,
        Status.OK,
    ),
    (
        "slow but steady committer: a commit every 60 s, 100 s since the last (bound 180 s): OK",
        window([(100, 0, 10), (200, 60, 10), (300, 120, 10), (400, 180, 10), (500, 240, 10)], 40, lag_since_s=250),
        340,
        Status.OK,
    ),
    (
        "a consumer that commits every 5 min by design: 9 min since its last commit (bound 15 min): OK",
        window([(100, 0, 10), (200, 300, 10), (300, 600, 10)], 90, lag_since_s=610),
        600 + 540,
        Status.OK,
    ),
    (
        "... and the same consumer 16 min after its last commit: STOP",
        window([(100, 0, 10), (200, 300, 10), (300, 600, 10)], 90, lag_since_s=610),
        600 + 960,
        Status.STOP,
    ),
    (
        "an hour idle, then one record: the waiting record is new, so OK",
        window([(10, 0, 0), (20, 1, 0)], 1, lag_since_s=3600),
        3605,
        Status.OK,
    ),
    (
        "lag in seconds unknown (no log-end history yet): not judged stuck",
        window(**{**STUCK, "lag_since_s": None}),
        130,
        Status.OK,
    ),
    ("within the allowed lag: OK", window(**STUCK), 130, Status.OK),
]


@pytest.mark.parametrize("reason,win,now_s,expected", STUCK_CASES, ids=[c[0] for c in STUCK_CASES])
def test_stuck_rule(reason, win, now_s, expected):
    settings = HealthSettings(allowed_lag=500) if "allowed lag" in reason else HealthSettings()
    assert judge_partition(win, now_s * S, settings).status is expected


def test_stuck_reason_names_the_offset_the_time_and_the_bound_in_words_that_stay_true():
    verdict = judge_partition(window(**STUCK), 130 * S)
    assert verdict[:2] == (
        Status.STOP,
        "offset 20 unchanged since 1970-01-01 00:00:01 UTC while newer records waited longer than 120s",
    )


@pytest.mark.parametrize(
    "gaps_s,expected_s",
    [
        ((), 120),  # no cadence: stuck_after
        ((1, 1, 1), 120),  # fast committer: the floor
        ((60, 60, 60, 3600), 180),  # the median gap, not an idle hour
        ((300, 300), 900),
    ],
)
def test_stuck_bound_follows_the_commit_cadence_with_a_floor(gaps_s, expected_s):
    at, points = 0, [(0, 0, 0)]
    for i, gap in enumerate(gaps_s, 1):
        at += gap * S
        points.append((i, at, 0))
    assert compute_stuck_bound(make_window(points), HealthSettings()) == expected_s * S


@pytest.mark.parametrize(
    "win,expected",
    [
        (window(**STUCK), True),  # rule 2 runs on the clock
        (window([(10, 0, 5), (20, 1, 5)], 5), True),  # rule 4 (no commit for longer than the window) does too
        (window([(20, 1, 5)], 5), False),  # one commit, lag as it was: nothing changes with time
        (window([(10, 0, 0), (20, 1, 0)], 0), False),  # caught up
    ],
)
def test_a_verdict_says_whether_it_could_change_with_time_alone(win, expected):
    assert judge_partition(win, 2 * S).clocked is expected


# --- the engine's runs, kept point by point, judge as the window itself does ---------------------

POINTS = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6)), min_size=1, max_size=14)


@hypothesis_settings(max_examples=300, deadline=None)
@given(points=POINTS, lag_now=st.integers(0, 8), allowed=st.integers(0, 2), now_s=st.integers(13, 400))
def test_judging_with_the_engines_runs_equals_judging_the_window(points, lag_now, allowed, now_s):
    """Offsets and lags at random (rewinds, stalls, growing lags), one commit a second."""
    settings = HealthSettings(window=5, allowed_lag=allowed, stuck_after_s=10)
    commits = tuple((o, i * S, lag) for i, (o, lag) in enumerate(points))
    runs = compute_runs(make_window(commits), allowed)  # what the engine holds after adding them one by one
    kept = make_window(commits[-settings.window :])
    with_runs = PartitionWindow(TP, kept, lag_now, 5 * S, None, runs)
    assert judge_partition(with_runs, now_s * S, settings) == judge_partition(
        with_runs._replace(runs=None), now_s * S, settings
    )


def test_runs_count_back_from_the_newest_commit():
    commits = [(o, i, lag) for i, (o, lag) in enumerate([(5, 1), (9, 0), (3, 2), (3, 2), (3, 4)])]
    assert compute_runs(make_window(commits), 1) == Runs(
        since_drop=3, same=3, rising=4, behind=3
    )  # lags 0, 2, 2, 4 rise


def test_a_window_holds_its_commits_flat_with_an_unknown_lag_as_no_lag():
    points = [(10, 1000, 5), (20, 2000, None), (30, 3000, 0)]
    assert make_window(points).tolist() == [10, 1000, 5, 20, 2000, -1, 30, 3000, 0]
    assert window_points(make_window(points)) == points

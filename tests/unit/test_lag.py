"""Lag and lag in seconds: the shared cases (tests/support/lag_cases.py) and the artefacts kafka-lag-exporter
users reported."""

from __future__ import annotations

import math
import random
from bisect import bisect_right

import pytest
from lag_cases import LAG_CASES, TIME_LAG_CASES

from monitor.lag import (
    LagClock,
    LogEndHistory,
    compute_compact_history,
    compute_doubt,
    compute_exact_clock,
    compute_lag,
    compute_time_lag,
)
from monitor.models import RecordTime

S = 1000


def steady(rate_per_s: float, poll_s: float, points: int, start_end: int = 1000):
    """A log end growing at `rate_per_s`, sampled every `poll_s` from t = 0."""
    return [(start_end + int(rate_per_s * poll_s * i), int(poll_s * i * S)) for i in range(points)]


@pytest.mark.parametrize("case", TIME_LAG_CASES, ids=lambda c: c.name)
def test_time_lag_answers_the_shared_cases(case):
    lag = compute_time_lag(case.committed, case.history, case.now)
    answer = None if lag is None else (round(lag.seconds, 3), lag.at_least)
    assert answer == (None if case.seconds is None else (case.seconds, case.at_least)), case.why


@pytest.mark.parametrize("case", TIME_LAG_CASES, ids=lambda c: c.name)
def test_the_health_engines_log_end_history_answers_the_shared_cases_too(case):
    """The running collector keeps a LogEndHistory and a clock per partition: the same definition."""
    clock = LogEndHistory(case.history).clock(case.committed)
    lag = None if clock is None else clock.at(case.now)
    answer = None if lag is None else (round(lag.seconds, 3), lag.at_least)
    assert answer == (None if case.seconds is None else (case.seconds, case.at_least)), case.why


def test_log_end_history_keeps_a_plateau_as_two_points_and_says_when_the_log_end_moved():
    history = LogEndHistory()
    assert [history.add(end, at * S) for end, at in [(10, 0), (10, 1), (10, 2), (10, 3), (12, 4), (11, 5)]] == [
        True,
        False,
        False,
        False,
        True,
        False,
    ]
    assert history.points() == [(10, 0), (10, 3 * S), (12, 4 * S), (12, 5 * S)]  # 11: a restart's lower end
    assert (history.end_at(2500), history.end_at(4 * S), history.end_at(-1)) == (10, 12, None)


@pytest.mark.parametrize("case", LAG_CASES, ids=lambda c: c.name)
def test_lag_answers_the_shared_cases(case):
    assert compute_lag(case.committed, case.log_end) == case.lag


def test_kle_496_replaying_consumer_gets_a_bound_not_an_extrapolation():
    # The consumer is at offset 10, far below the oldest point of an hour of history.
    history = steady(rate_per_s=100, poll_s=10, points=360, start_end=1_000_000)
    lag = compute_time_lag(10, history, 3600 * S)
    assert lag.at_least and lag.seconds == pytest.approx(3600.0)
    assert str(lag) == "≥ 3600.0s"


@pytest.mark.parametrize("behind", [1, 37, 250, 499, 1234])
def test_kle_353_steady_log_end_is_not_quantised_to_the_poll_interval(behind):
    # 50 records/s sampled every 10 s: a consumer `behind` records back trails by behind/50 s,
    # not by a multiple of 10 s.
    history = steady(rate_per_s=50, poll_s=10, points=30)
    now = history[-1][1]
    lag = compute_time_lag(history[-1][0] - behind, history, now)
    assert lag.seconds == pytest.approx((behind - 1) / 50, abs=0.001)
    assert not lag.at_least


def test_compact_history_drops_inner_plateau_points_without_changing_answers():
    history = [(1, 0), (1, 1), (1, 2), (1, 3), (5, 4), (9, 5), (9, 6), (9, 7)]
    assert compute_compact_history(history, 10) == [(1, 0), (1, 3), (5, 4), (9, 5), (9, 7)]
    for committed in (0, 1, 4, 6, 9):
        assert compute_time_lag(committed, history, 10 * S) == compute_time_lag(
            committed, compute_compact_history(history, 10), 10 * S
        )


def test_compact_history_thins_old_points_but_keeps_the_horizon():
    history = steady(rate_per_s=10, poll_s=1, points=1000)
    compact = compute_compact_history(history, 100)
    assert len(compact) <= 100
    assert (compact[0], compact[-1]) == (history[0], history[-1])
    now = history[-1][1]
    # a steady log end interpolates the same from fewer points, old or recent
    for behind in (5, 500, 5000, 9980):
        committed = history[-1][0] - behind
        assert compute_time_lag(committed, compact, now).seconds == pytest.approx(
            compute_time_lag(committed, history, now).seconds, abs=0.01
        )


@pytest.mark.parametrize("seed", range(20))
def test_the_true_lag_lies_within_the_stated_error_whatever_the_traffic(seed):
    """Records appended in bursts and silences, sampled at uneven times: the truth is always within ± error."""
    rng = random.Random(seed)
    appended, t = [], 0.0  # appended[k]: when record k was appended (ms)
    while t < 600 * S:
        t += rng.choice([rng.expovariate(1 / 20), rng.uniform(5 * S, 60 * S)])  # a burst or a silence
        for _ in range(rng.randint(1, 500)):
            t += rng.uniform(0, 2)
            appended.append(t)
    samples = sorted(rng.randint(0, int(appended[-1])) for _ in range(rng.randint(5, 200)))
    history = [(bisect_right(appended, at), at) for at in samples]
    now = int(samples[-1])
    for committed in range(history[0][0], history[-1][0], max(1, history[-1][0] // 300)):
        lag = compute_time_lag(committed, history, now)
        truth = (now - appended[committed]) / S
        assert not lag.at_least
        assert abs(lag.seconds - truth) <= lag.error + 1e-6, (committed, lag, truth)


def test_a_steady_log_end_sampled_every_ten_seconds_is_known_to_within_ten_seconds():
    history = steady(rate_per_s=50, poll_s=10, points=30)
    lag = compute_time_lag(history[-1][0] - 260, history, history[-1][1])
    assert (lag.seconds, lag.error) == (pytest.approx(5.18), pytest.approx(5.18))  # 4.82 s after one point
    assert (str(lag), lag.method) == ("5.2s ±5.2", "interpolated")


def test_a_bound_is_shown_as_one_and_its_error_is_unbounded():
    lag = compute_time_lag(10, steady(rate_per_s=100, poll_s=10, points=5, start_end=1000), 40 * S)
    assert (str(lag), lag.method, lag.error_bound) == ("≥ 40.0s", "bound", math.inf)


@pytest.mark.parametrize(
    ("timestamp", "believed", "why"),
    [
        (14_000, 14_000, "inside the bracket 10 s .. 20 s"),
        (8_500, 10_000, "just before it: CreateTime is set before the record waits in the producer's queue"),
        (21_500, 20_000, "just after it: a sample's log ends are read during its cycle, not at its start"),
        (3_600_000 - 7_200_000, None, "a producer-set time two hours in the past"),
        (90_000, None, "a time long after the next sample saw the record"),
    ],
)
@pytest.mark.parametrize("log_append", [True, False])
def test_a_records_own_timestamp_is_believed_only_where_the_log_end_history_allows(
    timestamp, believed, why, log_append
):
    interpolated = LogEndHistory([(100, 10 * S), (200, 20 * S), (300, 30 * S)]).clock(149)  # 15 s ± 5 s
    assert (interpolated.earliest, interpolated.latest) == (10 * S, 20 * S)
    clock = compute_exact_clock(RecordTime(timestamp, log_append), interpolated)
    if believed is None:
        assert clock == interpolated, why
    elif log_append:  # exact, even just outside: the sample's log ends were read during its cycle
        assert (clock, clock.error) == (LagClock(timestamp, exact=True), 0.0), why
    else:  # as sure as where it lies in the bracket: 14 s is within 6 s of any time from 10 s to 20 s
        assert (clock.since, clock.exact, clock.error) == (believed, True, max(believed - 10 * S, 20 * S - believed))


def test_a_record_older_than_the_history_may_have_any_older_timestamp_but_no_newer_one():
    bound = LogEndHistory([(100, 10 * S), (200, 20 * S)]).clock(5)
    assert compute_exact_clock(RecordTime(1_000, True), bound) == LagClock(1_000, exact=True)
    assert compute_exact_clock(RecordTime(11 * S, True), bound) == LagClock(11 * S, exact=True)  # read in the cycle
    assert compute_exact_clock(RecordTime(60 * S, True), bound) == bound
    assert compute_exact_clock(RecordTime(1_000, False), bound) == bound  # a CreateTime the history cannot check
    assert compute_exact_clock(RecordTime(1_000, False), None) is None


def test_doubt_puts_bounds_first_then_the_least_sure_relative_to_the_lag():
    now = 100 * S
    far = LagClock(10 * S, earliest=9 * S, latest=11 * S)  # 90 s ± 1 s
    near = LagClock(95 * S, earliest=94 * S, latest=96 * S)  # 5 s ± 1 s
    ranked = sorted(
        [far, near, LagClock(0, at_least=True), LagClock(50 * S, exact=True)], key=lambda c: -compute_doubt(c, now)
    )
    assert ranked == [LagClock(0, at_least=True), near, far, LagClock(50 * S, exact=True)]

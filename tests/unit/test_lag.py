"""Lag and lag in seconds: the shared cases (tests/support/lag_cases.py) and the artefacts kafka-lag-exporter
users reported."""

from __future__ import annotations

import pytest
from lag_cases import LAG_CASES, TIME_LAG_CASES

from monitor.lag import LogEndHistory, compute_compact_history, compute_lag, compute_time_lag

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

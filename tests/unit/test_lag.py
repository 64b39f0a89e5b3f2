"""Lag in seconds by interpolation: the method, and each artefact kafka-lag-exporter users reported."""
from __future__ import annotations

import pytest

from monitor.lag import TimeLag, compute_compact_history, compute_time_lag

S = 1000


def steady(rate_per_s: float, poll_s: float, points: int, start_end: int = 1000):
    """A log end growing at `rate_per_s`, sampled every `poll_s` from t = 0."""
    return [(start_end + int(rate_per_s * poll_s * i), int(poll_s * i * S)) for i in range(points)]


def test_interpolates_between_the_bracketing_points():
    history = [(100, 0), (200, 10 * S), (300, 20 * S)]
    # record 149 was appended when the log end reached 150: halfway between t=0 and t=10 s
    assert compute_time_lag(149, history, 30 * S) == TimeLag(25.0)


def test_caught_up_consumer_has_zero_lag():
    assert compute_time_lag(300, [(100, 0), (300, 10 * S)], 20 * S) == TimeLag(0.0)


def test_no_commit_or_no_history_is_unknown():
    assert compute_time_lag(None, [(1, 0)], 0) is None
    assert compute_time_lag(5, [], 0) is None


def test_kle_138_never_negative_even_with_clock_skew():
    # The newest point is stamped after `now` (another host's clock): still not negative.
    assert compute_time_lag(150, [(100, 0), (200, 10 * S)], 1 * S) == TimeLag(0.0)


def test_kle_138_restart_reporting_a_lower_log_end_is_not_negative_or_zero():
    history = [(100, 0), (200, 10 * S), (0, 20 * S)]  # restarted leader answered 0 for a moment
    assert compute_time_lag(149, history, 30 * S) == TimeLag(25.0)


def test_kle_121_flat_table_is_finite():
    # Nothing produced for the whole history, and the consumer is one record behind it.
    history = [(500, 0), (500, 10 * S), (500, 20 * S)]
    lag = compute_time_lag(499, history, 30 * S)
    assert lag == TimeLag(30.0, at_least=True)
    # A plateau after growth: the record was appended before the plateau began.
    history = [(400, 0), (500, 10 * S), (500, 20 * S), (500, 30 * S)]
    assert compute_time_lag(499, history, 40 * S) == TimeLag(30.0)  # appended at t = 10 s


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
            committed, compute_compact_history(history, 10), 10 * S)


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
            compute_time_lag(committed, history, now).seconds, abs=0.01)


def test_a_single_fresh_point_gives_no_answer_rather_than_a_bound_of_zero():
    assert compute_time_lag(5, [(20, 10 * S)], 10 * S) is None
    assert compute_time_lag(20, [(20, 10 * S)], 10 * S) == TimeLag(0.0)

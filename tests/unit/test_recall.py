from monitor.models import MemberRef, Rebalance
from monitor.sim.recall import Recall, compute_recall


def rb(start, end, joined=(), left=()):
    def refs(ids):
        return tuple(MemberRef(i, "c", "h") for i in ids)

    return Rebalance("g", start, end, "eager", joined=refs(joined), left=refs(left))


def test_each_round_in_a_window_is_matched_once():
    assert compute_recall([1000, 5000], [rb(900, 1100), rb(4900, 5200)], 0, 9999) == Recall(2, 2, 0)


def test_two_rounds_merged_into_one_row_count_once():
    assert compute_recall([1000, 1500], [rb(900, 2000)], 0, 9999) == Recall(2, 1, 0)


def test_a_row_naming_two_membership_changes_stands_for_two_rounds_and_no_more():
    # a cooperative rebalance interrupted by a leave: one row, two rounds of callbacks
    assert compute_recall([1000, 1500], [rb(900, 2000, joined=["m1"], left=["m2"])], 0, 9999) == Recall(2, 2, 0)
    assert compute_recall([1000, 1500, 1800], [rb(900, 2000, joined=["m1"], left=["m2"])], 0, 9999) == Recall(3, 2, 0)


def test_a_round_goes_to_the_earliest_row_with_room_left():
    rows = [rb(900, 2000, joined=["m1"]), rb(1400, 1600, left=["m2"])]
    assert compute_recall([1000, 1500], rows, 0, 9999) == Recall(2, 2, 0)


def test_a_row_with_no_real_rebalance_is_invented():
    assert compute_recall([1000], [rb(900, 1100), rb(7000, 8000)], 0, 9999) == Recall(1, 1, 1)


def test_slack_widens_the_window_and_open_rows_run_until_now():
    assert compute_recall([1200, 9000], [rb(1300, 2000), rb(8000, None)], 200, 9500) == Recall(2, 2, 0)


def test_no_rounds_is_perfect_recall_but_rows_are_invented():
    result = compute_recall([], [rb(1, 2)], 0, 10)
    assert (result.recall, result.invented) == (1.0, 1)


def truth_line(ts, event, **fields):
    return {"ts": ts, "event": event, "group": "g", **fields}


def test_truth_rebalances_follow_their_causes_and_ignore_setup_static_rejoins_and_shutdown():
    from monitor.sim.recall import truth_rebalance_times

    truth = [
        {"ts": 0, "event": "phase", "name": "start"},
        truth_line(50, "join"),
        truth_line(100, "assigned"),  # setup: before the scenario settled
        {"ts": 1000, "event": "phase", "name": "settled"},
        truth_line(1900, "leave", left_group=True),
        truth_line(2000, "revoked"),
        truth_line(2300, "assigned"),
        truth_line(3200, "assigned"),  # its rebalance
        truth_line(5900, "join"),
        truth_line(6000, "revoked"),  # a join: only a revocation reaches the others
        truth_line(6500, "leave", left_group=True),
        truth_line(6600, "assigned"),  # a leave right after: its own
        truth_line(7000, "leave", left_group=False),
        truth_line(7500, "join", instance_id="i0"),  # static restart
        {"ts": 9000, "event": "phase", "name": "stop"},
        truth_line(9050, "leave", left_group=True),
        truth_line(9100, "revoked"),  # shutdown
    ]
    assert truth_rebalance_times(truth, "g") == [2000, 6000, 6600]

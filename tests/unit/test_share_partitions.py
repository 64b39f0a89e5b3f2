"""The share coordinator's state merge, as Kafka 4.3 applies ShareSnapshot and ShareUpdate records."""

from __future__ import annotations

import pytest

from monitor.models import DeliveryState, SharePartition
from monitor.offsets_topic.share_partitions import Batch, _State, compute_overlay, compute_share_partition

AVAILABLE, ACKED, ARCHIVED = DeliveryState.AVAILABLE, DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED


@pytest.mark.parametrize(
    ("old", "new", "start", "expected"),
    [
        # nothing before: the new batches as they are
        ((), (Batch(10, 19, ACKED, 1),), 10, (Batch(10, 19, ACKED, 1),)),
        # a new batch inside an old one splits it in three
        (
            (Batch(10, 19, AVAILABLE, 1),),
            (Batch(12, 13, ACKED, 1),),
            10,
            (Batch(10, 11, AVAILABLE, 1), Batch(12, 13, ACKED, 1), Batch(14, 19, AVAILABLE, 1)),
        ),
        # covering two old batches' ends
        (
            (Batch(10, 14, AVAILABLE, 1), Batch(15, 19, AVAILABLE, 2)),
            (Batch(13, 16, ARCHIVED, 5),),
            10,
            (Batch(10, 12, AVAILABLE, 1), Batch(13, 16, ARCHIVED, 5), Batch(17, 19, AVAILABLE, 2)),
        ),
        # the start offset moved: everything before it is gone, a batch across it is cut
        (
            (Batch(10, 14, ACKED, 1), Batch(15, 19, AVAILABLE, 1)),
            (),
            17,
            (Batch(17, 19, AVAILABLE, 1),),
        ),
        # a new batch wholly before the start counts for nothing
        ((), (Batch(1, 5, ACKED, 1),), 10, ()),
    ],
)
def test_overlay_writes_new_batches_over_old_ranges_from_the_start_offset(old, new, start, expected):
    assert compute_overlay(old, new, start) == expected


def test_counts_by_delivery_state_and_the_position_kafka_lag_follows():
    state = _State(
        start_offset=100,
        state_epoch=1,
        leader_epoch=0,
        delivery_complete=7,
        batches=(
            Batch(100, 101, AVAILABLE, 2),  # released twice: redelivering
            Batch(102, 106, ACKED, 1),
            Batch(107, 108, ARCHIVED, 5),  # rejected, or at the delivery limit
            Batch(109, 109, AVAILABLE, 0),  # never delivered: not in flight
        ),
        written_at=5,
    )
    sp = compute_share_partition(state)
    assert (sp.acknowledged, sp.archived, sp.redelivering, sp.max_delivery_count) == (5, 2, 2, 5)
    assert sp.position == 107  # lag = log_end - 100 - 7, as Kafka's DescribeShareGroupOffsets computes it


def test_position_is_unknown_without_a_start_offset_or_a_delivery_complete_count():
    assert SharePartition(start_offset=-1, delivery_complete=3).position is None
    assert SharePartition(start_offset=5, delivery_complete=None).position is None
    unknown = compute_share_partition(_State(5, 0, 0, -1, (), 0))
    assert unknown.delivery_complete is None and unknown.position is None

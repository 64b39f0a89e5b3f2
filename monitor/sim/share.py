"""A share-group member (KIP-932) as a child process of the sim: poll, acknowledge, commit.

Share groups hand records out one by one instead of partitions: each polled record is
acquired for a lock time and must be acknowledged ACCEPT, RELEASE (deliver again) or
REJECT (never again). The member acknowledges explicitly (specs.share_ack decides,
from the record alone) and writes only what the broker confirmed to the truth file,
so tests compare Kafka's view with what really happened.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections import Counter, defaultdict

from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

from monitor.sim.specs import Shared, ShareMemberSpec, share_ack, share_consumer_config
from monitor.sim.truth import TruthWriter
from monitor.sim.workers import StopFlag

POLL_S = 0.5
COMMIT_TIMEOUT_S = 10.0
ACK_TYPES = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}


def run_share_member(spec: ShareMemberSpec, shared: Shared, go_at) -> None:
    """Child entry: be a share member until SIGTERM, stalling and leaving as the spec says.

    `go_at` is the shared epoch (s) at which the parent saw the groups settle (0 until then).
    """
    flag = StopFlag()
    truth = TruthWriter(spec.truth_path)
    try:
        ShareMember(spec, shared, truth, flag).run(go_at)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    finally:
        truth.close()


class ShareMember:
    def __init__(self, spec: ShareMemberSpec, shared: Shared, truth: TruthWriter, flag: StopFlag):
        self.spec, self.shared, self.truth, self.flag = spec, shared, truth, flag
        self.consumer: ShareConsumer | None = None
        self.stalled = self.left = False

    def run(self, go_at) -> None:
        self.open()
        while not self.flag.stop:
            records = [m for m in self.consumer.poll(POLL_S).records() if m.error() is None]
            if records and self.shared.assign_count.value == 0:
                self.shared.assign_count.value = 1  # the parent's "settled" waits for every member's first batch
            if self.due(go_at, self.spec.stall_after_s, self.stalled) and records:
                self.stall(records)
            elif records:
                self.acknowledge({self.key(m): self.kind(m) for m in records}, records)
            if self.due(go_at, self.spec.leave_after_s, self.left):
                self.left = True
                self.close()
                if not self.flag.sleep(self.spec.down_s):
                    return
                self.open()
        self.close()

    def kind(self, m) -> str:
        return share_ack(m.offset(), m.delivery_count() or 1, self.spec.release_every, self.spec.reject_every)

    @staticmethod
    def key(m) -> tuple[str, int, int]:
        return m.topic(), m.partition(), m.offset()

    @staticmethod
    def due(go_at, after_s: float | None, done: bool) -> bool:
        return after_s is not None and not done and go_at.value != 0.0 and time.time() >= go_at.value + after_s

    def open(self) -> None:
        self.consumer = ShareConsumer(share_consumer_config(self.spec))
        self.consumer.subscribe(list(self.spec.topics))
        self.write("join", protocol="share", instance_id=None, pid=os.getpid())

    def close(self) -> None:
        if self.consumer is None:
            return
        self.consumer.close()  # sends what is still pending and leaves the group
        self.consumer = None
        self.write("leave", member_id=None, instance_id=None, left_group=True)

    def acknowledge(self, kinds: dict[tuple[str, int, int], str], records) -> dict[tuple[str, int], bool]:
        """Acknowledge each record as `kinds` says, commit, and write one `acks` line per partition.

        Returns whether the broker took each partition's acknowledgements.
        """
        for m in records:
            self.consumer.acknowledge(m, ACK_TYPES[kinds[self.key(m)]])
        try:
            result = self.consumer.commit_sync(COMMIT_TIMEOUT_S) or {}
            taken = {(tp.topic, tp.partition): error is None for tp, error in result.items()}
        except KafkaException:
            taken = {}
        counts: dict[tuple[str, int], Counter] = defaultdict(Counter)
        for m in records:
            tp = (m.topic(), m.partition())
            counts[tp][kinds[self.key(m)] if taken.get(tp) else "refused"] += 1
            counts[tp]["redelivered"] += (m.delivery_count() or 1) > 1
        self.truth.write_many(
            [
                {
                    "event": "acks",
                    "group": self.spec.group,
                    "client_id": self.spec.client_id,
                    "topic": topic,
                    "partition": partition,
                    **{k: c[k] for k in ("accept", "release", "reject", "refused", "redelivered")},
                }
                for (topic, partition), c in sorted(counts.items())
            ]
        )
        return {tp: taken.get(tp, False) for tp in counts}

    def stall(self, records) -> None:
        """Hold a batch unacknowledged and stop polling for stall_s (heartbeats go on in the
        background, so the member stays in the group); then release it. A release the broker
        refuses means the locks ran out while we held them: those records are `expired`."""
        self.stalled = True
        partitions = sorted({(m.topic(), m.partition()) for m in records})
        self.write("stall", member_id=None, held=len(records), partitions=[list(tp) for tp in partitions])
        self.flag.sleep(self.spec.stall_s)
        taken = self.acknowledge({self.key(m): "release" for m in records}, records)
        expired = sum(1 for m in records if not taken[(m.topic(), m.partition())])
        self.write("resume", member_id=None, held=len(records), expired=expired)

    def write(self, event: str, **fields) -> None:
        self.truth.write(event, group=self.spec.group, client_id=self.spec.client_id, **fields)

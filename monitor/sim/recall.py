"""How well recorded rebalances match what the consumers really lived through (pure).

Each real rebalance (from the consumers' own callbacks in the truth file) should be
matched by a recorded rebalance whose [started_at, ended_at] window, widened by
`slack_ms`, contains the round's time. Matching is in time order, and a row stands
for as many rounds as the membership changes it names (at least one): two real
rebalances merged into one row count once, so recall falls when polling is too slow
to separate them, unless the row names both causes. A cooperative rebalance that a
leave interrupts is such a row: Kafka completes no generation in between, and the
consumers' callbacks show two rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.models import Rebalance
from monitor.sim.truth import phase_ts


@dataclass(frozen=True)
class Recall:
    rounds: int  # rebalances the consumers saw
    matched: int  # of those, found in the recorded rows
    invented: int  # recorded rows that match no real rebalance

    @property
    def recall(self) -> float:
        return self.matched / self.rounds if self.rounds else 1.0


def truth_rebalance_times(truth: list[dict], group: str) -> list[int]:
    """When each rebalance between the scenario settling and its shutdown reached the consumers.

    A rebalance is caused by a member joining, leaving with LeaveGroup, or
    crashing (noticed after its session timeout); a static member rejoining with
    its group.instance.id causes none. Each cause is placed at the first
    assigned / revoked / lost callback any member received after it (a join only
    revokes from the others); causes that land on the same callback were handled
    by Kafka as one rebalance. Exact generations are the offsets-topic tail's job.
    """
    settled, stop = phase_ts(truth, "settled") or 0, phase_ts(truth, "stop")
    in_run = [e for e in truth if e.get("group") == group and e["ts"] > settled and (stop is None or e["ts"] < stop)]
    causes = [
        e["ts"]
        for e in in_run
        if (e["event"] == "join" and not e.get("instance_id"))
        or (e["event"] == "leave" and e.get("left_group", True))
        or e["event"] == "crash"
    ]
    callbacks = sorted(e["ts"] for e in in_run if e["event"] in ("assigned", "revoked", "lost"))
    effects = {next((ts for ts in callbacks if ts >= cause), None) for cause in causes}
    return sorted(ts for ts in effects if ts is not None)


def compute_recall(round_times: list[int], recorded: list[Rebalance], slack_ms: int, now_ms: int) -> Recall:
    rows = sorted(recorded, key=lambda r: r.started_at)
    room = [max(1, len(r.joined) + len(r.left)) for r in rows]
    used = [0] * len(rows)
    for ts in sorted(round_times):
        holds = (i for i, r in enumerate(rows) if r.started_at - slack_ms <= ts <= (r.ended_at or now_ms) + slack_ms)
        i = next((i for i in holds if used[i] < room[i]), None)
        if i is not None:
            used[i] += 1
    return Recall(len(round_times), sum(used), used.count(0))

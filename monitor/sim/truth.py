"""The truth file: JSON lines of what a simulation really did, for tests and benchmarks.

Every line is one event with `ts` (epoch ms) and `event`. Several processes append
to the same file, so each line goes out in a single os.write on an O_APPEND
descriptor: lines never interleave. The readers below are pure functions of the
parsed lines, so tests can check lagmon's view of a group against what happened.

Events (extra fields besides ts/event):
  phase     scenario, name (start | settled | stop)
  produced  topic, counts {partition: records delivered since the last line},
            end_offsets {partition: offset after the last delivered record},
            created_ms [earliest, latest] create time of those records (producer's clock)
  commit    group, client_id, topic, partition, offset
  assigned / revoked / lost
            group, client_id, member_id, instance_id, protocol (eager | cooperative |
            consumer), generation (classic generation or KIP-848 member epoch, read
            from the consumer's group metadata; null if unreadable),
            partitions [[topic, partition], ...]
  join      group, client_id, instance_id, protocol, pid
  leave     group, client_id, member_id, instance_id, left_group (false for a static
            member, which closes without sending LeaveGroup)
  crash     group, client_id, pid (written by the parent just before SIGKILL)
  died      group, client_id, pid, exit_code (a member that ended on its own: a defect,
            written by the parent when it notices; a negative code is the signal)
  stall / resume
            group, client_id, member_id
Share groups (KIP-932; join and leave as above, protocol "share", member_id null):
  group_config
            group, name, value, applied (set by the parent before anyone joins)
  acks      group, client_id, topic, partition, accept, release, reject (records whose
            acknowledgement the broker confirmed, by type), refused (acknowledgements it
            refused), redelivered (records of the batch delivered before)
  stall     also held (records acquired and left unacknowledged), partitions
  resume    also held, expired (held records whose release was refused: their lock ran out)
Streams groups (KIP-1071; group is the application.id; join, leave with exit_code, crash):
  state     group, client_id, before, after (the app's KafkaStreams state changes)
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
from collections import Counter, defaultdict

from monitor.clock import wall_ms

ROUND_GAP_MS = 1000  # without generations, callbacks closer than this belong to one round


class TruthWriter:
    """Appends events to a truth file; a writer without a path records nothing."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = os.fspath(path) if path else None
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if self.path else None

    def write(self, event: str, **fields) -> None:
        self.write_many([{"event": event, **fields}])

    def write_many(self, events: list[dict]) -> None:
        """All lines in one os.write, so a batch never interleaves with another process."""
        if self._fd is None or not events:
            return
        ts = wall_ms()
        data = "".join(json.dumps({"ts": ts, **e}, separators=(",", ":")) + "\n" for e in events)
        os.write(self._fd, data.encode())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_truth(path: str | os.PathLike) -> list[dict]:
    """Every event in the file, ordered by ts (file order among equal ts); a torn last line is skipped."""
    events = []
    with open(path) as f:
        for line in f:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a writer was killed mid-line (cannot happen with one os.write, but be lenient)
    return sorted(events, key=lambda e: e["ts"])


def events_of(truth: list[dict], event: str, group: str | None = None) -> list[dict]:
    return [e for e in truth if e["event"] == event and (group is None or e.get("group") == group)]


def phase_ts(truth: list[dict], name: str) -> int | None:
    """When the scenario reached a phase (start, settled, stop), or None."""
    for e in truth:
        if e["event"] == "phase" and e["name"] == name:
            return e["ts"]
    return None


def survivors(truth: list[dict], group: str) -> set[str]:
    """Client ids that never crashed or left before the scenario began stopping.

    Shutdown leaves (after the `stop` phase) do not count: every member leaves then.
    """
    stop = phase_ts(truth, "stop")
    members = {e["client_id"] for e in truth if e.get("group") == group and "client_id" in e}
    gone = {
        e["client_id"]
        for e in truth
        if e.get("group") == group and e["event"] in ("leave", "crash") and (stop is None or e["ts"] < stop)
    }
    return members - gone


def assignment_rounds(truth: list[dict], group: str, clients: set[str] | None = None) -> list[list[dict]]:
    """The `assigned` callbacks of `clients`, grouped into rebalance rounds (oldest first).

    A round is one generation (classic) or member epoch (KIP-848) when the consumer's
    metadata gave one; otherwise callbacks less than ROUND_GAP_MS apart. Revocations
    are not rounds of their own (an eager revoke carries the generation it ends).
    Only callbacks before the `stop` phase count.
    """
    stop = phase_ts(truth, "stop")
    callbacks = [
        e
        for e in truth
        if e["event"] == "assigned"
        and e.get("group") == group
        and (clients is None or e["client_id"] in clients)
        and (stop is None or e["ts"] < stop)
    ]
    if callbacks and all(e.get("generation") is not None for e in callbacks):
        by_generation: dict[int, list[dict]] = defaultdict(list)
        for e in callbacks:
            by_generation[e["generation"]].append(e)
        return [by_generation[g] for g in sorted(by_generation)]
    rounds: list[list[dict]] = []
    for e in callbacks:
        if rounds and e["ts"] - rounds[-1][-1]["ts"] < ROUND_GAP_MS:
            rounds[-1].append(e)
        else:
            rounds.append([e])
    return rounds


def count_rebalances(truth: list[dict], group: str) -> int:
    """How many distinct assignment rounds the surviving consumers of `group` saw."""
    return len(assignment_rounds(truth, group, survivors(truth, group)))


def current_assignment(truth: list[dict], group: str, before_ms: int | None = None) -> dict[str, set[tuple[str, int]]]:
    """Each client's partitions after replaying its events older than `before_ms`.

    Eager `assigned` replaces the set; cooperative and KIP-848 ones add to it;
    revoked/lost remove. A member that left or crashed owns nothing.
    """
    owned: dict[str, set[tuple[str, int]]] = {}
    for e in truth:
        if before_ms is not None and e["ts"] >= before_ms:
            break
        if e.get("group") != group or "client_id" not in e:
            continue
        parts = {(t, p) for t, p in e.get("partitions", [])}
        client = e["client_id"]
        if e["event"] == "assigned":
            base = set() if e.get("protocol") == "eager" else owned.get(client, set())
            owned[client] = base | parts
        elif e["event"] in ("revoked", "lost"):
            owned[client] = owned.get(client, set()) - parts
        elif e["event"] in ("leave", "crash", "join"):
            owned[client] = set()
    return owned


def produced_rate(truth: list[dict], topic: str) -> float:
    """Records per second the producer created for `topic`, over the delivered records' create times.

    Create times, not the `produced` lines' own times: a slow first delivery would move
    its backlog into a later line and read as a faster producer.
    """
    lines = [e for e in truth if e["event"] == "produced" and e["topic"] == topic and "created_ms" in e]
    records = sum(sum(e["counts"].values()) for e in lines)
    if records < 2:
        return 0.0
    span_ms = max(e["created_ms"][1] for e in lines) - min(e["created_ms"][0] for e in lines)
    return (records - 1) / (span_ms / 1000) if span_ms > 0 else 0.0


def committed_rate(truth: list[dict], group: str) -> float:
    """Records per second the group commits past while it runs: the median over the intervals between its
    commits, so a moment the machine stalled it (a busy CI run: 2.3 s without a commit) does not read as a
    slower consumer, and a consumer paced too fast still shows."""
    position: dict[tuple[str, int], int] = {}
    points: list[tuple[int, int]] = []  # (commit time, records committed past on every partition so far)
    for e in events_of(truth, "commit", group):
        position[(e["topic"], e["partition"])] = e["offset"]
        total = sum(position.values())
        if points and points[-1][0] == e["ts"]:  # one commit of several partitions
            points[-1] = (e["ts"], total)
        else:
            points.append((e["ts"], total))
    rates = [(n - m) * 1000 / (t - s) for (s, m), (t, n) in itertools.pairwise(points) if t > s]
    return statistics.median(rates) if rates else 0.0


def last_commits(truth: list[dict], group: str) -> dict[tuple[str, int], int]:
    """The latest committed offset per (topic, partition) of `group`."""
    out: dict[tuple[str, int], int] = {}
    for e in events_of(truth, "commit", group):
        out[(e["topic"], e["partition"])] = e["offset"]
    return out


def members_at(truth: list[dict], group: str, ts: int) -> set[str]:
    """Client ids that had joined `group` and not left or crashed by `ts` (a crashed member
    stays in Kafka's view until its session times out; this is the members' own view)."""
    present: set[str] = set()
    for e in truth:
        if e["ts"] > ts:
            break
        if e.get("group") != group:
            continue
        if e["event"] == "join":
            present.add(e["client_id"])
        elif e["event"] in ("leave", "crash"):
            present.discard(e["client_id"])
    return present


def share_ack_totals(truth: list[dict], group: str) -> Counter:
    """accept / release / reject / refused / redelivered summed over a share group's `acks` lines."""
    totals: Counter = Counter()
    for e in events_of(truth, "acks", group):
        for kind in ("accept", "release", "reject", "refused", "redelivered"):
            totals[kind] += e.get(kind, 0)
    return totals


def produced_total(truth: list[dict], topic: str) -> int:
    """Records delivered to `topic` over the whole run."""
    return sum(sum(e["counts"].values()) for e in truth if e["event"] == "produced" and e["topic"] == topic)

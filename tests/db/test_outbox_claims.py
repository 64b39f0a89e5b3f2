"""Several collectors on one store share one outbox: each message is sent by one sender.

Shards of a cluster, and collectors of other clusters, each run a sender on the same
alert_outbox table. Real stores (SQLite and PostgreSQL) and real alert engines queue the
messages; senders with recording `send`/`post` race for them in threads.
"""

from __future__ import annotations

import threading
import time

from factories import T0, LagSwitch

from monitor.alerts.engine import AlertEngine
from monitor.alerts.notify import CLAIM_S, OutboxSender
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.shard import UNSHARDED, Shard
from monitor.store import Store
from monitor.store.alerts import claim_outbox_row, read_outbox

CHANNELS = {"hook": "json://127.0.0.1:9/hook", "am": "alertmanager://127.0.0.1:9"}
RULES = parse_rules("rules:\n  - {name: lag-high, kind: lag_offsets, above: 100}\n", "rules.yaml", CHANNELS)


def fire(engine, cluster: str, groups, shard: Shard = UNSHARDED) -> None:
    """One cycle of `cluster` in which every group of `groups` that `shard` owns lags: their alerts fire."""
    switch = LagSwitch(cluster, [g for g in groups if shard.owns(g)], now=lambda: T0)
    switch.lagging = set(switch.groups)
    stage = HealthStage(engine, HealthEngine(cluster, RULES.evaluator), shard)
    alerts = AlertEngine(engine, cluster, RULES, shard=shard, now_ms=switch.now)
    Collector(switch, Store(engine, shard), cluster, now_ms=switch.now, health=stage, observers=[alerts]).poll_once()


class Recorder:
    """A chat service and an Alertmanager that keep what they were sent, slowly enough for senders to race."""

    def __init__(self):
        self.sent: list[str] = []
        self.posted: list[str] = []
        self._lock = threading.Lock()

    def send(self, url: str, title: str, body: str) -> bool:
        time.sleep(0.01)
        with self._lock:
            self.sent.append(title)
        return True

    def post(self, url: str, alerts: list[dict]) -> bool:
        with self._lock:
            self.posted += [a["labels"]["group"] for a in alerts]
        return True


def sender(engine, cluster: str, recorder: Recorder, name: str, shard: Shard = UNSHARDED, clock=lambda: T0):
    return OutboxSender(
        engine, cluster, CHANNELS, shard=shard, send=recorder.send, post=recorder.post, now_ms=clock, name=name
    )


def test_two_senders_racing_for_one_outbox_send_each_message_once(db_engine):
    groups = [f"g{i}" for i in range(24)]
    fire(db_engine, "c", groups)
    recorder, start = Recorder(), threading.Barrier(2)

    def drain(s: OutboxSender) -> None:
        start.wait()
        s.drain_once()

    threads = [threading.Thread(target=drain, args=(sender(db_engine, "c", recorder, n),)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    rows = [r for r in read_outbox(db_engine) if r.channel == "hook"]
    assert len(rows) == len(groups) and all(r.sent_at is not None for r in rows)
    assert sorted(recorder.sent) == sorted(r.title for r in rows)  # each once: none twice, none left
    assert {r.claimed_by for r in rows} <= {"a", "b"} and {r.claimed_until for r in rows} == {None}


def test_a_sender_sends_its_own_clusters_messages_and_leaves_the_others_untouched(db_engine):
    fire(db_engine, "east", ["e1", "e2"])
    fire(db_engine, "west", ["w1"])
    recorder = Recorder()
    sender(db_engine, "west", recorder, "west-collector").drain_once()
    assert [t.split(": ")[-1].split(" @ ")[0] for t in recorder.sent] == ["w1"]
    east = [r for r in read_outbox(db_engine) if r.claimed_by != "west-collector"]
    assert len(east) == 4 and {(r.attempts, r.sent_at, r.last_error, r.claimed_by) for r in east} == {
        (0, None, None, None)
    }


def test_a_claim_whose_sender_died_lapses_and_its_lane_waits_until_then(db_engine):
    fire(db_engine, "c", ["g1"])
    (hook_row,) = [r for r in read_outbox(db_engine) if r.channel == "hook"]
    assert claim_outbox_row(db_engine, hook_row.id, "died", T0, int(CLAIM_S * 1000))
    assert not claim_outbox_row(db_engine, hook_row.id, "other", T0 + 1, int(CLAIM_S * 1000))
    clock = {"now": T0 + 1_000}
    recorder = Recorder()
    live = sender(db_engine, "c", recorder, "live", clock=lambda: clock["now"])
    assert live.drain_once() == CLAIM_S - 1  # seconds until the claim lapses
    assert recorder.sent == []
    clock["now"] = T0 + int(CLAIM_S * 1000)
    live.drain_once()
    assert len(recorder.sent) == 1
    (hook_row,) = [r for r in read_outbox(db_engine) if r.channel == "hook"]
    assert (hook_row.claimed_by, hook_row.attempts, hook_row.sent_at) == ("live", 1, clock["now"])


def test_each_shard_posts_again_only_the_firing_alerts_of_its_own_groups(db_engine):
    groups = [f"g{i}" for i in range(8)]
    shards = [Shard(1, 2), Shard(2, 2)]
    for shard in shards:
        fire(db_engine, "c", groups, shard)
    recorder = Recorder()
    senders = [sender(db_engine, "c", recorder, f"s{s.index}", shard=s) for s in shards]
    for s in senders:
        s.drain_once()  # the firing messages, once each
    recorder.posted.clear()
    for shard, s in zip(shards, senders, strict=True):
        s.repost_once()
        assert recorder.posted and all(shard.owns(g) for g in recorder.posted)
        recorder.posted.clear()

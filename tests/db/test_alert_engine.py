"""The health stage and the alert engine on a real SQLite store, fed scripted snapshots with a controlled clock.

The snapshots are synthetic (this tests lagmon's own state keeping, not Kafka):
one partition whose consumer commits steadily, then sticks while the log end
runs on, then catches up.
"""

from __future__ import annotations

import json
import logging

import sqlalchemy as sa
from factories import make_share_group, make_snapshot
from ports_check import misfits

from monitor.alerts.engine import AlertEngine
from monitor.alerts.rules import parse_rules
from monitor.collector import Collector
from monitor.health import HealthEngine, HealthStage
from monitor.models import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    Member,
    PartitionOffsets,
    SharePartition,
    Status,
    TopicPartition,
)
from monitor.ports import Sampler
from monitor.store import Store
from monitor.store.alerts import read_alerts, read_outbox, read_silences
from monitor.store.health import read_current_statuses, read_partition_verdicts, read_status_history

TP = TopicPartition("orders", 0)
RULES = parse_rules(
    """
channels: {hook: "json://127.0.0.1:9/hook"}
evaluation: {window: 5}
rules:
  - {name: stuck, kind: status, in: [STOP, STALL], for: 2s}
  - {name: slow, kind: lag_seconds, above: 30}
""",
    "rules.yaml",
)


class Script:
    """Clock and snapshots: the consumer reads 10 records/s until `stuck_at`, resumes at `resume_at`."""

    def __init__(self, stuck_at: int, resume_at: int):
        self.now = 1_000_000
        self.stuck_at, self.resume_at = stuck_at, resume_at

    def fetch_snapshot(self, now_ms):
        t = (self.now - 1_000_000) // 1000
        log_end = 1000 + 10 * t
        if t < self.stuck_at:
            committed = log_end - 5
        elif t < self.resume_at:
            committed = 1000 + 10 * self.stuck_at - 5
        else:
            committed = log_end
        group = GroupSnapshot(
            "g", GroupState.STABLE, members=(Member("m1", "c1", "h1", assignment=(TP,)),), committed={TP: committed}
        )
        return ClusterSnapshot("c", self.now, {"g": group}, {TP: PartitionOffsets(0, log_end)})


def collector(engine, script, health: HealthEngine | None = None) -> Collector:
    """What `collect` wires: the health stage, then the alert engine on its report."""
    stage = HealthStage(engine, health or HealthEngine("c", RULES.evaluator))
    alerts = AlertEngine(engine, "c", RULES, now_ms=lambda: script.now)
    return Collector(script, Store(engine), "c", now_ms=lambda: script.now, health=stage, observers=[alerts])


def run(c: Collector, script: Script, seconds: int):
    for _ in range(seconds):
        c.poll_once()
        script.now += 1000


def kinds(engine):
    return [(row.kind, row.channel) for row in read_outbox(engine)]


def test_stuck_consumer_fires_once_survives_a_restart_and_resolves_once(sqlite_engine):
    script = Script(stuck_at=10, resume_at=100)
    run(collector(sqlite_engine, script), script, 45)
    assert kinds(sqlite_engine) == [("firing", "hook"), ("firing", "hook")]  # stuck (STOP) and slow (lag seconds)
    assert {a.rule: a.state for a in read_alerts(sqlite_engine, "c")} == {"stuck": "firing", "slow": "firing"}
    # A crash long into the stall (nothing saved since the first cycle): the engine's saved state plus the
    # samples stored since give back the whole window, so the alerts neither resolve nor fire again.
    run(collector(sqlite_engine, script), script, 45)
    assert kinds(sqlite_engine) == [("firing", "hook"), ("firing", "hook")]
    assert {a.rule: a.state for a in read_alerts(sqlite_engine, "c")} == {"stuck": "firing", "slow": "firing"}
    run(collector(sqlite_engine, script), script, 15)  # resumed at t = 100 and caught up
    assert kinds(sqlite_engine) == [("firing", "hook"), ("firing", "hook"), ("resolved", "hook"), ("resolved", "hook")]
    assert read_alerts(sqlite_engine, "c") == []


def test_status_history_is_stored_only_when_it_changes(sqlite_engine):
    script = Script(stuck_at=10, resume_at=30)
    run(collector(sqlite_engine, script), script, 45)
    history = [(r.topic, r.status) for r in read_status_history(sqlite_engine, "c", "g")]
    assert history == [
        (None, Status.OK),
        ("orders", Status.OK),
        (None, Status.ERR),
        ("orders", Status.STOP),
        (None, Status.OK),
        ("orders", Status.OK),
    ]
    with sqlite_engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM partition_status")).scalar() == 3


def test_a_clean_restart_continues_from_the_saved_state_without_reading_old_samples(sqlite_engine):
    script = Script(stuck_at=10, resume_at=100)
    c = collector(sqlite_engine, script)
    run(c, script, 30)
    c.health.save()  # what `collect` does when it stops
    with sqlite_engine.begin() as conn:  # the samples are gone: only the saved state can know the window
        conn.execute(sa.text("DELETE FROM offset_samples"))
    fresh = HealthEngine("c", RULES.evaluator)
    run(collector(sqlite_engine, script, fresh), script, 1)
    (p,) = fresh.observe(script.fetch_snapshot(None)).groups["g"].partitions
    assert (p.status, p.complete) == (Status.STOP, 1.0)


def test_a_save_the_database_refuses_is_logged_and_the_next_one_is_restored(sqlite_engine, caplog):
    script = Script(stuck_at=10, resume_at=100)
    c = collector(sqlite_engine, script)
    run(c, script, 30)
    with sqlite_engine.begin() as conn:  # the database refuses the write, as a full disk would
        conn.execute(
            sa.text("CREATE TRIGGER refuse BEFORE UPDATE ON health_state BEGIN SELECT RAISE(ABORT, 'full'); END")
        )
    with caplog.at_level(logging.WARNING, logger="lagmon.health"):
        c.health.save()
    assert "health state not saved (will retry)" in caplog.text
    with sqlite_engine.begin() as conn:
        conn.execute(sa.text("DROP TRIGGER refuse"))
    c.health.save()
    with sqlite_engine.begin() as conn:  # only the saved state can know the window now
        conn.execute(sa.text("DELETE FROM offset_samples"))
    fresh = HealthEngine("c", RULES.evaluator)
    run(collector(sqlite_engine, script, fresh), script, 1)
    (p,) = fresh.observe(script.fetch_snapshot(None)).groups["g"].partitions
    assert (p.status, p.complete) == (Status.STOP, 1.0)


def test_a_saved_state_that_cannot_be_read_costs_a_warning_and_the_window_comes_from_the_samples(sqlite_engine, caplog):
    script = Script(stuck_at=10, resume_at=100)
    c = collector(sqlite_engine, script)
    run(c, script, 30)
    c.health.save()
    with sqlite_engine.begin() as conn:  # cut off mid-stream: its first records read, then the stream breaks
        body = conn.execute(sa.text("SELECT body FROM health_state")).scalar_one()
        conn.execute(sa.text("UPDATE health_state SET body = :b"), {"b": body[: len(body) // 2]})
    fresh = HealthEngine("c", RULES.evaluator)
    with caplog.at_level(logging.WARNING, logger="lagmon.health"):
        run(collector(sqlite_engine, script, fresh), script, 1)
    assert "saved health state unreadable" in caplog.text
    (p,) = fresh.observe(script.fetch_snapshot(None)).groups["g"].partitions
    assert (p.status, p.complete) == (Status.STOP, 1.0)


def test_the_status_history_keeps_the_engines_reason_and_since_when(sqlite_engine):
    script = Script(stuck_at=10, resume_at=100)
    run(collector(sqlite_engine, script), script, 30)
    verdict = read_partition_verdicts(sqlite_engine, "c", "g")[TP]
    # rule 4: five sampled commits one second apart (t = 6..10 s), none since
    assert (verdict.status, verdict.since, verdict.reason) == (
        Status.STOP,
        1_000_000 + 15_000,
        "no commit since 1970-01-01 00:16:50 UTC, longer than the window's 4s",
    )


# -- the command line over the same store -------------------------------------------------------


def test_cli_status_alerts_ack_and_silence(sqlite_engine, tmp_path, monkeypatch, capsys):
    from monitor.__main__ import main

    script = Script(stuck_at=10, resume_at=100)
    run(collector(sqlite_engine, script), script, 45)
    monkeypatch.setenv("LAGMON_DATABASE_URL", str(sqlite_engine.url))
    monkeypatch.delenv("LAGMON_ALERTS_FILE", raising=False)
    assert main(["status", "g", "--cluster", "c"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "group g on c: ERR (worst partition STOP), total lag 345, as of 1970-01-01 00:17:24 UTC"
    assert out[1].split() == ["TOPIC", "PARTITION", "STATUS", "LAG", "LAG-SECONDS", "SINCE", "(UTC)", "WHY"]
    # record 1095 was appended at t = 9.6 s, between the samples at 9 s and 10 s; the sample is at t = 44 s
    assert out[2].split()[:8] == ["orders", "0", "STOP", "345", "34.4s", "±0.6", "1970-01-01", "00:16:55"]
    assert main(["status", "g", "--cluster", "c", "--json"]) == 0
    (partition,) = json.loads(capsys.readouterr().out)["partitions"]
    assert (partition["status"], partition["lag"], partition["since"]) == ("STOP", 345, "1970-01-01 00:16:55")
    assert (partition["lag_seconds"], partition["lag_seconds_method"], partition["lag_seconds_error"]) == (
        "34.4s ±0.6",
        "interpolated",
        0.6,
    )
    assert partition["why"].startswith("no commit since 1970-01-01 00:16:50 UTC")

    assert main(["alerts", "--json", "--since", "1970-01-01"]) == 0
    listed = {a["rule"]: a for a in json.loads(capsys.readouterr().out)}
    assert {rule: a["state"] for rule, a in listed.items()} == {"stuck": "firing", "slow": "firing"}

    assert main(["alerts", "ack", str(listed["stuck"]["id"]), "--by", "ana"]) == 0
    assert main(["alerts", "silence", "--match", "rule=slow", "--for", "1h", "--comment", "known"]) == 0
    capsys.readouterr()
    assert main(["alerts", "--since", "1970-01-01"]) == 0
    table = capsys.readouterr().out
    assert "FIRING (acked)" in table and "stuck" in table
    assert read_silences(sqlite_engine, script.now)[0].matchers == {"rule": "slow"}
    assert main(["alerts", "silence", "--match", "colour=red"]) == 2
    assert "use FIELD=REGEX" in capsys.readouterr().err
    assert main(["alerts", "silence", "--match", "rule=slow", "--for", "8d"]) == 2  # LAGMON_SILENCE_MAX: 7d
    assert "--for: '8d' is more than 7d" in capsys.readouterr().err
    assert len(read_silences(sqlite_engine, script.now)) == 1


def test_cli_lag_shows_lag_in_seconds_with_its_error_beside_kafkas_columns(sqlite_engine, monkeypatch, capsys):
    from monitor.__main__ import main

    script = Script(stuck_at=10, resume_at=100)
    run(collector(sqlite_engine, script), script, 45)
    monkeypatch.setenv("LAGMON_DATABASE_URL", str(sqlite_engine.url))
    assert main(["lag", "g", "--cluster", "c"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    kafkas = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    assert header.split()[:7] == [*kafkas, "LAG-SECONDS"]
    assert row.split()[:8] == ["g", "orders", "0", "1095", "1440", "345", "34.4s", "±0.6"]
    assert main(["lag", "g", "--cluster", "c", "--json"]) == 0
    (partition,) = json.loads(capsys.readouterr().out)
    assert (partition["LAG-SECONDS"], partition["LAG-SECONDS-METHOD"], partition["LAG-SECONDS-ERROR"]) == (
        "34.4s ±0.6",
        "interpolated",
        0.6,
    )


def test_cli_alerts_test_says_whether_the_message_arrived(httpserver, monkeypatch, capsys):
    from monitor.__main__ import main

    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    url = f"json://{httpserver.host}:{httpserver.port}/hook"
    monkeypatch.setenv("LAGMON_CHANNELS", f"hook={url}")
    monkeypatch.delenv("LAGMON_ALERTS_FILE", raising=False)
    assert main(["alerts", "test", "--channel", "hook"]) == 0
    assert capsys.readouterr().out == "channel hook: the message was accepted\n"
    assert len(httpserver.log) == 1 and "lagmon test message" in httpserver.log[0][0].get_json()["title"]
    httpserver.stop()  # the server is the session's: start it again for the tests after this one
    try:
        assert main(["alerts", "test", "--channel", "hook"]) == 1
    finally:
        httpserver.start()
    out = capsys.readouterr().out
    assert out.startswith("channel hook: the message did NOT arrive") and str(httpserver.port) not in out
    assert main(["alerts", "test", "--channel", "pager"]) == 2
    assert "channel 'pager' is not defined (known: hook" in capsys.readouterr().err


def test_exact_commits_from_the_offsets_topic_show_a_stall_that_polling_cannot(sqlite_engine):
    """A consumer that re-commits the same offset: the tail sees every commit, polling sees no change."""
    script = Script(stuck_at=10, resume_at=100)
    health = HealthEngine("c", RULES.evaluator)
    c = collector(sqlite_engine, script, health)
    for _ in range(20):
        t = script.now
        committed = script.fetch_snapshot(None).groups["g"].committed[TP]
        health.record_commits(
            [("g", TP.topic, TP.partition, committed, t - 200)]
        )  # the tail delivers the commit before the sample
        c.poll_once()
        script.now += 1000
    assert read_partition_verdicts(sqlite_engine, "c", "g")[TP].status is Status.STALL
    assert [(r.topic, r.status) for r in read_status_history(sqlite_engine, "c", "g")][-1] == ("orders", Status.STALL)


def test_outbox_retries_with_backoff_and_never_lets_resolved_overtake_firing(sqlite_engine):
    from monitor.alerts.notify import OutboxSender

    script = Script(stuck_at=10, resume_at=60)
    run(collector(sqlite_engine, script), script, 45)  # stuck and slow fire
    run(collector(sqlite_engine, script), script, 25)  # resumed: both resolve
    assert [k for k, _ in kinds(sqlite_engine)] == ["firing", "firing", "resolved", "resolved"]
    accepting, sent = {"up": False}, []

    def send(url, title, body):
        if accepting["up"]:
            sent.append(title.split(" [")[0] + " " + title.split("] ")[1].split(":")[0])
        return accepting["up"]

    clock = {"now": script.now}
    sender = OutboxSender(
        sqlite_engine,
        "c",
        {"hook": "json://127.0.0.1:9/hook"},
        send=send,
        now_ms=lambda: clock["now"],
    )
    sender.drain_once()  # chat down: both firing rows fail once, the resolved rows wait behind them
    assert [(r.kind, r.attempts) for r in read_outbox(sqlite_engine)] == [
        ("firing", 1),
        ("firing", 1),
        ("resolved", 0),
        ("resolved", 0),
    ]
    accepting["up"] = True
    sender.drain_once()  # not due yet: backoff
    assert sent == []
    clock["now"] += 1000
    sender.drain_once()
    assert sent == ["🔴 FIRING stuck", "🔴 FIRING slow", "✅ RESOLVED stuck", "✅ RESOLVED slow"]
    sender.drain_once()
    assert len(sent) == 4 and all(r.sent_at is not None for r in read_outbox(sqlite_engine))


def test_a_failing_observer_never_stops_sampling(sqlite_engine, caplog):
    caplog.set_level(logging.DEBUG, logger="lagmon")
    from monitor.store import read_samples

    def broken(result, snapshot, report):
        raise RuntimeError("evaluation blew up")

    script = Script(stuck_at=10, resume_at=100)
    c = Collector(script, Store(sqlite_engine), "c", now_ms=lambda: script.now, observers=[broken])
    results = [c.poll_once() for _ in range(3)]
    assert [r.ok for r in results] == [True, True, True] and len(read_samples(sqlite_engine, "c")) == 3
    failed = [r for r in caplog.records if r.name == "lagmon.collector" and r.levelname == "ERROR"]
    assert [r.getMessage() for r in failed] == [
        "broken failed (sampling goes on): RuntimeError: evaluation blew up"
    ] * 3
    tracebacks = [r for r in caplog.records if r.name == "lagmon.collector" and r.levelname == "DEBUG"]
    assert len(tracebacks) == 3 and all(
        r.exc_info for r in tracebacks
    )  # the traceback is there at debug level (LAGMON_LOG_LEVEL=debug)


def test_retention_drops_old_episodes_and_superseded_statuses_but_keeps_the_present(sqlite_engine):
    from monitor.store.alerts import apply_alert_retention

    script = Script(stuck_at=10, resume_at=60)
    run(collector(sqlite_engine, script), script, 80)  # fired, resolved; statuses OK -> STOP -> OK
    before = read_current_statuses(sqlite_engine, "c")
    assert len(read_outbox(sqlite_engine)) == 4
    # the resolution messages were never sent (no sender here): their alerts must stay
    assert (
        apply_alert_retention(sqlite_engine, "c", script.now + 10**9, keep_ms=1000) == 4
    )  # superseded status rows (2 partition, 2 group)
    assert len(read_alerts(sqlite_engine, "c", resolved_since=0)) == 2 and len(read_outbox(sqlite_engine)) == 4
    with sqlite_engine.begin() as conn:
        conn.execute(sa.text("UPDATE alert_outbox SET sent_at = 1"))
    assert apply_alert_retention(sqlite_engine, "c", script.now + 10**9, keep_ms=1000) == 6  # 4 messages + 2 alerts
    assert (read_alerts(sqlite_engine, "c", resolved_since=0), read_outbox(sqlite_engine)) == ([], [])
    assert read_current_statuses(sqlite_engine, "c") == before


def test_the_script_is_a_sampler():
    assert misfits(Script(0, 0), Sampler) == []


class ShareScript:
    """Share group `jobs` on t:0: three records are archived (given up on) at t = 5 s; nothing moves after."""

    def __init__(self):
        self.now = 1_000_000

    def fetch_snapshot(self, now_ms):
        archived = 3 if self.now - 1_000_000 >= 5000 else 0
        share = {TopicPartition("t", 0): SharePartition(80, 3, archived=archived)}
        return make_snapshot(self.now, cluster="c", groups=[make_share_group("jobs", share=share)])


def test_records_given_up_on_alert_once_across_a_restart_and_resolve_when_the_window_passes(sqlite_engine):
    rules = parse_rules(
        "channels: {hook: 'json://127.0.0.1:9/hook'}\nrules:\n"
        "  - {name: share, kind: share_redelivery, within: 20s, for: 2s}\n",
        "rules.yaml",
    )
    script = ShareScript()

    def share_collector():
        stage = HealthStage(sqlite_engine, HealthEngine("c"))
        alerts = AlertEngine(sqlite_engine, "c", rules, now_ms=lambda: script.now)
        return Collector(script, Store(sqlite_engine), "c", now_ms=lambda: script.now, health=stage, observers=[alerts])

    c = share_collector()
    run(c, script, 12)
    assert [row.kind for row in read_outbox(sqlite_engine)] == ["firing"]
    c.health.save()  # a clean stop: the restarted engine knows the records were archived at 5 s, not now
    run(share_collector(), script, 12)  # to t = 24 s: the snapshot no longer changes, the window runs out alone
    assert [row.kind for row in read_outbox(sqlite_engine)] == ["firing"]
    run(share_collector(), script, 4)
    assert [row.kind for row in read_outbox(sqlite_engine)] == ["firing", "resolved"]

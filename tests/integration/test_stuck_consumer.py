"""A consumer stuck soon after it starts is STOP and alerted once; healthy groups beside it never are.

The case: a consumer that commits twice, then stays in its group without committing
while producers go on (a poison record at start-up) was judged OK forever ("only 2
of 10 commits in the window") while its lag grew. This runs the real product against
a real broker: `python -m monitor collect --interval 2s` as a child process with the
shipped rules file, two of its numbers made shorter through the file itself (the
`evaluation` block's `stuck_after`, 2m -> 30s, and `consumer-stopped`'s `for`, 1m -> 15s:
the same rules, judged by the same code, in a third of the time; that the shipped file
says 2m and 1m this test checks as it reads them, and that 2m makes such a consumer STOP
the unit tests do: tests/unit/test_health_rules.py), a real HTTP receiver
standing in for chat (Apprise `json://`), and real confluent_kafka clients, and observes
it only through its public surfaces: `monitor status|alerts|lag|groups --json` and the
webhook. It proves, side by side in one run:

- stuck: a member that committed twice and then only polls (its partition paused)
  while 10 records/s arrive is STOP within a minute past `stuck_after` after its last
  commit (with the shipped 2m: within 3 minutes); the `consumer-stopped` alert fires
  exactly once; once the consumer resumes and commits again, the alert resolves (one
  message) and the status is OK again;
- steady: a member committing every ~2 s under the same load is never STOP, STALL
  or REWIND and never alerted;
- idle: a member caught up on a topic nobody writes to stays OK and is never alerted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import yaml
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from harness import chat_hook, chat_messages, cli_json
from kafka_setup import create_topic, produce

from monitor.alerts.rules import DEFAULT_RULES_FILE, load_rules

RECORDS_PER_S = 10  # per busy topic
COMMIT_EVERY_S = 2.0  # the steady consumer's cadence, the collector's interval too
# The shipped rules with two numbers shorter: STOP after 30 s without a commit while records wait (2m
# shipped), and `consumer-stopped` fires once that held 15 s (1m shipped). 30 s is still 15 times the
# steady consumer's 2 s cadence, so a steady group judged STOP fails the test as it would with 2m.
STUCK_AFTER, STOPPED_FOR = "30s", "15s"
# The behaviour asked for, STOP within 3 minutes of the last commit with the shipped 2m: the bound
# plus the same minute of headroom (cycles of 2 s, the log-end history that dates the oldest waiting record).
STOP_WITHIN_S = 30 + 60
# Resolution has no `for`: the first cycle whose status is no longer STOP/STALL/REWIND resolves
# the alert and wakes the sender. The resumed consumer's first commit is seen within one 2 s
# cycle (at once by the offsets-topic tail): 30 s is ~15 cycles of headroom for a loaded machine.
SETTLE_S = 30
STOPPED = {"STOP", "STALL", "REWIND"}
FIRING, RESOLVED = "🔴 FIRING", "✅ RESOLVED"


# -- the workload -------------------------------------------------------------------------------


def start_thread(errors: list[str], target, *args) -> threading.Thread:
    """A daemon thread whose exception is kept in `errors` (a dead workload must fail the test)."""

    def run():
        try:
            target(*args)
        except Exception as e:
            errors.append(f"{target.__name__}: {e!r}")

    thread = threading.Thread(target=run, name=target.__name__, daemon=True)
    thread.start()
    return thread


def produce_steadily(bootstrap: str, topics: list[str], stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    next_at = time.monotonic()
    while not stop.is_set():
        for topic in topics:
            producer.produce(topic, value=b"x" * 20)
        producer.poll(0)
        next_at += 1 / RECORDS_PER_S
        stop.wait(max(0.0, next_at - time.monotonic()))
    producer.flush(10)


def new_consumer(bootstrap: str, group: str, topic: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    return consumer


def consume_to_end(consumer: Consumer, timeout_s: float = 60) -> None:
    """Poll (the first call joins the group) until every record written before the first one arrived is consumed."""
    deadline, end = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error() is not None:
            continue
        if end is None:
            end = consumer.get_watermark_offsets(KTP(msg.topic(), msg.partition()), timeout=10, cached=False)[1]
        if msg.offset() + 1 >= end:
            return
    raise AssertionError(f"the consumer did not reach offset {end} within {timeout_s:g}s")


def commit_position(consumer: Consumer) -> int:
    (committed,) = consumer.commit(asynchronous=False)
    return committed.offset


def keep_committing(consumer: Consumer, stop: threading.Event) -> None:
    """A healthy consumer: processes whatever arrives, commits its position every COMMIT_EVERY_S."""
    next_at, consumed = time.monotonic(), False
    while not stop.is_set():
        msg = consumer.poll(0.2)
        consumed = consumed or (msg is not None and msg.error() is None)
        if consumed and time.monotonic() >= next_at:
            consumer.commit(asynchronous=False)
            next_at, consumed = next_at + COMMIT_EVERY_S, False
    consumer.close()


def stuck_then_resume(consumer: Consumer, resume: threading.Event, stop: threading.Event) -> None:
    """Stuck on a poison record: the partition paused, poll() still called so it stays a member; then healthy."""
    consumer.pause(consumer.assignment())
    while not (resume.is_set() or stop.is_set()):
        consumer.poll(0.5)  # well inside max.poll.interval.ms; nothing is processed or committed
    consumer.resume(consumer.assignment())
    keep_committing(consumer, stop)


# -- the product, seen from outside ---------------------------------------------------------------


def start_collector(env: dict[str, str], log_path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "monitor", "collect", "--interval", f"{COMMIT_EVERY_S:g}s"],
        env=env,
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )


def stop_collector(collector: subprocess.Popen) -> None:
    collector.send_signal(signal.SIGTERM)
    try:
        collector.wait(timeout=30)
    except subprocess.TimeoutExpired:
        collector.kill()
        collector.wait(timeout=30)


def committed_offset(env: dict[str, str], group: str) -> int | None:
    """The group's committed offset as `monitor lag` shows it (None until the collector stored one)."""
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "lag", group, "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    rows = json.loads(done.stdout) if done.returncode == 0 else []
    return rows[0]["CURRENT-OFFSET"] if rows else None


def wait_stored(env: dict[str, str], group: str, offset: int | None = None) -> None:
    """Until the collector stored a committed offset of `group` (this one, if given)."""
    deadline = time.monotonic() + 60
    while (seen := committed_offset(env, group)) is None or offset not in (None, seen):
        assert time.monotonic() < deadline, f"the collector never stored offset {offset} of {group} (saw {seen})"
        time.sleep(0.5)


def commit_and_see(consumer: Consumer, env: dict[str, str], group: str) -> tuple[int, float]:
    """Consume, commit, wait until the collector stored that offset (a point of its own): (offset, committed at)."""
    consume_to_end(consumer)
    offset, at = commit_position(consumer), time.monotonic()
    wait_stored(env, group, offset)
    return offset, at


def shorter_rules(path) -> tuple[str, float]:
    """The shipped rules file with STUCK_AFTER and STOPPED_FOR in place of its 2m and 1m, written to `path`:
    (its path, how long STOP must hold before `consumer-stopped` fires, as the product reads it)."""
    rules = yaml.safe_load(DEFAULT_RULES_FILE.read_text())
    stopped = rules["rules"][0]
    assert (rules["evaluation"]["stuck_after"], stopped["name"], stopped["for"]) == ("2m", "consumer-stopped", "1m")
    shipped = load_rules(None)
    assert (shipped.evaluator.stuck_after_s, shipped.rule("consumer-stopped").for_s) == (120, 60)
    rules["evaluation"]["stuck_after"] = STUCK_AFTER
    stopped["for"] = STOPPED_FOR
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    loaded = load_rules(path)
    assert loaded.evaluator.stuck_after_s == 30 and len(loaded.rules) == len(shipped.rules)
    return str(path), loaded.rule("consumer-stopped").for_s


def receiver(httpserver) -> str:
    return f"hook={chat_hook(httpserver)}"


def parse_title(title: str) -> tuple[str, str, str]:
    """'🔴 FIRING [critical] consumer-stopped: G @ default' (monitor/alerts/message.py) -> (kind, rule, group)."""
    kind, _, rest = title.partition(" [")
    rule, _, where = rest.partition("] ")[2].partition(": ")
    return kind, rule, where.split(" @ ")[0]


def sent(httpserver) -> list[tuple[str, str, str]]:
    """(kind, rule, group) of every message that reached chat, in order."""
    return [parse_title(m["title"]) for m in chat_messages(httpserver)]


@dataclass
class Round:
    """One look at the product: `status --json` of the stuck group (and maybe another), or `alerts --json` too."""

    t: float  # seconds since the stuck consumer's last commit
    status: dict[str, dict]
    alerts: list[dict] | None

    def partition(self, group: str) -> dict:
        (p,) = self.status[group]["partitions"]
        return p

    def alerted(self, *groups: str) -> list[tuple[str, str, str]]:
        return [(a["rule"], a["group_id"], a["state"]) for a in self.alerts or [] if a["group_id"] in groups]


class Observer:
    """Looks every few seconds: the stuck group's status, and in turn one of the healthy groups' status or the
    alerts (a CLI call costs a second or two of CPU on a 2-core machine); checks what it sees of the others."""

    def __init__(self, env: dict[str, str], groups: tuple[str, str, str], since: float, errors: list[str]):
        self.env, self.since, self.errors = env, since, errors
        self.stuck, self.steady, self.idle = groups
        self.rounds: list[Round] = []

    def look(self, other: str | None = None) -> Round:
        """`other`: a healthy group or "alerts"; by default each in turn."""
        started = time.monotonic()
        other = other or (self.steady, self.idle, "alerts")[len(self.rounds) % 3]
        looked = (self.stuck,) if other == "alerts" else (self.stuck, other)
        with ThreadPoolExecutor(2) as pool:
            status = [pool.submit(cli_json, "status", g, env=self.env) for g in looked]
            alerts = pool.submit(cli_json, "alerts", env=self.env) if other == "alerts" else None
            r = Round(
                started - self.since,
                {g: f.result() for g, f in zip(looked, status, strict=True)},
                alerts.result() if alerts else None,
            )
        self.rounds.append(r)
        p = r.partition(self.stuck)
        seen = (
            f"alerts {r.alerted(self.stuck, self.steady, self.idle)}"
            if alerts
            else f"{other.split('-')[0]} {r.partition(other)['status']} ({r.partition(other)['why']})"
        )
        print(f"{r.t:6.1f}s stuck {p['status']} lag {p['lag']} ({p['why']}) | {seen}", flush=True)
        assert self.errors == [], f"a workload thread died: {self.errors}"
        self.check_healthy_groups(r)
        time.sleep(max(0.0, COMMIT_EVERY_S - (time.monotonic() - started)))  # pacing: the collector's interval
        return r

    def check_healthy_groups(self, r: Round) -> None:
        # `status` shows the collector's own verdicts (with the tail's exact commits): a steady consumer
        # is OK at every look, not WARN now and then.
        if self.steady in r.status:
            steady = r.partition(self.steady)
            assert (steady["status"], r.status[self.steady]["status"]) == ("OK", "OK"), (
                f"{r.t:.0f}s: the steady group was judged {steady['status']} ({steady['why']})"
            )
        if self.idle in r.status:
            idle = r.partition(self.idle)
            assert (idle["status"], r.status[self.idle]["status"]) == ("OK", "OK"), (
                f"{r.t:.0f}s: the idle, caught-up group was judged {idle['status']} ({idle['why']})"
            )
        assert r.alerted(self.steady, self.idle) == [], f"{r.t:.0f}s: a healthy group has alerts"

    def until(self, done, deadline_t: float, what: str) -> Round:
        """Look until `done(round)`; past `deadline_t` (seconds since the last commit) fail with what was seen."""
        while (r := self.look()).t <= deadline_t:
            if done(r):
                return r
        p = r.partition(self.stuck)
        seen = sorted({x.partition(self.stuck)["status"] for x in self.rounds})
        alerts = next((x.alerted(self.stuck) for x in reversed(self.rounds) if x.alerts is not None), "not seen")
        raise AssertionError(
            f"{what}: not by {deadline_t:.0f}s after the stuck consumer's last commit. "
            f"Last `monitor status {self.stuck}`: {p['status']}, lag {p['lag']}, why {p['why']!r}; "
            f"statuses seen since the last commit: {seen}; its alerts: {alerts}"
        )

    def summary(self) -> str:
        steady = [r.partition(self.steady)["status"] for r in self.rounds if self.steady in r.status]
        idle = [r.partition(self.idle)["status"] for r in self.rounds if self.idle in r.status]
        return f"{len(self.rounds)} looks; steady group: OK all {len(steady)}; idle group: OK all {len(idle)}"


def membership(env: dict[str, str], group: str) -> tuple[str, int]:
    (row,) = [g for g in cli_json("groups", env=env) if g["GROUP"] == group]
    return row["STATE"], row["MEMBERS"]


# -- the test -----------------------------------------------------------------------------------


def test_a_consumer_stuck_after_two_commits_is_stop_alerted_once_and_resolved(kafka, unique, tmp_path, httpserver):
    groups = stuck, steady, idle = tuple(f"{name}-{unique}" for name in ("stuck", "steady", "idle"))
    for topic in groups:  # one topic per group, named after it
        create_topic(kafka.bootstrap, topic, 1)
    produce(kafka.bootstrap, idle, {0: 5})  # then nobody writes to it again
    rules, for_s = shorter_rules(tmp_path / "rules.yaml")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LAGMON_")},  # default settings
        "LAGMON_ALERTS_FILE": rules,  # the shipped rules, two numbers shorter
        "LAGMON_BOOTSTRAP_SERVERS": kafka.bootstrap,
        "LAGMON_DATABASE_URL": f"sqlite:///{tmp_path / 'stuck.db'}",
        "LAGMON_GROUP_ALLOW": f"^(stuck|steady|idle)-{unique}$",
        "LAGMON_CHANNELS": receiver(httpserver),
    }
    stop, resume, errors = threading.Event(), threading.Event(), []
    collector = start_collector(env, tmp_path / "collector.log")
    threads = [start_thread(errors, produce_steadily, kafka.bootstrap, [stuck, steady], stop)]
    consumer = new_consumer(kafka.bootstrap, stuck, stuck)
    try:
        for group in (steady, idle):
            threads.append(start_thread(errors, keep_committing, new_consumer(kafka.bootstrap, group, group), stop))
        first, _ = commit_and_see(consumer, env, stuck)
        second, last_commit = commit_and_see(consumer, env, stuck)  # seconds later: two commits, increasing
        assert first < second
        threads.append(start_thread(errors, stuck_then_resume, consumer, resume, stop))
        for group in (steady, idle):
            wait_stored(env, group)
        watch = Observer(env, groups, last_commit, errors)

        # 1. STOP within 3 minutes of the last commit, while it is still a member of its group.
        try:
            stopped = watch.until(
                lambda r: r.partition(stuck)["status"] == "STOP",
                STOP_WITHIN_S,
                "the stuck consumer's partition to be STOP",
            )
        except AssertionError as e:
            raise AssertionError(f"{e}; its group meanwhile (state, members): {membership(env, stuck)}") from None
        print(
            f"STOP seen by the look started {stopped.t:.0f}s after the last commit: {stopped.partition(stuck)['why']}"
        )
        assert membership(env, stuck) == ("Stable", 1), "the stuck consumer must still be a member of its group"

        # 2. Once STOP has held for the rule's `for`, the alert fires: one message.
        watch.until(
            lambda r: (FIRING, "consumer-stopped", stuck) in sent(httpserver),
            STOP_WITHIN_S + for_s + SETTLE_S,
            "the consumer-stopped firing message",
        )
        print(f"consumer-stopped firing message seen {time.monotonic() - last_commit:.0f}s after the last commit")
        firing = [m["message"] for m in chat_messages(httpserver) if parse_title(m["title"])[0] == FIRING]
        assert len(firing) == 1, [m["title"] for m in chat_messages(httpserver)]
        (body,) = firing
        assert "status STOP" in body and "· 1 members" in body, body

        # 3. The consumer resumes: one resolved message, and status OK again.
        resume.set()
        resumed_t = time.monotonic() - last_commit
        watch.until(
            lambda r: (
                (RESOLVED, "consumer-stopped", stuck) in sent(httpserver) and r.partition(stuck)["status"] == "OK"
            ),
            resumed_t + SETTLE_S,
            "the resolved message and status OK after the consumer resumed",
        )
        print(f"resolved and OK seen {time.monotonic() - last_commit - resumed_t:.0f}s after the consumer resumed")
        assert sent(httpserver) == [(FIRING, "consumer-stopped", stuck), (RESOLVED, "consumer-stopped", stuck)]
        assert watch.look("alerts").alerted(*groups) == [("consumer-stopped", stuck, "resolved")]
        print(watch.summary())
    finally:
        stop.set()
        resume.set()
        for thread in threads:
            thread.join(timeout=30)
        if not any(t.name == "stuck_then_resume" for t in threads):
            consumer.close()
        stop_collector(collector)
        log = (tmp_path / "collector.log").read_text().splitlines(True)
        print("collector log, last lines:\n" + "".join(log[-15:]))
    assert errors == []

"""The workload scenarios against a real broker: each does to its group what it promises.

Every scenario runs as `python -m monitor sim ...` in a subprocess with a short
--duration and a truth file; the tests compare Kafka's own view (admin API) and the
truth file with what the scenario is meant to do, and check no process is left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, ConsumerGroupType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka_cli import describe_share_group, describe_streams_group

from monitor.sim import assignment_rounds, count_rebalances, current_assignment, read_truth, survivors
from monitor.sim.scenarios import many_groups_offset
from monitor.sim.truth import (
    committed_rate,
    members_at,
    phase_ts,
    produced_rate,
    produced_total,
    share_ack_totals,
)

PROJECT_DIR = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- helpers


class SimRun:
    """A running `python -m monitor sim` with its truth file and the names it uses."""

    def __init__(self, scenario: str, suffix: str, truth: Path, proc: subprocess.Popen, stderr: Path):
        self.scenario, self.truth_path, self.proc, self.stderr = scenario, truth, proc, stderr
        self.group = f"sim-{scenario}-{suffix}-group"
        self.topic = f"sim-{scenario}-{suffix}-topic"
        self.client = lambda i: f"sim-{scenario}-{suffix}-m{i}"
        self.pids: set[int] = set()

    def truth(self) -> list[dict]:
        return read_truth(self.truth_path) if self.truth_path.exists() else []

    def wait_for(self, event: str, timeout: float = 30.0, after: int = 0, **fields) -> dict:
        """The first truth event of this kind (and fields) later than `after`, waiting for it to be written."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.remember_children()
            for e in self.truth():
                if e["event"] == event and e["ts"] > after and all(e.get(k) == v for k, v in fields.items()):
                    return e
            assert self.proc.poll() is None, f"sim exited early: {self.stderr.read_text()}"
            time.sleep(0.2)
        raise AssertionError(f"no {event} {fields} in the truth file after {timeout}s")

    def remember_children(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            self.pids |= {c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)}

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for the sim to end on its own; its exit code."""
        self.remember_children()
        return self.proc.wait(timeout)


@contextmanager
def sim(kafka, unique, tmp_path, scenario: str, *args: str, duration: float | None = None):
    """Run a scenario; on the way out make sure the sim and all its children are gone."""
    truth, stderr = tmp_path / f"{scenario}.jsonl", tmp_path / f"{scenario}.stderr"
    cmd = [
        sys.executable,
        "-m",
        "monitor",
        "sim",
        scenario,
        "--bootstrap",
        kafka.bootstrap,
        "--suffix",
        unique,
        "--truth",
        str(truth),
        *args,
    ]
    if duration is not None:
        cmd += ["--duration", str(duration)]
    with open(stderr, "w") as err:
        # TMPDIR: a Streams instance's state dir, left behind when a test kills the sim, stays in tmp_path
        env = {**os.environ, "TMPDIR": str(tmp_path)}
        proc = subprocess.Popen(cmd, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=err, env=env)
    run = SimRun(scenario, unique, truth, proc, stderr)
    try:
        yield run
    finally:
        if proc.poll() is None:
            run.remember_children()
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        assert_gone(run.pids)


def assert_gone(pids: set[int], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    alive = set(pids)
    while alive and time.monotonic() < deadline:
        alive = {p for p in alive if _alive(p)}
        time.sleep(0.1)
    assert not alive, f"processes left behind: {alive}"


def _name(pid: int) -> str | None:
    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).name()
    return None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(scope="module")
def admin(kafka):
    return AdminClient({"bootstrap.servers": kafka.bootstrap})


def committed(admin, group: str, topic: str, partitions: int) -> dict[int, int]:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    result = admin.list_consumer_group_offsets([request])[group].result(timeout=10)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def log_end(admin, topic: str, partitions: int) -> dict[int, int]:
    futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)})
    return {tp.partition: f.result(timeout=10).offset for tp, f in futures.items()}


def lag(admin, group: str, topic: str, partitions: int) -> int:
    """Total lag as Kafka reports it: committed first, then log end (so it cannot go negative)."""
    offsets = committed(admin, group, topic, partitions)
    ends = log_end(admin, topic, partitions)
    return sum(max(0, ends[p] - max(offsets[p], 0)) for p in range(partitions))


def describe(admin, group: str):
    return admin.describe_consumer_groups([group])[group].result(timeout=10)


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.3):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


# ---------------------------------------------------------------- the cluster itself


def test_the_cluster_creates_topics_and_round_trips_records(kafka, admin, unique):
    topic = f"sim-smoke-{unique}"
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(10):
        producer.produce(topic, b"r%d" % i, partition=i % 2)
    assert producer.flush(10) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": f"sim-smoke-{unique}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    values = set()
    deadline = time.monotonic() + 20
    while len(values) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            values.add(msg.value())
    consumer.close()
    assert values == {b"r%d" % i for i in range(10)}


# ---------------------------------------------------------------- scenarios


def test_steady_keeps_lag_near_zero(kafka, admin, unique, tmp_path):
    with sim(kafka, unique, tmp_path, "steady", duration=12) as run:
        run.wait_for("phase", name="settled")
        time.sleep(2)
        lags = []
        for _ in range(3):
            lags.append(lag(admin, run.group, run.topic, 3))
            time.sleep(1)
        assert run.finish() == 0
    assert max(lags) <= 40, lags  # 20 records/s, commits every second
    truth = run.truth()
    assert 17 <= produced_rate(truth, run.topic) <= 23
    assert not survivors(truth, run.group) ^ {run.client(0), run.client(1)}


def test_lagging_grows_lag_at_the_rate_difference(kafka, admin, unique, tmp_path):
    with sim(kafka, unique, tmp_path, "lagging", duration=12) as run:
        run.wait_for("phase", name="settled")
        first = lag(admin, run.group, run.topic, 3)
        time.sleep(4)
        second = lag(admin, run.group, run.topic, 3)
        assert run.finish() == 0
    assert second - first >= 300, (first, second)  # ~150 records/s for 4 s = 600
    truth = run.truth()
    assert 180 <= produced_rate(truth, run.topic) <= 220
    assert 40 <= committed_rate(truth, run.group) <= 60


def test_stalled_member_stays_in_the_group_while_its_commits_stop(kafka, admin, unique, tmp_path):
    with sim(kafka, unique, tmp_path, "stalled", "--stall-after", "2", "--recover-after", "6", duration=14) as run:
        stall = run.wait_for("stall")
        time.sleep(0.5)
        before, ends_before = committed(admin, run.group, run.topic, 3), log_end(admin, run.topic, 3)
        time.sleep(2.5)
        after, ends_after = committed(admin, run.group, run.topic, 3), log_end(admin, run.topic, 3)
        group = describe(admin, run.group)
        resume = run.wait_for("resume")
        assert run.finish() == 0
    assert before == after and all(o > 0 for o in after.values())
    assert sum(ends_after.values()) > sum(ends_before.values()) + 20  # the producer went on
    assert [m.client_id for m in group.members] == [run.client(0)]
    assert group.type == ConsumerGroupType.CLASSIC
    # at least the 6 s asked for; late is the machine's pace, not the sim's: in one CI run the resume came 8.1 s
    # after the stall, as the producer (another process) wrote its once-a-second line 3.6 s after the one before
    assert (resume["ts"] - stall["ts"]) / 1000 >= 5.5
    truth = run.truth()
    assert not [e for e in truth if e["event"] == "commit" and stall["ts"] < e["ts"] < resume["ts"]]
    resumed = [e for e in truth if e["event"] == "commit" and e["ts"] > resume["ts"]]
    assert max(e["offset"] for e in resumed) > max(after.values())


def test_crash_rebalances_once_after_the_session_timeout(kafka, admin, unique, tmp_path):
    with sim(kafka, unique, tmp_path, "crash", duration=20) as run:
        crash = run.wait_for("crash", timeout=40)
        victim = crash["client_id"]
        owned_before = current_assignment(run.truth(), run.group, crash["ts"])
        run.wait_for("assigned", timeout=20, after=crash["ts"])
        group = wait_until(lambda: (g := describe(admin, run.group)) and len(g.members) == 2 and g, timeout=10)
        assert run.finish() == 0
    truth = run.truth()
    alive = survivors(truth, run.group)
    assert victim == run.client(0) and alive == {run.client(1), run.client(2)}
    assert {m.client_id for m in group.members} == alive
    rounds = assignment_rounds(truth, run.group, alive)
    after_crash = [r for r in rounds if min(e["ts"] for e in r) > crash["ts"]]
    assert len(after_crash) == 1, after_crash
    assert count_rebalances(truth, run.group) == len(rounds)
    delay_s = (min(e["ts"] for e in after_crash[0]) - crash["ts"]) / 1000
    assert 4.0 <= delay_s <= 12.0, delay_s  # session.timeout.ms=6000, not immediately
    owned_after = current_assignment(truth, run.group, max(e["ts"] for e in after_crash[0]) + 1)
    assert owned_before[victim] and owned_before[victim] <= owned_after[run.client(1)] | owned_after[run.client(2)]
    assert len(owned_after[run.client(1)] | owned_after[run.client(2)]) == 6


def test_static_members_restart_without_a_rebalance(kafka, unique, tmp_path):
    with sim(kafka, unique, tmp_path, "static", duration=16) as run:
        settled = run.wait_for("phase", name="settled")
        assert run.finish() == 0
    truth = run.truth()
    stop = phase_ts(truth, "stop")
    restarter = run.client(0)
    leaves = [e for e in truth if e["event"] == "leave" and e["client_id"] == restarter and e["ts"] < stop]
    rejoins = [
        e
        for e in truth
        if e["event"] == "assigned" and e["client_id"] == restarter and leaves and e["ts"] > leaves[0]["ts"]
    ]
    assert leaves and not leaves[0]["left_group"] and rejoins
    assert survivors(truth, run.group) == {run.client(1), run.client(2)}
    late = [
        e
        for e in truth
        if e["event"] in ("assigned", "revoked", "lost")
        and e["client_id"] != restarter
        and settled["ts"] < e["ts"] < stop
    ]
    assert late == []  # the other members never noticed
    before = [
        e for e in truth if e["event"] == "assigned" and e["client_id"] == restarter and e["ts"] < leaves[0]["ts"]
    ][-1]
    assert (rejoins[0]["partitions"], rejoins[0]["generation"]) == (before["partitions"], before["generation"])
    assert count_rebalances(truth, run.group) == len(assignment_rounds(truth, run.group, survivors(truth, run.group)))


@pytest.mark.parametrize("scenario, protocol", [("churn", "eager"), ("cooperative", "cooperative")])
def test_churn_causes_a_rebalance_storm(kafka, unique, tmp_path, scenario, protocol):
    """Members churn until the sim is stopped: once m1 and m2 have each left and the member that stays has
    seen three rebalances after settling, however long this machine's rebalances take."""

    def storm(truth: list[dict]) -> list[list[dict]]:
        rounds = assignment_rounds(truth, run.group, {run.client(0)})
        return [r for r in rounds if min(e["ts"] for e in r) > settled]

    with sim(kafka, unique, tmp_path, scenario) as run:  # no --duration: runs until stopped
        settled = run.wait_for("phase", name="settled", timeout=60)["ts"]
        deadline = time.monotonic() + 90
        while not (survivors(truth := run.truth(), run.group) == {run.client(0)} and len(storm(truth)) >= 3):
            died = [e for e in truth if e["event"] == "died"]
            assert not died and time.monotonic() < deadline and run.proc.poll() is None, (
                died,
                run.stderr.read_text()[-2000:],
                {c: [e["event"] for e in truth if e.get("client_id") == c][-6:] for c in map(run.client, range(3))},
            )
            time.sleep(0.2)
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish(timeout=30) == 0
    truth = run.truth()
    assert survivors(truth, run.group) == {run.client(0)}
    rounds, stormed = assignment_rounds(truth, run.group, {run.client(0)}), storm(truth)
    assert len(stormed) >= 3 and count_rebalances(truth, run.group) == len(rounds)
    assert {e["protocol"] for r in rounds for e in r} == {protocol}
    revokes = [
        e
        for e in truth
        if e["event"] == "revoked" and e["client_id"] == run.client(0) and settled < e["ts"] < phase_ts(truth, "stop")
    ]
    if protocol == "eager":  # every rebalance takes everything back first
        assert len(revokes) == len(stormed)
    else:  # cooperative: when a member leaves, the steady one only gains partitions
        assert len(revokes) < len(stormed)


def test_kip848_group_uses_the_consumer_protocol(kafka, admin, unique, tmp_path):
    with sim(kafka, unique, tmp_path, "kip848", duration=14) as run:
        run.wait_for("phase", name="settled")
        group = describe(admin, run.group)
        run.wait_for("leave", client_id=run.client(1))
        assert run.finish() == 0
    assert group.type == ConsumerGroupType.CONSUMER
    assert {m.client_id for m in group.members} == {run.client(i) for i in range(3)}
    truth = run.truth()
    assert {e["protocol"] for e in truth if e["event"] == "join"} == {"consumer"}
    assert count_rebalances(truth, run.group) >= 2


def test_many_groups_commits_every_partition_of_every_group(kafka, admin, unique, tmp_path):
    groups, partitions = 20, 4
    with sim(kafka, unique, tmp_path, "many-groups", "--groups", str(groups), "--partitions", str(partitions)) as run:
        assert run.finish() == 0
    names = [f"sim-many-groups-{unique}-g{i:04d}" for i in range(groups)]
    listed = admin.list_consumer_groups().result(timeout=10).valid
    assert set(names) <= {g.group_id for g in listed}
    for i, group in enumerate(names):
        assert committed(admin, group, run.topic, partitions) == {
            p: many_groups_offset(i, p) for p in range(partitions)
        }
    assert len([e for e in run.truth() if e["event"] == "commit"]) == groups * partitions


# ---------------------------------------------------------------- Kafka 4 group types, against Kafka's own tools


def test_share_group_acks_by_type_and_piles_up_behind_a_stalled_member(kafka, unique, tmp_path):
    """kafka-share-groups shows the members the truth says are in, and the lag on the stalled
    member's partition; the truth's acknowledgements account for the records produced."""
    with sim(kafka, unique, tmp_path, "share", duration=26) as run:
        stall = run.wait_for("stall", timeout=40)
        stalled = {p for _, p in stall["partitions"]}

        def piled_up():  # Kafka's view once the stalled member's partition holds 20 records (~2 s at the sim's rate)
            sampled = int(time.time() * 1000)
            with ThreadPoolExecutor(2) as pool:  # one JVM each: run the two views side by side
                members, offsets = pool.map(
                    lambda view: describe_share_group(kafka.bootstrap, run.group, view), ["--members", "--offsets"]
                )
            lags = {int(r["PARTITION"]): int(r["LAG"]) for r in offsets}
            return min(lags.get(p, 0) for p in stalled) >= 20 and (sampled, members, lags)

        time.sleep(2)
        seen = wait_until(piled_up, timeout=4, interval=0.5)  # the stall lasts 8 s
        run.wait_for("resume", timeout=20)
        assert run.finish() == 0
        state = describe_share_group(kafka.bootstrap, run.group, "--state")
    truth = run.truth()
    everyone = {run.client(i) for i in range(3)}
    assert seen, "the stalled member's partition never held 20 records while it stalled"
    sampled, members, lags = seen
    assert {r["CLIENT-ID"] for r in members} == members_at(truth, run.group, sampled) == everyone
    assert {p for r in members for p in r["ASSIGNMENT"].split(",")} == {f"{run.topic}:{p}" for p in range(3)}
    others = set(lags) - stalled
    assert min(lags[p] for p in stalled) >= 20 and min(lags[p] for p in stalled) > max(lags[p] for p in others), lags
    assert [(r["STATE"], r["#MEMBERS"]) for r in state] == [("Empty", "0")]  # everyone left on the way out

    acks = share_ack_totals(truth, run.group)
    assert acks["accept"] > 0 and acks["release"] > 0 and acks["reject"] > 0 and acks["redelivered"] > 0, acks
    produced = produced_total(truth, run.topic)
    assert 0.8 * produced <= acks["accept"] + acks["reject"] <= produced, (acks, produced)  # each record once
    assert 0.02 <= acks["reject"] / produced <= 0.06  # one offset in 25
    m2 = [e["event"] for e in truth if e.get("client_id") == run.client(2) and e["event"] in ("join", "leave")]
    assert m2 == ["join", "leave", "join", "leave"]  # left and came back during the run
    assert not {e["client_id"] for e in truth if e["event"] == "crash"}


def _streams_clients(rows: list[dict]) -> set[str]:
    """Instance client ids from kafka-streams-groups' CLIENT-ID (<client.id>-StreamThread-N-consumer)."""
    return {r["CLIENT-ID"].rsplit("-StreamThread-", 1)[0] for r in rows}


def streams_views_at_once(bootstrap: str, group: str, *views: str) -> list[list[dict]]:
    """kafka-streams-groups' views of one group, each its own tool run, all started together."""
    with ThreadPoolExecutor(len(views)) as pool:
        return list(pool.map(lambda view: describe_streams_group(bootstrap, group, view), views))


def _stable(state_rows: list[dict]) -> list[dict]:
    """The rows of `--state` when they say Stable, else none."""
    return state_rows if [r["STATE"] for r in state_rows] == ["Stable"] else []


def test_streams_group_follows_its_instances_joining_leaving_and_crashing(kafka, unique, tmp_path):
    """kafka-streams-groups shows the group Stable with the instances the truth says are running:
    three at first; after a clean stop, a SIGKILL (gone after the session timeout) and a late
    joiner, the first and the late one."""
    seen_all = tmp_path / "seen"
    with sim(kafka, unique, tmp_path, "streams", "--hold-until", str(seen_all), duration=150) as run:
        settled = run.wait_for("phase", name="settled", timeout=60)
        # settled = the instances hold all the group's tasks; the coordinator says Stable at its next heartbeats.
        # The sim holds its stop, crash and join until the test has seen that (--hold-until): a tool run took
        # ~20 s under a loaded CI run, past the 10 s the sim used to wait. The reads run at once: one tool start.
        seen: list[tuple] = []  # (s after settled, state, members) of each view, for a failure to say
        first_view = None
        while first_view is None:
            members, state = streams_views_at_once(kafka.bootstrap, run.group, "--members", "--state")
            done = time.time() * 1000
            seen.append((round((done - settled["ts"]) / 1000, 1), [r["STATE"] for r in state], len(members)))
            assert done - settled["ts"] < 90_000, f"no Stable view of all three in 90 s: {seen}"
            if members and _stable(state):
                first_view = members, state
        seen_all.touch()
        first, first_state = first_view
        crash = run.wait_for("crash", timeout=20)
        run.wait_for("join", client_id=run.client(3), timeout=20)
        offsets = describe_streams_group(kafka.bootstrap, run.group, "--offsets")
        # the member set changes first; the group is Reconciling until the survivors hold their new tasks:
        # the settled view is one whose members all have active tasks and whose state is Stable.
        last = wait_until(
            lambda: (
                (views := streams_views_at_once(kafka.bootstrap, run.group, "--members", "--state"))
                and _streams_clients(rows := views[0]) == {run.client(0), run.client(3)}
                and all(r["ASSIGNMENTS"].startswith("ACTIVE:") for r in rows)
                and _stable(views[1])
                and rows
            ),
            timeout=60,  # a bound, not a pace: seen past 30 s on a machine running four test workers
            interval=1,
        )
        # Everything to check has happened once the late joiner is RUNNING too: stop the sim then, as Ctrl-C
        # would, instead of running on idle to its --duration (which only bounds the run).
        wait_until(
            lambda: any(
                (e["event"], e.get("client_id"), e.get("after")) == ("state", run.client(3), "RUNNING")
                for e in run.truth()
            ),
            timeout=30,
        )
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish() == 0
    truth = run.truth()
    assert _streams_clients(first) == members_at(truth, run.group, settled["ts"]) == {run.client(i) for i in range(3)}
    assert first_state and [(r["STATE"], r["#MEMBERS"]) for r in first_state] == [("Stable", "3")]
    assert crash["client_id"] == run.client(2)
    assert last, "the group never settled, Stable, with active tasks on the survivor and the late joiner"
    assert survivors(truth, run.group) == _streams_clients(last) == {run.client(0), run.client(3)}
    input_lag = [int(r["OFFSET-LAG"]) for r in offsets if r["TOPIC"] == run.topic]
    # the killed instance's tasks wait for its timeout; the tool lists only partitions with a commit, and
    # one whose first commit the killed instance never made is left out (3 of 4 in one CI run)
    assert input_lag and sum(input_lag) > 0
    leaves = {e["client_id"]: e for e in truth if e["event"] == "leave"}
    assert leaves[run.client(1)]["ts"] < crash["ts"] and run.client(2) not in leaves
    running = {e["client_id"] for e in truth if e["event"] == "state" and e["after"] == "RUNNING"}
    assert running == {run.client(i) for i in range(4)}


# ---------------------------------------------------------------- process hygiene


def test_sigterm_stops_the_sim_and_its_children(kafka, unique, tmp_path):
    with sim(kafka, unique, tmp_path, "steady") as run:  # no --duration: runs until stopped
        run.wait_for("phase", name="settled")
        run.remember_children()
        assert len(run.pids) >= 3  # producer + 2 members (+ multiprocessing's resource tracker)
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish(timeout=30) == 0
    leaves = [e for e in run.truth() if e["event"] == "leave"]
    assert {e["client_id"] for e in leaves} == {run.client(0), run.client(1)}


@pytest.mark.parametrize("scenario", ["steady", "streams"])  # Python children, and JVMs
def test_children_die_with_a_killed_sim(kafka, unique, tmp_path, scenario):
    with sim(kafka, unique, tmp_path, scenario) as run:
        run.wait_for("phase", name="settled", timeout=60)
        run.remember_children()
        if scenario == "streams":
            assert len([p for p in run.pids if _name(p) == "java"]) == 3
        os.kill(run.proc.pid, signal.SIGKILL)
        run.proc.wait(10)
        assert_gone(run.pids, timeout=20)


# ---------------------------------------------------------------- truth helpers (pure)


def _cb(ts, client, event="assigned", generation=None, parts=(), protocol="eager"):
    return {
        "ts": ts,
        "event": event,
        "group": "g",
        "client_id": client,
        "generation": generation,
        "protocol": protocol,
        "partitions": [["t", p] for p in parts],
    }


def test_count_rebalances_groups_callbacks_by_generation_and_ignores_the_dead():
    truth = [
        _cb(0, "a", generation=1, parts=[0, 1]),
        _cb(5, "b", generation=1, parts=[2]),
        {"ts": 10, "event": "crash", "group": "g", "client_id": "b"},
        _cb(20, "a", "revoked", generation=1, parts=[0, 1]),
        _cb(21, "a", generation=2, parts=[0, 1, 2]),
        {"ts": 30, "event": "phase", "name": "stop"},
        _cb(31, "a", "revoked", generation=2, parts=[0, 1, 2]),
    ]
    assert survivors(truth, "g") == {"a"}
    assert count_rebalances(truth, "g") == 2
    assert current_assignment(truth, "g") == {"a": set(), "b": set()}
    assert current_assignment(truth, "g", before_ms=25) == {"a": {("t", 0), ("t", 1), ("t", 2)}, "b": set()}


def test_count_rebalances_without_generations_clusters_by_time():
    truth = [_cb(0, "a"), _cb(300, "b"), _cb(4900, "a", "revoked"), _cb(5000, "a"), _cb(5100, "b")]
    assert count_rebalances(truth, "g") == 2

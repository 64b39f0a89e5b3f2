"""The offsets-topic tail against a real broker: Kafka's own decoders as the oracle, exact history, restarts."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from harness import wait_for
from kafka_cli import (
    CONSOLE_CONSUMER,
    CONSUMER_GROUPS,
    console_arguments,
    describe_groups,
    java_command,
    parse_concatenated_json,
    run_tool,
)
from kafka_setup import commit_without_joining, create_topic
from offsets_workload import run_members, same_partition_names
from scenario_watch import run_collector

from monitor.__main__ import main
from monitor.collector import Collector
from monitor.kafka import KafkaSampler, OffsetsTopicReader
from monitor.offsets_topic import decode, to_kafka_json
from monitor.shard import coordinator_partition
from monitor.store import Store, make_engine, read_group_lag, read_rebalances, upgrade
from monitor.store.offsets_tail import read_commits, read_generations
from monitor.tail import build_offsets_tail

KINDS = ["eager", "cooperative", "static", "kip848", "deleted-offsets", "deleted-group"]


def offsets_partitions(bootstrap: str, topic: str) -> int:
    """How many partitions __consumer_offsets has (a first commit makes the broker create it)."""
    commit_without_joining(bootstrap, f"warm-up-{topic}", {(topic, 0): 0})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return len(admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions)


def read_partition(bootstrap: str, partition: int) -> list:
    """Every record of one __consumer_offsets partition, through lagmon's reader, up to its end."""
    reader = OffsetsTopicReader({"bootstrap.servers": bootstrap})
    reader.open(lambda p: None)
    records, done, deadline = [], False, time.monotonic() + 30
    try:
        while not done and time.monotonic() < deadline:
            batch, ends, _ = reader.fetch_batch(5000, 0.5)
            records += [r for r in batch if r.partition == partition]
            done = partition in ends
    finally:
        reader.close()
    assert done, "never reached the end of the partition"
    return records


def java(main_class: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        java_command(main_class, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


DUMP_LINE = re.compile(r"^\| offset: (\d+) .* key: (\{.*\}) payload: (.*)$")


def parse_dump(text: str) -> dict[int, dict]:
    """DumpLogSegments --offsets-decoder lines -> {offset: {"key", "value"}} with numbers as numbers."""
    out = {}
    for line in text.splitlines():
        m = DUMP_LINE.match(line)
        if not m:
            continue
        key, payload = json.loads(m.group(2)), m.group(3).strip()
        value = None if payload == "<DELETE>" else json.loads(payload)
        out[int(m.group(1))] = {
            "key": {"type": int(key["type"]), "data": key["data"]},
            "value": None if value is None else {"version": int(value["version"]), "data": value["data"]},
        }
    return out


def group_of(printed: dict) -> str:
    data = printed["key"]["data"]
    return data.get("group", data.get("groupId"))


def test_records_of_real_groups_decode_exactly_as_kafkas_own_formatters_print_them(kafka, unique):
    topic = f"oracle-{unique}"
    create_topic(kafka.bootstrap, topic, 4)
    partitions = offsets_partitions(kafka.bootstrap, topic)
    names = same_partition_names(f"oracle-{unique}", KINDS, partitions)
    ours_groups = set(names.values())
    partition = coordinator_partition(names["eager"], partitions)
    with ThreadPoolExecutor(4) as pool:  # the groups are independent: form them side by side
        for future in [
            pool.submit(run_members, kafka.bootstrap, names["eager"], topic),
            pool.submit(run_members, kafka.bootstrap, names["cooperative"], topic, assignor="cooperative-sticky"),
            pool.submit(run_members, kafka.bootstrap, names["static"], topic, static=True),
            pool.submit(run_members, kafka.bootstrap, names["kip848"], topic, protocol="consumer"),
            pool.submit(
                commit_without_joining, kafka.bootstrap, names["deleted-offsets"], {(topic, 0): 5, (topic, 1): 6}
            ),
            pool.submit(commit_without_joining, kafka.bootstrap, names["deleted-group"], {(topic, 0): 7}),
        ]:
            future.result()
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.delete_consumer_groups([names["deleted-group"]])[names["deleted-group"]].result(30)
    run_tool(
        CONSUMER_GROUPS,
        "--bootstrap-server",
        kafka.bootstrap,
        "--delete-offsets",
        "--group",
        names["deleted-offsets"],
        "--topic",
        f"{topic}:0",
    )

    # Kafka's decoders first, lagmon's after: lagmon then holds every record Kafka printed
    console = [
        java(CONSOLE_CONSUMER, *console_arguments(kafka.bootstrap, partition, formatter, "--timeout-ms", "3000"))
        for formatter in ("OffsetsMessageFormatter", "GroupMetadataMessageFormatter")
    ]
    logs = sorted((kafka.dir / f"node-{kafka.nodes[0].id}" / "data" / f"__consumer_offsets-{partition}").glob("*.log"))
    dump = java(
        "org.apache.kafka.tools.DumpLogSegments",
        "--offsets-decoder",
        "--print-data-log",
        "--files",
        ",".join(map(str, logs)),
    )
    printed_offsets, printed_groups = (parse_concatenated_json(p.communicate(timeout=120)[0]) for p in console)
    dumped = parse_dump(dump.communicate(timeout=120)[0])
    records = read_partition(kafka.bootstrap, partition)
    ours = {r.offset: to_kafka_json(decode(r.key, r.value)) for r in records}
    ours_decoded = {r.offset: to_kafka_json(decode(r.key, r.value), protocols=True) for r in records}

    dumped = {o: d for o, d in dumped.items() if group_of(d) in ours_groups}
    ours_all = {o: j for o, j in ours.items() if j is not None and group_of(j) in ours_groups}
    # every record type and tombstone these groups made, field by field and in Kafka's order
    # (DumpLogSegments also decodes the classic members' subscription and assignment bytes)
    for offset, printed in dumped.items():
        assert ours_decoded.get(offset) == printed, f"offset {offset}:\n{ours_decoded.get(offset)}\n{printed}"
    assert [json.dumps(ours_decoded[o]) for o in dumped] == [json.dumps(d) for d in dumped.values()]
    types = {(d["key"]["type"], d["value"] is None) for d in dumped.values()}
    assert {
        (1, False),
        (1, True),
        (2, False),
        (2, True),
        (3, False),
        (5, False),
        (5, True),
        (6, False),
        (7, False),
        (8, False),
    } <= types, types
    # ConsoleConsumer with Kafka's two formatters: offset commits, then classic group metadata
    mine = [j for _, j in sorted(ours_all.items())]
    for printed, record_types in ((printed_offsets, {0, 1}), (printed_groups, {2})):
        theirs = [p for p in printed if group_of(p) in ours_groups]
        assert theirs and theirs == [j for j in mine if j["key"]["type"] in record_types][: len(theirs)]


def make_collector(bootstrap: str, db, cluster: str = "tail", on_commits=None) -> Collector:
    url = f"sqlite:///{db}"
    upgrade(url)
    store = Store(make_engine(url))
    tail = build_offsets_tail(
        {"bootstrap.servers": bootstrap},
        store,
        cluster,
        mode="on",
        span_s=3600,
        on_commits=on_commits,
    )
    sampler = KafkaSampler({"bootstrap.servers": bootstrap}, cluster, timeout_s=5, offsets_tail=tail)
    return Collector(sampler, store, cluster, tail=tail)


class Running:
    """A collector with its tail, cycling every `interval` seconds in a thread."""

    def __init__(self, collector: Collector, interval: float = 1.0):
        self.collector, self.stop = collector, threading.Event()
        self.thread = threading.Thread(target=run_collector, args=(collector, interval, self.stop))

    def __enter__(self):
        self.thread.start()
        return self.collector

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)


def test_every_commit_is_stored_once_across_a_restart_and_lag_from_the_tail_is_exact(
    kafka, unique, tmp_path, monkeypatch, capsys
):
    topic, group = f"tail-{unique}", f"tail-simple-{unique}"
    create_topic(kafka.bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(60):
        producer.produce(topic, b"x", partition=i % 2)
    producer.flush(30)
    db = tmp_path / "tail.db"
    delivered = []  # what the alert engine would be handed, as it is in `collect`
    on_commits = lambda commits: delivered.extend((c.group_id, c.partition, c.offset, c.committed_at) for c in commits)  # noqa: E731
    collector = make_collector(kafka.bootstrap, db, on_commits=on_commits)
    with Running(collector):
        for offset in range(1, 6):
            commit_without_joining(kafka.bootstrap, group, {(topic, 0): offset, (topic, 1): 2 * offset})
        wait_for(lambda: len(read_commits(collector.store.engine, "tail", group)) == 10, what="5 x 2 commits")
        wait_for(
            lambda: (
                collector.prev is not None
                and collector.prev.offsets_from_tail
                and any(p.committed == 10 for p in read_group_lag(collector.store.engine, "tail", group))
            ),
            what="a cycle with committed offsets from the tail",
        )
    for offset in range(6, 9):  # while lagmon is down
        commit_without_joining(kafka.bootstrap, group, {(topic, 0): offset, (topic, 1): 2 * offset})
    collector = make_collector(kafka.bootstrap, db, on_commits=on_commits)
    with Running(collector):
        wait_for(lambda: len(read_commits(collector.store.engine, "tail", group)) >= 16, what="the restart to catch up")
        commit_without_joining(kafka.bootstrap, group, {(topic, 0): 30})
        wait_for(
            lambda: (
                collector.prev is not None
                and collector.prev.offsets_from_tail
                and any(p.committed == 30 for p in read_group_lag(collector.store.engine, "tail", group))
            ),
            what="the new commit in a sample from the tail",
        )
    commits = read_commits(collector.store.engine, "tail", group)
    assert [(c.partition, c.offset) for c in commits] == [
        *[(p, o * (p + 1)) for o in range(1, 9) for p in (0, 1)],
        (0, 30),
    ]  # no gap, no duplicate
    assert all(c.committed_at > 0 for c in commits)
    # each commit reached the health rules once, across the restart too
    assert sorted((p, o, at) for g, p, o, at in delivered if g == group) == sorted(
        (c.partition, c.offset, c.committed_at) for c in commits
    )
    # the sample the tail fed matches kafka-consumer-groups --describe exactly
    lag = {
        (p.topic, p.partition): (p.committed, p.log_end, p.lag)
        for p in read_group_lag(collector.store.engine, "tail", group)
    }
    cli = describe_groups(kafka.bootstrap, group)
    assert lag == {
        (t, p): (int(r["CURRENT-OFFSET"]), int(r["LOG-END-OFFSET"]), int(r["LAG"])) for (_, t, p), r in cli.items()
    }
    # and the commits command lists them, for one partition, with their commit times
    monkeypatch.setenv("LAGMON_DATABASE_URL", f"sqlite:///{db}")
    capsys.readouterr()
    assert main(["commits", group, "--partition", "1", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(c["partition"], c["offset"]) for c in listed] == [(1, 2 * o) for o in range(1, 9)]
    assert [c["committed_at"] for c in listed] == [c.committed_at for c in commits if c.partition == 1]


def test_rebalances_from_the_tail_carry_exact_generations_and_merge_with_polling(
    kafka, unique, tmp_path, monkeypatch, capsys
):
    topic = f"tail-rb-{unique}"
    create_topic(kafka.bootstrap, topic, 4)
    eager, coop, kip848 = f"tail-eager-{unique}", f"tail-coop-{unique}", f"tail-848-{unique}"
    collector = make_collector(kafka.bootstrap, tmp_path / "rb.db")
    with Running(collector):
        run_members(kafka.bootstrap, eager, topic)
        run_members(kafka.bootstrap, coop, topic, assignor="cooperative-sticky")
        run_members(kafka.bootstrap, kip848, topic, protocol="consumer")
        engine = collector.store.engine
        wait_for(lambda: any(g["epoch"] == 3 for g in read_generations(engine, "tail", eager)), what="generations")
        time.sleep(1.5)  # one more polling cycle to merge with
    gens = {
        g: [(r["kind"], r["epoch"], len(r["members"])) for r in read_generations(engine, "tail", g)]
        for g in (eager, coop)
    }
    # eager: created empty, one member, two members, then (one or two generations) empty again
    epochs = [e for k, e, _ in gens[eager] if k == "generation"]
    assert epochs == list(range(len(epochs))) and len(epochs) in (4, 5), gens
    assert [n for _, _, n in gens[eager]][:3] == [0, 1, 2] and gens[eager][-1][2] == 0
    rows = {g: [r.rebalance for r in read_rebalances(engine, "tail", g)] for g in (eager, coop, kip848)}
    assert [(r.generation_before, r.generation_after) for r in rows[eager]] == list(pairwise(epochs))
    # cooperative: the revoke round and the assign round of the second member's join are one rebalance
    coop_gens = [(r.generation_before, r.generation_after) for r in rows[coop]]
    assert coop_gens[:2] == [(0, 1), (1, 3)], coop_gens
    # KIP-848: epochs, the join completes once both members hold their target
    first, *_ = [r for r in rows[kip848] if r.members_before == 1 and r.members_after == 2]
    assert first.generation_after == first.generation_before + 1 and first.ended_at >= first.started_at
    # its records name topics by id: each target the coordinator computed hands out the whole topic
    targets = [r for r in read_generations(engine, "tail", kip848, kind="assignment_epoch") if r["members"]]
    assert targets and all(
        sorted(tp for m in r["members"] for tp in m["assignment"]) == [f"{topic}:{p}" for p in range(4)]
        for r in targets
    ), targets
    # one rebalance, one row: no polled row overlaps a tail row without having merged into it
    for group, recorded in rows.items():
        tail_rows = [r for r in recorded if r.source in ("offsets_topic", "both")]
        for polled in (r for r in recorded if r.source == "polling"):
            assert not any(
                polled.started_at <= t.ended_at <= (polled.ended_at or t.ended_at)
                for t in tail_rows
                if t.ended_at is not None
            ), (group, polled)
    assert any(r.source == "both" for rs in rows.values() for r in rs), rows
    # `rebalances` shows the numbers and where each row comes from
    monkeypatch.setenv("LAGMON_DATABASE_URL", f"sqlite:///{tmp_path / 'rb.db'}")
    capsys.readouterr()
    assert main(["rebalances", "--group", eager]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "GENERATION/EPOCH" in table[0] and "SOURCE" in table[0]
    assert [line.split()[-2:] for line in table[1:]] == [
        [f"{r.generation_before}->{r.generation_after}", r.source] for r in rows[eager]
    ]


@pytest.mark.failover
def test_tail_survives_its_leader_stopping_and_coming_back_without_gaps_or_duplicates(kafka3, unique, tmp_path, caplog):
    """The __consumer_offsets leader of the group stops mid-stream: leadership moves, the tail goes on.

    The tail runs without the sampler here: librdkafka 2.16's admin OffsetFetch segfaults when
    a coordinator answers NOT_COORDINATOR (librdkafka#5040), which is the sampler's fallback path
    and would take the test process down; the tail itself never sends OffsetFetch.
    """
    from monitor import devcluster

    topic, group = f"tail-ha-{unique}", f"tail-ha-{unique}"
    create_topic(kafka3.bootstrap, topic, 1)
    commit_without_joining(kafka3.bootstrap, group, {(topic, 0): 1})
    admin = AdminClient({"bootstrap.servers": kafka3.bootstrap})
    meta = admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions
    leader = meta[coordinator_partition(group, len(meta))].leader
    url = f"sqlite:///{tmp_path / 'ha.db'}"
    upgrade(url)
    store = Store(make_engine(url))
    engine = store.engine
    tail = build_offsets_tail({"bootstrap.servers": kafka3.bootstrap}, store, "tail", mode="on", span_s=3600)
    stop = threading.Event()
    thread = tail.start(stop)
    try:
        for offset in (2, 3):
            commit_without_joining(kafka3.bootstrap, group, {(topic, 0): offset})
        wait_for(lambda: len(read_commits(engine, "tail", group)) == 3, what="the first commits")
        devcluster.stop_node(kafka3.dir, leader)
        try:
            for offset in (4, 5, 6):  # the coordinator moved with the partition's leadership
                commit_without_joining(kafka3.bootstrap, group, {(topic, 0): offset})
        finally:
            devcluster.start_node(kafka3.dir, leader)
        for offset in (7, 8):
            commit_without_joining(kafka3.bootstrap, group, {(topic, 0): offset})
        wait_for(lambda: len(read_commits(engine, "tail", group)) >= 8, timeout=60, what="commits after the restart")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert [c.offset for c in read_commits(engine, "tail", group)] == list(range(1, 9)), caplog.text

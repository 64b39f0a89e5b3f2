"""Share and streams groups' real records, and `__share_group_state`'s: Kafka's own decoders as the oracle.

A real share group (two ShareConsumers accepting, releasing and rejecting records)
and a real streams group (two instances of the demo Kafka Streams app, one standby
replica) run, leave and are deleted; every record they made is then decoded by
lagmon and printed by Kafka's DumpLogSegments (`--offsets-decoder`,
`--share-group-state-decoder`) and ShareGroupMessageFormatter, and compared field
by field, in Kafka's order.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import confluent_kafka
from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka import TopicPartition as KafkaTP
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kafka_cli import CONSOLE_CONSUMER, console_arguments, java_command, parse_concatenated_json, run_tool
from kafka_setup import commit_without_joining, create_topic
from offsets_workload import same_partition_names

from monitor.devcluster import LIBS_DIR
from monitor.offsets_topic import (
    StreamsGroupCurrentMemberAssignment,
    decode,
    decode_share_state,
    to_kafka_json,
)
from monitor.shard import coordinator_partition

SHARE_STATE_TOPIC = "__share_group_state"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"
DUMP_FILE = re.compile(r"^Dumping .*/[\w.-]+-(\d+)/\d+\.log$")
DUMP_LINE = re.compile(r"^\| offset: (\d+) .* key: (\{.*\}) payload: (.*)$")
MESSAGES = 30


def java(main_class: str, *args: str, apps: bool = False) -> subprocess.Popen:
    classpath = f"{LIBS_DIR}/*" + (f":{LIBS_DIR}/apps" if apps else "")
    return subprocess.Popen(
        java_command(main_class, *args, classpath=classpath),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def parse_dump(text: str) -> dict[tuple[int, int], dict]:
    """DumpLogSegments lines -> {(partition, offset): {"key", "value"}}, numbers as numbers (it prints strings)."""
    out, partition = {}, None
    for line in text.splitlines():
        if m := DUMP_FILE.match(line):
            partition = int(m.group(1))
        elif m := DUMP_LINE.match(line):
            key, payload = json.loads(m.group(2)), m.group(3).strip()
            value = None if payload == "<DELETE>" else json.loads(payload)
            out[(partition, int(m.group(1)))] = {
                "key": {"type": int(key["type"]), "data": key["data"]},
                "value": None if value is None else {"version": int(value["version"]), "data": value["data"]},
            }
    return out


def dump(kafka, topic: str, decoder: str, partitions) -> dict[tuple[int, int], dict]:
    data = kafka.dir / f"node-{kafka.nodes[0].id}" / "data"
    logs = [str(f) for p in partitions for f in sorted((data / f"{topic}-{p}").glob("*.log"))]
    proc = java(DUMP_LOG_SEGMENTS, decoder, "--print-data-log", "--files", ",".join(logs))
    return parse_dump(proc.communicate(timeout=120)[0])


def log_starts(bootstrap: str, topic: str, partitions) -> dict[int, int]:
    """Each partition's log start offset now (records below it are deleted, even if still in a segment file)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lagmon-oracle-reader"})
    try:
        return {p: consumer.get_watermark_offsets(KafkaTP(topic, p), timeout=10)[0] for p in partitions}
    finally:
        consumer.close()


def read_topic(
    bootstrap: str, topic: str, partitions, seen: Iterable[tuple[int, int]] = ()
) -> dict[tuple[int, int], tuple[bytes, bytes | None]]:
    """Every record of the partitions, up to their ends and at least past each (partition, offset) in `seen`
    (what Kafka's own tools printed before): {(partition, offset): (key, value)}."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "lagmon-oracle-reader", "enable.auto.commit": False}
    )
    ends = {p: consumer.get_watermark_offsets(KafkaTP(topic, p), timeout=10)[1] for p in partitions}
    for p, offset in seen:
        ends[p] = max(ends[p], offset + 1)
    todo = {p for p, end in ends.items() if end > 0}
    consumer.assign([KafkaTP(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in todo])
    out, deadline = {}, time.monotonic() + 30
    try:
        while todo and time.monotonic() < deadline:
            for m in consumer.consume(500, 0.5):
                if m.error():
                    continue
                out[(m.partition(), m.offset())] = (m.key(), m.value())
                if m.offset() >= ends[m.partition()] - 1:
                    todo.discard(m.partition())
    finally:
        consumer.close()
    assert not todo, f"never reached the end of {topic} partitions {todo}"
    return out


def set_group_config(bootstrap: str, group: str, name: str, value: str) -> None:
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs(
        [ConfigResource("GROUP", group, incremental_configs=[entry])]
    ).values():
        future.result(30)


def run_share_group(bootstrap: str, group: str, topic: str) -> Counter:
    """Two share consumers take every record once: accept, release (delivered again) or reject."""
    kinds = [confluent_kafka.AcknowledgeType.ACCEPT, confluent_kafka.AcknowledgeType.RELEASE]
    kinds.append(confluent_kafka.AcknowledgeType.REJECT)
    consumers = [
        ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": f"{group}-c{i}",
                "share.acknowledgement.mode": "explicit",
            }
        )
        for i in range(2)
    ]
    acks, done, n = Counter(), 0, 0
    try:
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 60
        while done < MESSAGES and time.monotonic() < deadline:
            for c in consumers:
                polled = [m for m in c.poll(0.5) if not m.error()]
                for m in polled:
                    kind = kinds[n % 3] if n < 12 else kinds[0]  # a few of each, then accept the rest
                    n += 1
                    c.acknowledge(m, kind)
                    acks[kind] += 1
                    done += kind != kinds[1]
                if polled:
                    c.commit_sync()
    finally:
        for c in consumers:
            c.close()  # each member leaves: its records get tombstones
    assert done == MESSAGES, acks
    return acks


def standby_assigned(bootstrap: str, partition: int, group: str) -> bool:
    for key, value in read_topic(bootstrap, "__consumer_offsets", [partition]).values():
        rec = decode(key, value)
        if isinstance(rec, StreamsGroupCurrentMemberAssignment) and rec.group == group and rec.standby_tasks:
            return True
    return False


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM: the app's shutdown hook closes Kafka Streams, whose member leaves the group."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=45)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def delete_group(command: str, bootstrap: str, group: str) -> None:
    """The group is empty once its members' leaves are processed: retry a few times until then."""
    for attempt in range(10):
        try:
            run_tool(command, "--bootstrap-server", bootstrap, "--delete", "--group", group)
            return
        except AssertionError:
            if attempt == 9:
                raise
            time.sleep(1)


def printed_group(printed: dict) -> str:
    """The group of a printed record: "groupId" in group records, "group" in classic ones (other tests' groups
    share this session's broker, and some land in the same partition)."""
    data = printed["key"]["data"]
    return data.get("groupId", data.get("group"))


def readable_share_state(kafka, group: str, partitions) -> tuple[dict, dict]:
    """`group`'s __share_group_state records a consumer can read now, as lagmon and as DumpLogSegments decode
    them: ({(partition, offset): ours}, {(partition, offset): Kafka's}). Kafka's decoder first, lagmon's after,
    so lagmon holds every record Kafka printed; the share coordinator prunes its log (deleteRecords up to its
    newest snapshot), and DumpLogSegments still prints, from the segment files, records below the log's start."""
    dumped = dump(kafka, SHARE_STATE_TOPIC, "--share-group-state-decoder", partitions)
    records = read_topic(kafka.bootstrap, SHARE_STATE_TOPIC, partitions, dumped)
    starts = log_starts(kafka.bootstrap, SHARE_STATE_TOPIC, partitions)
    ours = {at: to_kafka_json(decode_share_state(k, v)) for at, (k, v) in records.items()}
    return ours, {at: d for at, d in dumped.items() if printed_group(d) == group and at[1] >= starts[at[0]]}


def compare(ours: dict, dumped: dict, what: str) -> Counter:
    """Every record Kafka printed, field by field and in Kafka's order; (type, tombstone) -> count."""
    assert dumped, f"Kafka printed no {what} record of these groups"
    for at, printed in dumped.items():
        assert ours.get(at) == printed, f"{what} {at}:\n{ours.get(at)}\n{printed}"
        assert json.dumps(ours[at]) == json.dumps(printed), f"{what} {at}: field order"
    return Counter((p["key"]["type"], p["value"] is None) for p in dumped.values())


def test_share_and_streams_records_decode_exactly_as_kafkas_own_decoders_print_them(kafka, unique, tmp_path):
    share_topic, words, counts = f"share-in-{unique}", f"words-{unique}", f"counts-{unique}"
    create_topic(kafka.bootstrap, share_topic, 3)
    create_topic(kafka.bootstrap, words, 4)
    create_topic(kafka.bootstrap, counts, 1)
    commit_without_joining(kafka.bootstrap, f"warm-up-{unique}", {(words, 0): 0})  # creates __consumer_offsets
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    offsets_partitions = len(
        admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions
    )
    names = same_partition_names(f"ss-{unique}", ["share", "streams"], offsets_partitions)
    share, app = names["share"], names["streams"]
    partition = coordinator_partition(share, offsets_partitions)
    set_group_config(kafka.bootstrap, share, "share.auto.offset.reset", "earliest")
    set_group_config(kafka.bootstrap, app, "streams.num.standby.replicas", "1")  # the group's, not the client's
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(MESSAGES):
        producer.produce(share_topic, f"m{i}".encode(), partition=i % 3)
        producer.produce(words, f"lag {i % 4} monitor".encode(), key=str(i).encode())
    producer.flush(30)

    apps = []
    for i in range(2):
        props = tmp_path / f"app-{i}.properties"
        props.write_text(
            f"bootstrap.servers={kafka.bootstrap}\napplication.id={app}\ninput.topic={words}\n"
            f"output.topic={counts}\nstate.dir={tmp_path / f'state-{i}'}\nnum.standby.replicas=1\n"
        )
        apps.append(java("LagmonStreams", str(props), apps=True))
    try:
        with ThreadPoolExecutor(1) as pool:  # the share group runs while the streams group forms
            acks = pool.submit(run_share_group, kafka.bootstrap, share, share_topic)
            deadline = time.monotonic() + 120
            while not standby_assigned(kafka.bootstrap, partition, app):
                assert time.monotonic() < deadline, "the streams group never assigned a standby task"
                assert all(p.poll() is None for p in apps), "a Kafka Streams instance exited"
                time.sleep(2)
            acks = acks.result()
    finally:
        for proc in reversed(apps):  # one leaves, the other takes over its tasks, then leaves too
            stop(proc)
    # The share state before the deletion too: once the group is deleted, the share coordinator's pruning
    # (every 5 minutes) may delete its snapshots and updates, leaving only the tombstones to read (seen in CI)
    state_partitions = range(len(admin.list_topics(SHARE_STATE_TOPIC, timeout=10).topics[SHARE_STATE_TOPIC].partitions))
    ours_state, dumped_state = readable_share_state(kafka, share, state_partitions)
    delete_group(SHARE_GROUPS, kafka.bootstrap, share)  # tombstones for the group and its share state
    delete_group(STREAMS_GROUPS, kafka.bootstrap, app)
    ours_after, dumped_after = readable_share_state(kafka, share, state_partitions)
    ours_state |= ours_after
    dumped_state |= dumped_after

    # Kafka's decoders first, lagmon's after: lagmon then holds every record Kafka printed
    # the formatter stops once it consumed every record there is now, not after an idle gap (a loaded
    # machine's JVM could wait longer than any gap for its first fetch: seen, 3 s and nothing printed)
    written = len(read_topic(kafka.bootstrap, "__consumer_offsets", [partition]))
    options = ("--max-messages", str(written), "--timeout-ms", "60000")
    formatter = java(
        CONSOLE_CONSUMER, *console_arguments(kafka.bootstrap, partition, "ShareGroupMessageFormatter", *options)
    )
    dumped = dump(kafka, "__consumer_offsets", "--offsets-decoder", [partition])
    printed_share = parse_concatenated_json(formatter.communicate(timeout=120)[0])
    records = read_topic(kafka.bootstrap, "__consumer_offsets", [partition], dumped)
    ours = {at: to_kafka_json(decode(k, v)) for at, (k, v) in records.items()}

    dumped = {at: d for at, d in dumped.items() if d["key"]["type"] > 1 and printed_group(d) in (share, app)}
    types = compare(ours, dumped, "__consumer_offsets")
    state_types = compare(ours_state, dumped_state, SHARE_STATE_TOPIC)
    print(f"\ncompared with DumpLogSegments, (type, tombstone): count: {dict(sorted(types.items()))}")
    print(f"__share_group_state: {dict(sorted(state_types.items()))}; acknowledgements: {dict(acks)}")
    # every share and streams record type Kafka 4.3 writes, and the tombstones of members leaving
    # and groups being deleted
    assert {
        (t, tombstone) for t in (10, 11, 12, 13, 14, 15, 17, 19, 20, 21, 22, 23) for tombstone in (False, True)
    } <= set(types), types
    assert {(0, False), (1, False), (0, True)} <= set(state_types), state_types
    # no record of these groups left undecoded (a Skipped renders as None)
    mine = [
        j
        for at, j in sorted(ours.items())
        if j is not None and j["key"]["type"] > 1 and printed_group(j) in (share, app)
    ]
    assert len(mine) == len(dumped)
    # ShareGroupMessageFormatter prints the share group's records (types 10-15) exactly as ours
    theirs = [p for p in printed_share if printed_group(p) == share]
    assert theirs == [j for j in mine if 10 <= j["key"]["type"] <= 15]
    # the real records carry tagged fields both absent (Kafka's default) and written
    streams_meta = [d["value"]["data"] for d in dumped.values() if d["key"]["type"] == 17 and d["value"]]
    assert any("validatedTopologyEpoch" not in d for d in streams_meta), streams_meta
    assert any("validatedTopologyEpoch" in d for d in streams_meta), streams_meta
    state_values = [d["value"]["data"] for d in dumped_state.values() if d["value"]]
    assert any("deliveryCompleteCount" in d for d in state_values), state_values

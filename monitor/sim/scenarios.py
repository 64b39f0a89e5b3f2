"""The scenarios: each live one is a function options -> Plan; `many-groups` runs to completion.

Names: topic `sim-<scenario>-[<suffix>-]topic`, group `sim-<scenario>-[<suffix>-]group`,
members `...-m<i>` (a Streams instance is a member too; its group is its application.id),
so a run touches only its own topics and groups and tests can isolate runs with a suffix.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, replace
from pathlib import Path

from monitor.sim.runner import Action, Plan, ensure_topics, log
from monitor.sim.specs import MemberSpec, ShareMemberSpec, StreamsSpec, client_logging
from monitor.sim.truth import TruthWriter

STEADY_RATE = 20.0  # records/s: a trickle every member keeps up with
LAGGING_PRODUCE_RATE = 200.0
LAGGING_CONSUME_RATE = 50.0  # so lag grows by ~150 records/s
CHURN_UP_S, CHURN_DOWN_S = 8.0, 3.0  # a cycling member is in the group 8 s, away 3 s
CRASH_AFTER_S = 3.0  # after the group settled
STATIC_SESSION_TIMEOUT_MS = 10000  # a static member restarts well within it
STATIC_FIRST_RESTART_S, STATIC_DOWN_S, STATIC_UP_S = 3.0, 2.0, 8.0
SHARE_RATE = 30.0
SHARE_RELEASE_EVERY, SHARE_REJECT_EVERY = 10, 25  # of offsets: ~1 in 10 delivered twice, 1 in 25 rejected
SHARE_LOCK_MS = 3000  # a stalled member's records go back to the group after this
SHARE_STALL_AFTER_S, SHARE_STALL_S = 2.0, 8.0  # after settling; longer than the lock, so the locks run out
SHARE_LEAVE_AFTER_S, SHARE_DOWN_S = 12.0, 4.0  # after the stall, so the two do not overlap
STREAMS_RATE = 30.0
STREAMS_PARTITIONS = 4
STREAMS_DELAY_MS = 40  # one instance does ~25 records/s: alone it falls behind, two keep up
# after settling; the first stop leaves room to read the group whole (a Kafka tool run takes ~4 s under load)
STREAMS_STOP_AFTER_S, STREAMS_KILL_AFTER_S, STREAMS_JOIN_AFTER_S = 10.0, 13.0, 15.0
MANY_GROUPS_RECORDS_PER_PARTITION = 5
MANY_GROUPS_IN_FLIGHT = 64


@dataclass(frozen=True)
class Options:
    """What the command line says, shared by every scenario."""

    bootstrap: str
    suffix: str | None = None
    truth_path: str | None = None
    verbose: bool = False
    stall_after_s: float = 5.0
    recover_after_s: float | None = None
    session_timeout_ms: int = 6000
    groups: int = 100
    partitions: int = 10
    kafka_libs: Path | None = None  # Kafka's jars and the compiled Streams app (apps/), for `streams`
    hold_path: str | None = None  # the actions wait, once settled, until this file exists (a test's cue)


def sim_name(scenario: str, options: Options, role: str) -> str:
    return "-".join(part for part in ("sim", scenario, options.suffix, role) if part)


def _members(scenario: str, options: Options, count: int, **knobs) -> list[MemberSpec]:
    """`count` members of the scenario's group on its topic, all alike."""
    return [
        MemberSpec(
            bootstrap=options.bootstrap,
            group=sim_name(scenario, options, "group"),
            topics=(sim_name(scenario, options, "topic"),),
            client_id=sim_name(scenario, options, f"m{i}"),
            truth_path=options.truth_path,
            verbose=options.verbose,
            session_timeout_ms=options.session_timeout_ms,
            **knobs,
        )
        for i in range(count)
    ]


def _plan(scenario: str, options: Options, partitions: int, rate: float, members: list[MemberSpec]) -> Plan:
    topic = sim_name(scenario, options, "topic")
    return Plan(scenario, topics={topic: partitions}, rates={topic: rate}, members=members)


def _cycling(
    members: list[MemberSpec], first_leaves: list[float | None], up_s: float, down_s: float
) -> list[MemberSpec]:
    """Make members leave and rejoin forever after settling (None = this one stays)."""
    return [
        m if first is None else replace(m, first_leave_s=first, cycle_up_s=up_s, cycle_down_s=down_s)
        for m, first in zip(members, first_leaves, strict=True)
    ]


def plan_steady(options: Options) -> Plan:
    """Two members on 3 partitions keep up with 20 records/s: lag stays near 0."""
    return _plan("steady", options, 3, STEADY_RATE, _members("steady", options, 2))


def plan_lagging(options: Options) -> Plan:
    """One member reads 50 records/s of the 200 produced: lag grows by ~150 records/s."""
    members = _members("lagging", options, 1, consume_rate=LAGGING_CONSUME_RATE)
    return _plan("lagging", options, 3, LAGGING_PRODUCE_RATE, members)


def plan_stalled(options: Options) -> Plan:
    """One member pauses its partitions after stall_after_s but keeps polling, so it stays in the group."""
    members = _members(
        "stalled", options, 1, stall_after_s=options.stall_after_s, recover_after_s=options.recover_after_s
    )
    return _plan("stalled", options, 3, STEADY_RATE, members)


def plan_crash(options: Options) -> Plan:
    """Three eager members; m0 is SIGKILLed, so the group rebalances only after the session timeout."""
    plan = _plan("crash", options, 6, STEADY_RATE, _members("crash", options, 3))
    victim = plan.members[0].client_id
    plan.actions.append(Action(CRASH_AFTER_S, f"SIGKILL {victim}", lambda runner: runner.crash(victim)))
    return plan


def plan_churn(options: Options, assignor: str = "range", scenario: str = "churn") -> Plan:
    """Three members, two of which leave and rejoin every few seconds: a rebalance storm."""
    protocol = "cooperative" if assignor == "cooperative-sticky" else "eager"
    members = _members(scenario, options, 3, protocol=protocol, assignor=assignor)
    members = _cycling(members, [None, 2.0, 6.5], CHURN_UP_S, CHURN_DOWN_S)
    return _plan(scenario, options, 6, STEADY_RATE, members)


def plan_cooperative(options: Options) -> Plan:
    """The churn storm with cooperative-sticky: members keep their partitions through rebalances."""
    return plan_churn(options, assignor="cooperative-sticky", scenario="cooperative")


def plan_static(options: Options) -> Plan:
    """Three static members; m0 closes (no LeaveGroup) and returns within the session timeout."""
    options = replace(options, session_timeout_ms=STATIC_SESSION_TIMEOUT_MS)
    members = [
        replace(m, instance_id=sim_name("static", options, f"i{i}"))
        for i, m in enumerate(_members("static", options, 3))
    ]
    members = _cycling(members, [STATIC_FIRST_RESTART_S, None, None], STATIC_UP_S, STATIC_DOWN_S)
    return _plan("static", options, 6, STEADY_RATE, members)


def plan_kip848(options: Options) -> Plan:
    """A KIP-848 group (group.protocol=consumer) with two of three members joining and leaving."""
    members = _members("kip848", options, 3, protocol="consumer")
    members = _cycling(members, [None, 2.0, 6.5], CHURN_UP_S, CHURN_DOWN_S)
    return _plan("kip848", options, 6, STEADY_RATE, members)


def plan_share(options: Options, members: int = 3, leaver: bool = True) -> Plan:
    """A share group (KIP-932): members accept most records, release some (redelivered), reject
    a few; m0 stalls holding a batch past its lock, so its partitions pile up; m2 leaves and returns."""
    group, topic = sim_name("share", options, "group"), sim_name("share", options, "topic")
    specs = [
        ShareMemberSpec(
            bootstrap=options.bootstrap,
            group=group,
            topics=(topic,),
            client_id=sim_name("share", options, f"m{i}"),
            release_every=SHARE_RELEASE_EVERY,
            reject_every=SHARE_REJECT_EVERY,
            truth_path=options.truth_path,
            verbose=options.verbose,
        )
        for i in range(members)
    ]
    specs[0] = replace(specs[0], stall_after_s=SHARE_STALL_AFTER_S, stall_s=SHARE_STALL_S)
    if leaver and members > 2:
        specs[2] = replace(specs[2], leave_after_s=SHARE_LEAVE_AFTER_S, down_s=SHARE_DOWN_S)
    plan = Plan("share", topics={topic: 3}, rates={topic: SHARE_RATE}, members=specs)
    plan.group_configs[group] = {  # before anyone joins: share groups start at the log end by default
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": str(SHARE_LOCK_MS),
    }
    return plan


def plan_streams(options: Options, instances: int = 3, churn: bool = True) -> Plan:
    """A streams group (KIP-1071): the Kafka Streams word count, one JVM per instance, slowed so
    lag shows; with churn, m1 stops cleanly, m2 is SIGKILLed and m3 joins later."""
    input_topic, output_topic = sim_name("streams", options, "topic"), sim_name("streams", options, "output")
    specs = [
        StreamsSpec(
            bootstrap=options.bootstrap,
            group=sim_name("streams", options, "group"),
            client_id=sim_name("streams", options, f"m{i}"),
            input_topic=input_topic,
            output_topic=output_topic,
            kafka_libs=options.kafka_libs or Path("kafka/libs"),
            process_delay_ms=STREAMS_DELAY_MS,
            truth_path=options.truth_path,
            verbose=options.verbose,
            tasks=2 * STREAMS_PARTITIONS,  # the word count's two sub-topologies: a task per input partition each
        )
        for i in range(instances + 1 if churn else instances)
    ]
    plan = Plan(
        "streams",
        topics={input_topic: STREAMS_PARTITIONS, output_topic: STREAMS_PARTITIONS},
        rates={input_topic: STREAMS_RATE},
        instances=specs[:instances],
    )
    if churn:
        stopped, killed, late = specs[1].client_id, specs[2].client_id, specs[instances]
        plan.actions += [
            Action(STREAMS_STOP_AFTER_S, f"stop {stopped}", lambda runner: runner.stop_instance(stopped)),
            Action(STREAMS_KILL_AFTER_S, f"SIGKILL {killed}", lambda runner: runner.crash(killed)),
            Action(STREAMS_JOIN_AFTER_S, f"start {late.client_id}", lambda runner: runner.start_instance(late)),
        ]
    return plan


def plan_mixed(options: Options) -> Plan:
    """Steady, lagging, churn, kip848, stalled, a share group and a streams group at once, each
    under its own names: the demo. The last two kept light (two members each, no churn)."""
    plan = Plan("mixed")
    for build in (plan_steady, plan_lagging, plan_churn, plan_kip848, plan_stalled):
        plan = plan.merge(build(options))
    plan = plan.merge(plan_share(options, members=2, leaver=False))
    return plan.merge(plan_streams(options, instances=2, churn=False))


LIVE_SCENARIOS: dict[str, Callable[[Options], Plan]] = {
    "steady": plan_steady,
    "lagging": plan_lagging,
    "stalled": plan_stalled,
    "crash": plan_crash,
    "churn": plan_churn,
    "cooperative": plan_cooperative,
    "static": plan_static,
    "kip848": plan_kip848,
    "share": plan_share,
    "streams": plan_streams,
    "mixed": plan_mixed,
}

# Finite default durations (s); the other live scenarios run until Ctrl-C/SIGTERM.
DEFAULT_DURATIONS_S: dict[str, float] = {"crash": 30.0}


# ---------------------------------------------------------------- many-groups


def run_many_groups(options: Options) -> int:
    """Create `groups` groups with committed offsets on all `partitions` partitions, no live members.

    Group i commits offset 5 - (i + p) % 6 on partition p, so lags differ (0..5) but are known.
    One AdminClient call per group (the API takes one group per call), many in flight at once.
    """
    from confluent_kafka.admin import AdminClient

    started = time.monotonic()
    topic = sim_name("many-groups", options, "topic")
    topics = {topic: options.partitions}
    ensure_topics(options.bootstrap, topics, options.verbose)
    partitions = topics[topic]
    truth = TruthWriter(options.truth_path)
    try:
        _produce_records_per_partition(options, topic, partitions, truth)
        admin = AdminClient({"bootstrap.servers": options.bootstrap, **client_logging(options.verbose, "admin")})
        groups = [sim_name("many-groups", options, f"g{i:04d}") for i in range(options.groups)]
        failures = _commit_for_groups(admin, topic, partitions, groups, truth)
    finally:
        truth.close()
    log(
        f"committed offsets for {len(groups) - len(failures)} groups x {partitions} partitions "
        f"in {time.monotonic() - started:.1f}s"
    )
    for group, error in failures.items():
        log(f"{group}: {error}")
    return 1 if failures else 0


def many_groups_offset(group_index: int, partition: int) -> int:
    n = MANY_GROUPS_RECORDS_PER_PARTITION
    return n - (group_index + partition) % (n + 1)


def _produce_records_per_partition(options: Options, topic: str, partitions: int, truth: TruthWriter) -> None:
    from confluent_kafka import KafkaError, KafkaException, Producer

    producer = Producer(
        {"bootstrap.servers": options.bootstrap, "linger.ms": 5, **client_logging(options.verbose, "producer")}
    )
    ends: dict[str, int] = {}

    def delivered(err, msg):
        if err is None:
            ends[str(msg.partition())] = msg.offset() + 1

    for p in range(partitions):
        for i in range(MANY_GROUPS_RECORDS_PER_PARTITION):
            producer.produce(topic, b"sim %d" % i, partition=p, on_delivery=delivered)
    if producer.flush(30) > 0:
        raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, "records not delivered in 30 s"))
    truth.write(
        "produced",
        topic=topic,
        counts={str(p): MANY_GROUPS_RECORDS_PER_PARTITION for p in range(partitions)},
        end_offsets=ends,
    )


def _commit_for_groups(
    admin, topic: str, partitions: int, groups: list[str], truth: TruthWriter, attempts: int = 6
) -> dict[str, str]:
    """alter_consumer_group_offsets for every group, MANY_GROUPS_IN_FLIGHT at a time; group -> error.

    Coordinator errors (NOT_COORDINATOR while __consumer_offsets is still being created
    or moved) are retried with backoff; librdkafka does not retry them for this call.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    todo = list(enumerate(groups))
    failures: dict[str, str] = {}
    for attempt in range(attempts):
        if attempt:
            time.sleep(min(0.5 * 2**attempt, 8.0))
        failures = {}
        in_flight = {}
        retry = []
        for index, group in todo:
            offsets = [TopicPartition(topic, p, many_groups_offset(index, p)) for p in range(partitions)]
            future = admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, offsets)], request_timeout=15
            )[group]
            in_flight[future] = (index, group)
            if len(in_flight) >= MANY_GROUPS_IN_FLIGHT:
                retry += _collect(in_flight, truth, failures, FIRST_COMPLETED)
        retry += _collect(in_flight, truth, failures, None)
        todo = retry
        if not todo:
            break
    return failures


def _collect(in_flight: dict, truth: TruthWriter, failures: dict, return_when) -> list:
    """Wait for some (or all) commits; record the done ones; return the retriable failures."""
    from confluent_kafka import KafkaError, KafkaException

    coordinator_moving = {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError._TIMED_OUT,
    }
    done, _ = wait(list(in_flight), return_when=return_when or "ALL_COMPLETED")
    retry = []
    for future in done:
        index, group = in_flight.pop(future)
        try:
            result = future.result()
            errors = [tp.error for tp in result.topic_partitions if tp.error]
            if errors:
                raise KafkaException(errors[0])
        except KafkaException as e:
            failures[group] = str(e)
            if e.args[0].retriable() or e.args[0].code() in coordinator_moving:
                retry.append((index, group))
            continue
        truth.write_many(
            [
                {
                    "event": "commit",
                    "group": group,
                    "client_id": None,
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "offset": tp.offset,
                }
                for tp in result.topic_partitions
            ]
        )
    return retry


BATCH_SCENARIOS: dict[str, Callable[[Options], int]] = {"many-groups": run_many_groups}
SCENARIOS: dict[str, Callable] = {**LIVE_SCENARIOS, **BATCH_SCENARIOS}

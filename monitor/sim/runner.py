"""Run a scenario plan: create its topics, set its groups' configs, start the producer,
member, share-member and Kafka Streams processes, fire timed actions once the groups
settle, and always stop every child.

A plan is data (topics, rates, specs, group configs, actions), so `mixed` is just
several plans merged, and every scenario shares one careful start/stop path.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from monitor.models import KafkaUnavailable
from monitor.sim.specs import (
    MemberSpec,
    ProducerSpec,
    Shared,
    ShareMemberSpec,
    StreamsSpec,
    client_logging,
    streams_assigned,
)
from monitor.sim.streams import StreamsInstance
from monitor.sim.truth import TruthWriter

SETTLE_QUIET_S = 2.0  # no assignment callback for this long = the groups have settled
SETTLE_TIMEOUT_S = 45.0
CRASH_WAIT_S = 15.0  # a member that has not committed this long after settling is killed anyway
STOP_GRACE_S = 15.0  # a consumer's close (commit + LeaveGroup) takes well under this


@dataclass
class Action:
    """Something the parent does `after_s` seconds after the groups settled (e.g. SIGKILL a member)."""

    after_s: float
    name: str
    run: Callable[[Runner], None]


@dataclass
class Plan:
    """What a live scenario needs: topics (name -> partitions), produce rates, members,
    share members, Streams instances started with the run, group configs (group -> name ->
    value, set before anyone joins), actions."""

    scenario: str
    topics: dict[str, int] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    members: list[MemberSpec | ShareMemberSpec] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    instances: list[StreamsSpec] = field(default_factory=list)
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)

    def merge(self, other: Plan) -> Plan:
        return Plan(
            self.scenario,
            {**self.topics, **other.topics},
            {**self.rates, **other.rates},
            self.members + other.members,
            self.actions + other.actions,
            self.notes + other.notes,
            self.instances + other.instances,
            {**self.group_configs, **other.group_configs},
        )


class MemberProcess:
    """A member's process with the values it shares and whether we killed it on purpose."""

    def __init__(self, spec: MemberSpec, process, shared: Shared):
        self.spec, self.process, self.shared = spec, process, shared
        self.crashed = False


class Runner:
    """Owns the child processes of one run; `run()` returns only after every child is gone.

    Call it from the main thread: children die with the thread that spawned them
    (PR_SET_PDEATHSIG), and only the main thread can take over SIGINT/SIGTERM.
    """

    def __init__(
        self,
        plan: Plan,
        bootstrap: str,
        truth_path: str | None = None,
        duration_s: float | None = None,
        verbose: bool = False,
        stop_event: threading.Event | None = None,
        hold_path: str | None = None,
    ):
        self.plan, self.bootstrap, self.truth_path = plan, bootstrap, truth_path
        self.hold_path = hold_path  # the actions wait for this file once settled (--hold-until)
        self.released_at: float | None = None
        self.duration_s, self.verbose = duration_s, verbose
        self.stop_event = stop_event or threading.Event()
        self.ctx = multiprocessing.get_context("spawn")
        self.go_at = self.ctx.RawValue("d", 0.0)
        self.truth = TruthWriter(truth_path)
        self.producer = None
        self.members: list[MemberProcess] = []
        self.instances: list[StreamsInstance] = []
        self.settled_at: float | None = None
        self.failures: list[str] = []

    # -- the whole run

    def run(self) -> int:
        """0 if every child behaved, 1 if one failed; children are stopped on every path."""
        try:
            ensure_topics(self.bootstrap, self.plan.topics, self.verbose)
            self.configure_groups()
            self.truth.write("phase", scenario=self.plan.scenario, name="start")
            self.start_children()
            self.loop()
        finally:
            self.truth.write("phase", scenario=self.plan.scenario, name="stop")
            self.stop_children()
            self.truth.close()
        for failure in self.failures:
            print(f"sim: {failure}", file=sys.stderr)
        return 1 if self.failures else 0

    def loop(self) -> None:
        started = time.monotonic()
        pending = sorted(self.plan.actions, key=lambda a: a.after_s)
        while not self.stop_event.is_set():
            now = time.monotonic()
            if self.duration_s is not None and now - started >= self.duration_s:
                break
            if self.settled_at is None:
                self.check_settled(now - started)
            if self.settled_at is not None and self.released_at is None and self.released():
                self.released_at = now
            while pending and self.released_at is not None and now - self.released_at >= pending[0].after_s:
                action = pending.pop(0)
                log(f"{action.name}")
                action.run(self)
            self.check_children()
            self.stop_event.wait(0.2)

    def released(self) -> bool:
        """The actions may start: at once when settled, or once the --hold-until file exists."""
        return self.hold_path is None or os.path.exists(self.hold_path)

    def check_settled(self, elapsed_s: float) -> None:
        """Settled = every member has been assigned once (a share member: got its first records;
        a Streams instance: reached RUNNING, its group's tasks all held) and nothing changed for SETTLE_QUIET_S."""
        assigned = (
            all(m.shared.assign_count.value > 0 for m in self.members)
            and all(i.running_once for i in self.instances)
            and streams_assigned(self.instances)
        )
        last = max(
            [m.shared.last_rebalance_at.value for m in self.members] + [i.last_state_at for i in self.instances],
            default=0.0,
        )
        quiet = time.time() - last >= SETTLE_QUIET_S
        if (assigned and quiet) or elapsed_s > SETTLE_TIMEOUT_S:
            if not assigned:
                log(f"groups not settled after {SETTLE_TIMEOUT_S:.0f}s; going on anyway")
            self.settled_at = time.monotonic()
            self.go_at.value = time.time()
            self.truth.write("phase", scenario=self.plan.scenario, name="settled")
            log("groups settled")

    def check_children(self) -> None:
        for m in self.members:
            if not m.crashed and not m.process.is_alive() and m.process.exitcode not in (0, None):
                self.failures.append(f"member {m.spec.client_id} exited with code {m.process.exitcode}")
                self.truth.write(
                    "died",
                    group=m.spec.group,
                    client_id=m.spec.client_id,
                    pid=m.process.pid,
                    exit_code=m.process.exitcode,
                )
                m.crashed = True  # report once
        for i in self.instances:
            if not i.stopping and not i.alive():
                tail = "\n".join(i.output[-10:])
                self.failures.append(f"streams instance {i.client_id} exited with code {i.process.returncode}:\n{tail}")
                i.stopping = True  # report once
        if self.producer is not None and not self.producer.is_alive() and self.producer.exitcode != 0:
            self.failures.append(f"producer exited with code {self.producer.exitcode}")
            self.producer = None

    # -- children

    def start_children(self) -> None:
        """Spawn the producer and members with SIGINT ignored, so only the parent sees Ctrl-C."""
        from monitor.sim.share import run_share_member  # the children's code needs the client
        from monitor.sim.workers import run_member, run_producer

        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            if self.plan.rates:
                spec = ProducerSpec(
                    self.bootstrap,
                    self.plan.rates,
                    {t: self.plan.topics[t] for t in self.plan.rates},
                    self.truth_path,
                    self.verbose,
                )
                self.producer = self.ctx.Process(target=run_producer, args=(spec,), name="sim-producer", daemon=True)
                self.producer.start()
            for spec in self.plan.members:
                shared = Shared(self.ctx)
                target = run_share_member if isinstance(spec, ShareMemberSpec) else run_member
                process = self.ctx.Process(
                    target=target, args=(spec, shared, self.go_at), name=spec.client_id, daemon=True
                )
                process.start()
                self.members.append(MemberProcess(spec, process, shared))
            for spec in self.plan.instances:
                self.start_instance(spec)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def start_instance(self, spec: StreamsSpec) -> None:
        """Start a Kafka Streams instance (at the start, or later as an action: a new instance joins)."""
        self.instances.append(StreamsInstance(spec, self.truth))

    def stop_instance(self, client_id: str) -> None:
        """Stop a Streams instance cleanly (its close leaves the group) and wait for it."""
        for i in self.instances:
            if i.client_id == client_id and i.alive():
                i.terminate()
                if not i.finish(STOP_GRACE_S):
                    self.failures.append(f"{client_id} did not stop within {STOP_GRACE_S:.0f}s: killed")
                    i.kill()
                    i.finish(5)

    def configure_groups(self) -> None:
        """Set group configs (a share group's reset and lock time) one by one; a refusal is logged.

        One at a time, so a broker that refuses one (an older dev cluster's bounds on the
        lock time) still takes the others; the truth says which were applied.
        """
        if not self.plan.group_configs:
            return
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

        admin = AdminClient({"bootstrap.servers": self.bootstrap, **client_logging(self.verbose, "admin")})
        for group, configs in self.plan.group_configs.items():
            for name, value in configs.items():
                entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
                resource = ConfigResource("GROUP", group, incremental_configs=[entry])
                try:
                    for future in admin.incremental_alter_configs([resource]).values():
                        future.result(timeout=30)
                    applied = True
                except KafkaException as e:
                    log(f"group {group}: could not set {name}={value}: {e.args[0].str() if e.args else e}")
                    applied = False
                self.truth.write("group_config", group=group, name=name, value=value, applied=applied)

    def crash(self, client_id: str) -> None:
        """SIGKILL a member: it leaves no LeaveGroup, so only its session timeout ends its membership.

        A consumer dies only once it has committed since the groups settled (waiting up to
        CRASH_WAIT_S), so what it leaves behind is what a crash looks like: offsets that freeze while
        its partitions fill up. A slow start (a broker still electing leaders) can delay that past the
        action's time; killed before, the member would look like one that never consumed."""
        for i in self.instances:
            if i.client_id == client_id:
                i.kill()
                i.finish(5)
        for m in self.members:
            if m.spec.client_id == client_id and m.process.is_alive():
                deadline = time.monotonic() + CRASH_WAIT_S
                while m.shared.last_commit_at.value < self.go_at.value and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.truth.write("crash", group=m.spec.group, client_id=client_id, pid=m.process.pid)
                m.crashed = True
                m.process.kill()
                m.process.join(5)

    def stop_children(self) -> None:
        """SIGTERM everyone (members close and leave), wait, then SIGKILL stragglers."""
        children = [m.process for m in self.members] + ([self.producer] if self.producer else [])
        for p in children:
            if p.is_alive():
                p.terminate()
        instances = [i for i in self.instances if i.alive()]
        for i in instances:
            i.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for p in children:
            p.join(max(0.1, deadline - time.monotonic()))
        for i in instances:
            if not i.finish(max(0.1, deadline - time.monotonic())):
                self.failures.append(f"{i.client_id} did not stop within {STOP_GRACE_S:.0f}s: killed")
                i.kill()
                i.finish(5)
        for p in children:
            if p.is_alive():
                self.failures.append(f"{p.name} did not stop within {STOP_GRACE_S:.0f}s: killed")
                p.kill()
                p.join(5)


def ensure_topics(bootstrap: str, topics: dict[str, int], verbose: bool = False, timeout_s: float = 30.0) -> None:
    """Create the sim's topics if missing (never touches others) and wait until they have leaders."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    if not topics:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap, **client_logging(verbose, "admin")})
    brokers = len(admin.list_topics(timeout=10).brokers)
    replication = min(3, brokers)
    futures = admin.create_topics([NewTopic(t, n, replication) for t, n in topics.items()])
    for future in futures.values():
        try:
            future.result()
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    deadline = time.monotonic() + timeout_s
    while True:
        md = admin.list_topics(timeout=10)
        ready = all(
            t in md.topics
            and md.topics[t].error is None
            and md.topics[t].partitions
            and all(p.leader >= 0 for p in md.topics[t].partitions.values())
            for t in topics
        )
        if ready:
            for t, n in topics.items():
                if len(md.topics[t].partitions) != n:
                    log(f"topic {t} already exists with {len(md.topics[t].partitions)} partitions, not {n}")
                    topics[t] = len(md.topics[t].partitions)
            return
        if time.monotonic() > deadline:
            raise KafkaUnavailable(f"topics {sorted(topics)} have no leaders after {timeout_s:.0f}s")
        time.sleep(0.2)


def log(message: str) -> None:
    print(f"sim: {message}", file=sys.stderr, flush=True)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()

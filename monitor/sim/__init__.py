"""Workload scenarios with real confluent-kafka producers and consumers (demo, tests, benchmarks).

`python -m monitor sim SCENARIO --bootstrap B [--duration S] [--truth FILE] [--suffix X]`

Live scenarios (each member in its own spawned process, each Kafka Streams instance
in its own JVM; Ctrl-C/SIGTERM stops them cleanly and no process is left behind) run
until stopped unless --duration is given; `crash` defaults to 30 s. `many-groups`
exits when its groups exist. `share` and `streams` run the two group types of
Kafka 4 (KIP-932, KIP-1071); `streams` needs the demo app `make setup` compiles.
The truth file (JSON lines, see monitor.sim.truth) says what really happened, so
tests can compare lagmon's view with it.
"""

from __future__ import annotations

import argparse
import signal
import threading
from dataclasses import replace

from monitor.config import DevelopmentSettings
from monitor.models import DevClusterError, KafkaUnavailable
from monitor.sim.runner import Plan, Runner, log
from monitor.sim.scenarios import BATCH_SCENARIOS, DEFAULT_DURATIONS_S, LIVE_SCENARIOS, SCENARIOS, Options, sim_name
from monitor.sim.truth import assignment_rounds, count_rebalances, current_assignment, read_truth, survivors

__all__ = [
    "SCENARIOS",
    "Options",
    "add_arguments",
    "assignment_rounds",
    "count_rebalances",
    "current_assignment",
    "main",
    "read_truth",
    "run",
    "sim_name",
    "survivors",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", choices=sorted(SCENARIOS), help="which workload to run")
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="S",
        help="stop after S seconds (default: until Ctrl-C; crash: 30)",
    )
    parser.add_argument("--truth", default=None, metavar="FILE", help="append JSON lines of what really happened")
    parser.add_argument(
        "--suffix",
        "--prefix",
        dest="suffix",
        default=None,
        help="isolate a run: names become sim-<scenario>-<suffix>-topic/-group",
    )
    parser.add_argument(
        "--stall-after",
        type=float,
        default=5.0,
        metavar="S",
        help="stalled: pause this long after the first assignment (default 5)",
    )
    parser.add_argument(
        "--recover-after",
        type=float,
        default=None,
        metavar="S",
        help="stalled: resume consuming after stalling this long (default: never)",
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=6000,
        help="classic members' session timeout (default 6000; static uses 10000)",
    )
    parser.add_argument("--groups", type=int, default=100, help="many-groups: how many groups (default 100)")
    parser.add_argument("--partitions", type=int, default=10, help="many-groups: topic partitions (default 10)")
    parser.add_argument(
        "--hold-until",
        default=None,
        metavar="FILE",
        help="once settled, start the scenario's actions (stops, crashes, joins) only when FILE exists",
    )
    parser.add_argument("--verbose", action="store_true", help="show librdkafka's logs")


def main(args: argparse.Namespace) -> int:
    options = Options(
        bootstrap=args.bootstrap,
        suffix=args.suffix,
        truth_path=args.truth,
        verbose=args.verbose,
        stall_after_s=args.stall_after,
        recover_after_s=args.recover_after,
        session_timeout_ms=args.session_timeout_ms,
        groups=args.groups,
        partitions=args.partitions,
        hold_path=args.hold_until,
    )
    return run(args.scenario, options, args.duration)


def run(
    scenario: str, options: Options, duration_s: float | None = None, stop_event: threading.Event | None = None
) -> int:
    """Run one scenario to its end (duration, SIGINT/SIGTERM, or `stop_event`); 0 if all went well."""
    from confluent_kafka import KafkaException

    if options.kafka_libs is None:
        options = replace(options, kafka_libs=DevelopmentSettings.from_env().kafka_libs)
    try:
        if scenario in BATCH_SCENARIOS:
            return BATCH_SCENARIOS[scenario](options)
        plan = LIVE_SCENARIOS[scenario](options)
        _check_streams_app(plan)
        if duration_s is None:
            duration_s = DEFAULT_DURATIONS_S.get(scenario)
        _announce(plan, duration_s)
        stop_event = stop_event or threading.Event()
        with _stop_on_signals(stop_event):
            return Runner(
                plan, options.bootstrap, options.truth_path, duration_s, options.verbose, stop_event, options.hold_path
            ).run()
    except KafkaException as e:
        raise KafkaUnavailable(f"sim {scenario}: {e.args[0].str() if e.args else e}") from e


def _check_streams_app(plan: Plan) -> None:
    """Say what to do when the Streams app is missing, instead of a JVM's ClassNotFound."""
    for spec in plan.instances:
        if not (spec.kafka_libs / "apps" / "LagmonStreams.class").exists():
            raise DevClusterError(f"the Kafka Streams demo app is not in {spec.kafka_libs}/apps: run `make setup`")


def _announce(plan: Plan, duration_s: float | None) -> None:
    rates = ", ".join(f"{t} {r:g}/s" for t, r in plan.rates.items())
    groups = sorted({m.group for m in plan.members} | {i.group for i in plan.instances})
    members = f"{len(plan.members)} members" + (f", {len(plan.instances)} Streams instances" if plan.instances else "")
    until = f"for {duration_s:g}s" if duration_s is not None else "until Ctrl-C"
    log(f"{plan.scenario}: producing {rates}; groups {', '.join(groups)}; {members}; {until}")


class _stop_on_signals:
    """SIGINT/SIGTERM set the stop event instead of killing us, so children get stopped cleanly."""

    def __init__(self, stop_event: threading.Event):
        self.stop_event = stop_event
        self.previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, lambda *_: self.stop_event.set())
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        return False

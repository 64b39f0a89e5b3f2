"""What the parent tells its children: producer and member specs, plus client settings.

Kept free of confluent_kafka so `import monitor.sim` (which the CLI does for every
command, to build its parser) stays fast; the children import the client.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProducerSpec:
    """Topics to produce to, with their rate (records/s) and partition count."""

    bootstrap: str
    rates: dict[str, float]
    partitions: dict[str, int]
    truth_path: str | None = None
    verbose: bool = False


@dataclass(frozen=True)
class MemberSpec:
    """One group member's behaviour; all times are seconds.

    protocol: "eager" / "cooperative" (classic group) or "consumer" (KIP-848).
    consume_rate: records/s, None = as fast as it can.
    cycle_up_s/cycle_down_s: after the scenario settles, leave after first_leave_s,
      stay away cycle_down_s, come back for cycle_up_s, and so on (churn, static restarts).
    stall_after_s: pause all partitions (keep polling, stop committing) this long
      after the first assignment; recover_after_s: resume after stalling this long.
    """

    bootstrap: str
    group: str
    topics: tuple[str, ...]
    client_id: str
    protocol: str = "eager"
    assignor: str = "range"
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    instance_id: str | None = None
    consume_rate: float | None = None
    first_leave_s: float | None = None
    cycle_up_s: float = 0.0
    cycle_down_s: float = 0.0
    stall_after_s: float | None = None
    recover_after_s: float | None = None
    truth_path: str | None = None
    verbose: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def cycles(self) -> bool:
        return self.first_leave_s is not None


class Shared:
    """Lock-free values a member publishes and the parent reads (safe to SIGKILL a writer)."""

    def __init__(self, ctx):
        self.assign_count = ctx.RawValue("i", 0)
        self.last_rebalance_at = ctx.RawValue("d", 0.0)


def consumer_config(spec: MemberSpec) -> dict:
    """librdkafka settings for a member; KIP-848 members must not set the classic knobs."""
    conf = {
        "bootstrap.servers": spec.bootstrap,
        "group.id": spec.group,
        "client.id": spec.client_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        **client_logging(spec.verbose, "consumer"),
        **spec.extra,
    }
    if spec.protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["partition.assignment.strategy"] = spec.assignor
        conf["session.timeout.ms"] = spec.session_timeout_ms
        conf["heartbeat.interval.ms"] = spec.heartbeat_interval_ms
    if spec.instance_id:
        conf["group.instance.id"] = spec.instance_id
    return conf


def client_logging(verbose: bool, name: str) -> dict:
    """librdkafka logs to stderr by default; the sim's clients stay silent unless --verbose."""
    logger = logging.getLogger(f"lagmon.sim.librdkafka.{name}")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler(sys.stderr) if verbose else logging.NullHandler())
    logger.setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    return {"logger": logger, "log_level": 6 if verbose else 0}
